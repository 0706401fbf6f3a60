"""``agentgym.make_vec``: the one way trainers get a batch of envs.

``gym.make_vec("ToolQA-v0", num_envs=8, group_size=4, backend="process")`` reaches the same code:
every agentgym id is registered with ``vector_entry_point="agentgym.vector.make:<id>"``, which this
module resolves (module ``__getattr__``) to ``make_vec`` bound to that id.
"""

from __future__ import annotations

import copy
import functools
from typing import Any, Sequence

import gymnasium as gym
from gymnasium.vector import AutoresetMode

from agentgym.vector.host import DEFAULT_STICKY_CALLS
from agentgym.vector.vector_env import DEFAULT_RESET_TIMEOUT, AgentVectorEnv


def make_vec(
    env_id: str,
    num_envs: int = 1,
    group_size: int = 1,
    backend: str = "sync",
    *,
    autoreset_mode: AutoresetMode | str = AutoresetMode.DISABLED,
    step_timeout: float | None = 300.0,
    reset_timeout: float | None = DEFAULT_RESET_TIMEOUT,
    startup_timeout: float | None = 600.0,
    envs_per_worker: int = 1,
    mp_context: str | None = None,
    ray_actor_options: dict[str, Any] | None = None,
    ray_init_kwargs: dict[str, Any] | None = None,
    sticky_calls: Sequence[str] = DEFAULT_STICKY_CALLS,
    **env_kwargs: Any,
) -> AgentVectorEnv:
    """Make ``num_envs`` copies of a registered env behind one ``gymnasium.vector.VectorEnv``.

    Envs ``[g*group_size, (g+1)*group_size)`` form group ``g`` and start the same task at every
    reset. ``backend`` is ``"sync"``, ``"process"`` or ``"ray"``; the keyword arguments before
    ``**env_kwargs`` configure the vector env (see :class:`AgentVectorEnv`), everything else goes to
    each env, as in ``gym.make``.

    >>> import agentgym
    >>> vec = agentgym.make_vec("ToolQA-v0", num_envs=4, group_size=2)   # doctest: +SKIP
    >>> obs, infos = vec.reset(seed=0)                                    # doctest: +SKIP
    >>> infos["group_key"][0] == infos["group_key"][1]                    # doctest: +SKIP
    True
    """
    spec = gym.spec(env_id)
    vec = AgentVectorEnv(
        env_id, num_envs, group_size=group_size, backend=backend, env_kwargs=env_kwargs,
        autoreset_mode=autoreset_mode, step_timeout=step_timeout, reset_timeout=reset_timeout,
        startup_timeout=startup_timeout,
        envs_per_worker=envs_per_worker, mp_context=mp_context, ray_actor_options=ray_actor_options,
        ray_init_kwargs=ray_init_kwargs, sticky_calls=sticky_calls,
    )
    vec_spec = copy.deepcopy(spec)
    vec_spec.kwargs = {**spec.kwargs, **env_kwargs, "num_envs": num_envs, "group_size": group_size,
                       "backend": backend}
    vec.spec = vec_spec
    return vec


def vector_entry_point(env_id: str) -> str:
    """The ``vector_entry_point`` string to register ``env_id`` with."""
    return f"{__name__}:{env_id}"


def __getattr__(name: str):
    # gymnasium resolves "agentgym.vector.make:<env id>" with getattr(module, "<env id>").
    if name in gym.registry:
        return functools.partial(make_vec, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
