"""The task set reader, :mod:`agentgym.envs.task_set_reading`, under the name it had here.

Envs read sets (``tasks=``), so the reader lives in the envs layer; this module is that module
itself (not a copy), so what is set on one is set on the other.
"""

import sys

from agentgym.envs import task_set_reading

sys.modules[__name__] = task_set_reading
