"""A run's env settings checked before anything is built: the keywords of ``--env-kwargs``, the
env made with them once, and the splits the run draws its tasks from.

Without it a misspelt keyword or split surfaces minutes into a run (after the model is loaded and
a cold start trained) as a stack trace from deep inside the env. Here it is one line naming the
flag (:class:`agentgym.train.base.errors.ConfigError`). An env made for the check is closed at once;
envs are cheap to make (engines start at the first reset), and a check that passed is remembered
for the process, so validating a config twice makes its env once.
"""

from __future__ import annotations

import difflib
import inspect
import json
from collections.abc import Mapping, Sequence
from typing import Any

import gymnasium as gym

import agentgym.envs  # noqa: F401  registers the envs
from agentgym.envs.env_ids import env_creator
from agentgym.train.base.errors import ConfigError

_passed: set[str] = set()
# What a failed make can raise for a bad setting; anything else is a bug and keeps its traceback.
_SETTING_ERRORS: tuple[type[BaseException], ...] = (ValueError, TypeError, KeyError, ImportError, OSError)


def env_keywords(env_id: str) -> list[str] | None:
    """The keyword arguments ``gym.make(env_id, ...)`` accepts, following ``**kwargs`` up the env
    class's bases; None when some callable takes any keyword (nothing can be refused up front)."""
    creator = env_creator(env_id)
    chain = [c for c in creator.__mro__ if "__init__" in vars(c)] if isinstance(creator, type) else [creator]
    names: list[str] = []
    for target in chain:
        if target is object:
            return names
        params = list(inspect.signature(target.__init__ if isinstance(target, type) else target).parameters.values())
        names += [p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and p.name != "self"]
        if not any(p.kind == p.VAR_KEYWORD for p in params):
            return names
    return None


def _one_line(error: BaseException) -> str:
    # gymnasium appends the creator's whole kwargs (system prompts included) to a TypeError
    text = str(error).split(" was raised from the environment creator")[0]
    return " ".join(text.split()) or type(error).__name__


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
    accepted = env_keywords(env_id)
    if accepted is not None:
        unknown = [k for k in kwargs if k not in accepted]
        if unknown:
            close = difflib.get_close_matches(unknown[0], accepted, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else f" (it takes: {', '.join(sorted(set(accepted)))})"
            raise ConfigError(f"{kwargs_flag}: {env_id} has no argument {unknown[0]!r}{hint}")
    try:
        env = gym.make(env_id, **kwargs)
    except gym.error.Error as e:  # a missing extra, a deprecated id
        raise ConfigError(f"--env-id {env_id}: {_one_line(e)}") from None
    except _SETTING_ERRORS as e:
        raise ConfigError(f"{kwargs_flag}: {env_id} refused its arguments: {_one_line(e)}") from None
    try:
        lister = getattr(env.unwrapped, "task_ids", None)  # agentgym's envs have it; any gym env may run
        for flag, names in splits.items() if lister is not None else ():
            for split in [names] if isinstance(names, str) else names:
                try:
                    lister(split)
                except _SETTING_ERRORS as e:
                    raise ConfigError(f"{flag} {split!r}: {_one_line(e)}") from None
    finally:
        env.close()
    if key is not None:
        _passed.add(key)
