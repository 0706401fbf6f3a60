"""A run's env settings checked before anything is built: the keywords of ``--env-kwargs``, the
env made with them once, and the splits the run draws its tasks from.

Without it a misspelt keyword or split surfaces minutes into a run (after the model is loaded and
a cold start trained) as a stack trace from deep inside the env. Here it is one line naming the
flag (:class:`agentgym.train.base.errors.ConfigError`). An env made for the check is closed at once;
envs are cheap to make (engines start at the first reset), and a check that passed is remembered
for the process, so validating a config twice makes its env once.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import gymnasium as gym

import agentgym.envs  # noqa: F401  registers the envs
from agentgym.envs.env_ids import env_keywords, keyword_problem, make_error_text
from agentgym.train.base.errors import ConfigError

__all__ = ["check_env", "env_keywords"]  # env_keywords lives with the env ids; kept importable here

_passed: set[str] = set()
# What a failed make can raise for a bad setting; anything else is a bug and keeps its traceback.
_SETTING_ERRORS: tuple[type[BaseException], ...] = (ValueError, TypeError, KeyError, ImportError, OSError)


def check_env(env_id: str, kwargs: Mapping[str, Any], splits: Mapping[str, str | Sequence[str]],
              kwargs_flag: str = "--env-kwargs") -> None:
    """Raise :class:`~agentgym.train.base.errors.ConfigError` when ``env_id`` cannot be made with
    ``kwargs``, or one of ``splits`` (flag -> split name, or the names a flag lists) is not a split
    it has. Envs that cannot
    list their tasks (``task_ids`` returns None) have their splits checked at the first reset."""
    try:
        key = json.dumps([env_id, kwargs, sorted(splits.items())], sort_keys=True)
    except (TypeError, ValueError):  # kwargs given in code that JSON cannot spell: check every time
        key = None
    if key is not None and key in _passed:
        return
    problem = keyword_problem(env_id, kwargs)
    if problem is not None:
        raise ConfigError(f"{kwargs_flag}: {problem}")
    try:
        env = gym.make(env_id, **kwargs)
    except gym.error.Error as e:  # a missing extra, a deprecated id
        raise ConfigError(f"--env-id {env_id}: {make_error_text(e)}") from None
    except _SETTING_ERRORS as e:
        raise ConfigError(f"{kwargs_flag}: {env_id} refused its arguments: {make_error_text(e)}") from None
    try:
        lister = getattr(env.unwrapped, "task_ids", None)  # agentgym's envs have it; any gym env may run
        for flag, names in splits.items() if lister is not None else ():
            for split in [names] if isinstance(names, str) else names:
                try:
                    lister(split)
                except _SETTING_ERRORS as e:
                    raise ConfigError(f"{flag} {split!r}: {make_error_text(e)}") from None
    finally:
        env.close()
    if key is not None:
        _passed.add(key)
