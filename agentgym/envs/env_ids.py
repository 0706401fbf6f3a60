"""Env ids as a person types them: a registered id, or ``module:EnvId`` (gymnasium's spelling for
an env that its own package registers when imported).

>>> registered_env_id("ToolQA-v0")
'ToolQA-v0'
"""

from __future__ import annotations

import importlib
from typing import Any

import gymnasium as gym
from gymnasium.envs.registration import load_env_creator

__all__ = ["env_creator", "registered_env_id"]


def env_creator(env_id: str) -> Any:
    """The class (or function) ``env_id`` is registered with, its entry point loaded."""
    entry = gym.spec(env_id).entry_point
    return entry if callable(entry) else load_env_creator(entry)


def registered_env_id(env_id: str) -> str:
    """The id ``env_id`` is registered under, for an id a user typed: ``module:EnvId`` (gymnasium's
    spelling for an env registered by its own package) imports ``module`` and gives ``EnvId``.

    Only for what a person typed: an id read from data (a task set, a checkpoint's record) never
    imports anything, so such data cannot choose code to run."""
    if not isinstance(env_id, str) or not env_id:
        raise ValueError(f"an env id must be a non-empty string, got {env_id!r}")
    module, sep, name = env_id.rpartition(":")
    if sep:
        if not module or not name:
            raise ValueError(f"{env_id!r} is not an env id; give EnvId or module:EnvId")
        try:
            importlib.import_module(module)
        except ImportError as e:
            raise ValueError(f"cannot import {module!r}, the module {env_id!r} names to register its env: "
                             f"{type(e).__name__}: {e}") from None
        if name not in gym.registry:
            raise ValueError(f"importing {module!r} did not register {name!r}")
    return name
