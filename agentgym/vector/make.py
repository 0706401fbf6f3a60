"""``agentgym.make_vec``: the one way trainers get a batch of envs.

``gym.make_vec("ToolQA-v0", num_envs=8, group_size=4, backend="process")`` reaches the same code:
every agentgym id is registered with ``vector_entry_point="agentgym.vector.make:<id>"``, which this
module resolves (module ``__getattr__``) to ``make_vec`` bound to that id.
"""

from __future__ import annotations

import copy
import functools
from typing import Any

import gymnasium as gym
from gymnasium.vector import AutoresetMode

from agentgym.vector.options import KEYWORDS, BackendOptions, backend_options
from agentgym.vector.vector_env import AgentVectorEnv


def make_vec(
    env_id: str,
    num_envs: int = 1,
    group_size: int = 1,
    backend: str | BackendOptions = "sync",
    *,
    autoreset_mode: AutoresetMode | str = AutoresetMode.DISABLED,
    **kwargs: Any,
) -> AgentVectorEnv:
    """Make ``num_envs`` copies of a registered env behind one ``gymnasium.vector.VectorEnv``.

    Envs ``[g*group_size, (g+1)*group_size)`` form group ``g`` and start the same task at every
    reset. ``backend`` is a :class:`~agentgym.vector.options.SyncOptions`,
    :class:`~agentgym.vector.options.ProcessOptions` or :class:`~agentgym.vector.options.RayOptions`,
    or a backend name (``"sync"``, ``"process"``, ``"ray"``) with its options as keywords
    (``envs_per_worker``, ``step_timeout``, ``reset_timeout``, ``startup_timeout``, ``mp_context``,
    ``ray_actor_options``, ``ray_init_kwargs``, ``sticky_calls``). Every other keyword goes to each
    env, as in ``gym.make``.

    >>> import agentgym
    >>> from agentgym.vector import ProcessOptions
    >>> vec = agentgym.make_vec("ToolQA-v0", num_envs=4, group_size=2,
    ...                         backend=ProcessOptions(step_timeout=60))  # doctest: +SKIP
    >>> obs, infos = vec.reset(seed=0)                                    # doctest: +SKIP
    >>> infos["group_key"][0] == infos["group_key"][1]                    # doctest: +SKIP
    True
    """
    spec = gym.spec(env_id)
    keywords = {k: kwargs.pop(k) for k in list(kwargs) if k in KEYWORDS}
    env_kwargs = kwargs
    options = backend_options(backend, **keywords)
    vec = AgentVectorEnv(env_id, num_envs, group_size=group_size, backend=options, env_kwargs=env_kwargs,
                         autoreset_mode=autoreset_mode)
    vec_spec = copy.deepcopy(spec)
    # The resolved options object: the spec makes the same vector env again, every option included.
    vec_spec.kwargs = {**spec.kwargs, **env_kwargs, "num_envs": num_envs, "group_size": group_size,
                       "backend": options}
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
