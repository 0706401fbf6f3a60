"""The vectorized interface trainers consume: ``make_vec`` and ``AgentVectorEnv``, and the options
of its backends (docs/vector.md)."""

from gymnasium.vector import AutoresetMode

from agentgym.vector.backend import VectorEnvClosedError
from agentgym.vector.make import make_vec, vector_entry_point
from agentgym.vector.options import (
                                     BACKENDS,
                                     BackendOptions,
                                     ProcessOptions,
                                     RayOptions,
                                     SyncOptions,
                                     WorkerOptions,
                                     backend_options,
)
from agentgym.vector.vector_env import AgentVectorEnv, ReadyBatch

__all__ = ["make_vec", "AgentVectorEnv", "ReadyBatch", "AutoresetMode", "BACKENDS", "vector_entry_point",
           "VectorEnvClosedError", "BackendOptions", "SyncOptions", "ProcessOptions", "RayOptions",
           "WorkerOptions", "backend_options"]
