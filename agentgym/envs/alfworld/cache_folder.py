"""Where ALFWorld keeps what it makes on a machine: generated game sets and game translations.

``$AGENTGYM_CACHE/alfworld``, else ``~/.cache/agentgym/alfworld``; :mod:`agentgym.envs.alfworld.data`
keeps generated sets there and :mod:`agentgym.envs.alfworld.translation_cache` its ``translations/``.
"""

from __future__ import annotations

import os


def cache_root() -> str:
    return os.path.join(os.path.expanduser(os.environ.get("AGENTGYM_CACHE") or "~/.cache/agentgym"), "alfworld")
