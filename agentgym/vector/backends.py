"""Which backend each options object builds: the one place that knows every backend class.

The options (:mod:`agentgym.vector.options`) only describe a backend, and each backend takes its
options object, so the table that joins the two sits above both. Importing it imports no Ray:
the Ray backend does when it is built.
"""

from __future__ import annotations

from agentgym.vector.backend import Backend, SyncBackend
from agentgym.vector.host import EnvFactory
from agentgym.vector.options import BackendOptions
from agentgym.vector.process import ProcessBackend
from agentgym.vector.ray_backend import RayBackend

BACKEND_CLASSES: dict[str, type[Backend]] = {"sync": SyncBackend, "process": ProcessBackend, "ray": RayBackend}
"""Options name (``SyncOptions.name`` ...) -> the backend those options build."""


def build_backend(options: BackendOptions, factory: EnvFactory, num_envs: int) -> Backend:
    """The backend ``options`` describe, holding ``num_envs`` envs made by ``factory``."""
    if options.name not in BACKEND_CLASSES:
        raise ValueError(f"no backend is built from {type(options).__name__} (name {options.name!r}); "
                         f"backends: {sorted(BACKEND_CLASSES)}")
    return BACKEND_CLASSES[options.name](factory, num_envs, options)
