"""Env ids as a person types them: a registered id, or ``module:EnvId`` (gymnasium's spelling for
an env that its own package registers when imported).

Every command resolves a typed id here, so an unknown one reads the same everywhere: one line
naming the closest registered id, matched without regard to case and then to version
(``Toolqa`` -> ``ToolQA-v0``, ``ALFWorld-v1`` -> ``ALFWorld-v0``). The keywords an id's env takes
(:func:`env_keywords`) let a command refuse a misspelt one the same way before making the env, and
:func:`make_error_text` says what ``gym.make`` refused without gymnasium's wrapping.

>>> registered_env_id("ToolQA-v0")
'ToolQA-v0'
>>> closest_env_id("toolqa-v2")
'ToolQA-v0'
"""

from __future__ import annotations

import difflib
import importlib
import inspect
import re
from collections.abc import Iterable
from typing import Any

import gymnasium as gym
from gymnasium.envs.registration import load_env_creator

from agentgym.envs import arguments

__all__ = ["UnknownEnvId", "closest_env_id", "env_creator", "env_keywords", "keyword_problem", "make_error_text",
           "registered_env_id", "require_registered"]

LIST_HINT = "`agentgym list` shows the env ids"
_VERSIONED = re.compile(r"(?P<name>.+)-v(?P<version>\d+)")


class UnknownEnvId(ValueError):
    """An env id that is not registered; the message names the closest one that is."""


def env_creator(env_id: str) -> Any:
    """The class (or function) ``env_id`` is registered with, its entry point loaded."""
    entry = gym.spec(env_id).entry_point
    return entry if callable(entry) else load_env_creator(entry)


def env_keywords(env_id: str) -> list[str] | None:
    """The keyword arguments ``gym.make(env_id, ...)`` accepts, following ``**kwargs`` up the env
    class's bases; None when some callable takes any keyword (nothing can be refused up front)."""
    creator = env_creator(env_id)
    if isinstance(creator, type) and hasattr(creator, "part_keywords"):
        return arguments.accepted_keywords(creator)  # an AgentEnv: its constructors' keywords and its parts'
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


def keyword_problem(env_id: str, kwargs: Iterable[str]) -> str | None:
    """What is wrong with the keyword names ``kwargs`` for ``env_id`` (the first one it does not
    take, with the closest it does, else the list of those it takes), or None.

    >>> keyword_problem("ToolQA-v0", ["max_turn"])
    "ToolQA-v0 has no argument 'max_turn'; did you mean 'max_turns'?"
    """
    accepted = env_keywords(env_id)
    unknown = [k for k in kwargs if accepted is not None and k not in accepted]
    if not unknown:
        return None
    close = difflib.get_close_matches(unknown[0], accepted, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else f" (it takes: {', '.join(sorted(set(accepted)))})"
    return f"{env_id} has no argument {unknown[0]!r}{hint}"


def make_error_text(error: BaseException) -> str:
    """What ``gym.make`` refused, in one line: gymnasium appends the creator's whole kwargs (system
    prompts included) to a ``TypeError``, which says nothing the caller does not know."""
    text = str(error).split(" was raised from the environment creator")[0]
    return " ".join(text.split()) or type(error).__name__


def _name_and_version(env_id: str) -> tuple[str, int | None]:
    match = _VERSIONED.fullmatch(env_id)
    return (match["name"], int(match["version"])) if match else (env_id, None)


def _suggestable(env_id: str) -> bool:
    """Not one of gymnasium's own envs (CartPole, MuJoCo...): none of them is a text env for agents."""
    entry = gym.registry[env_id].entry_point
    module = entry.split(":")[0] if isinstance(entry, str) else getattr(entry, "__module__", "") or ""
    return not module.startswith("gymnasium.")


def closest_env_id(env_id: str, ids: Iterable[str] | None = None) -> str | None:
    """The registered id closest to ``env_id`` (``ids``: the ids to choose from, default the
    registry's, gymnasium's own envs left out), or None when none is close.

    The name is matched first without regard to case, then by spelling; among that name's
    versions, the one nearest the version typed (a tie, or no version typed: the latest)."""
    if ids is None:
        ids = [i for i in gym.registry if _suggestable(i)]
    versions: dict[str, list[tuple[int, str]]] = {}
    for candidate in ids:
        name, version = _name_and_version(candidate)
        versions.setdefault(name.lower(), []).append((-1 if version is None else version, candidate))
    name, version = _name_and_version(env_id.strip())
    key = name.lower()
    if key not in versions:
        close = difflib.get_close_matches(key, list(versions), n=1)
        if not close:
            return None
        key = close[0]
    if version is None:
        return max(versions[key])[1]
    return min(versions[key], key=lambda v: (abs(v[0] - version), -v[0]))[1]


def _unknown(env_id: str, lead: str) -> UnknownEnvId:
    close = closest_env_id(env_id)
    hint = f"did you mean {close!r}? " if close is not None else ""
    return UnknownEnvId(f"{lead}; {hint}{LIST_HINT}")


def require_registered(env_id: Any) -> str:
    """``env_id`` when it is registered, else :class:`UnknownEnvId` naming the closest registered
    id. Imports nothing: for ids read from data as well as typed ones."""
    if not isinstance(env_id, str) or not env_id:
        raise ValueError(f"an env id must be a non-empty string, got {env_id!r}")
    if env_id not in gym.registry:
        raise _unknown(env_id, f"unknown env id {env_id!r}")
    return env_id


def registered_env_id(env_id: str) -> str:
    """The id ``env_id`` is registered under, for an id a user typed: ``module:EnvId`` (gymnasium's
    spelling for an env registered by its own package) imports ``module`` and gives ``EnvId``.

    An id that is not registered raises :class:`UnknownEnvId` naming the closest one that is.
    Only for what a person typed: an id read from data (a task set, a checkpoint's record) never
    imports anything, so such data cannot choose code to run (:func:`require_registered`)."""
    if not isinstance(env_id, str) or not env_id:
        raise ValueError(f"an env id must be a non-empty string, got {env_id!r}")
    module, sep, name = env_id.rpartition(":")
    if not sep:
        return require_registered(env_id)
    if not module or not name:
        raise ValueError(f"{env_id!r} is not an env id; give EnvId or module:EnvId")
    try:
        importlib.import_module(module)
    except ImportError as e:
        raise ValueError(f"cannot import {module!r}, the module {env_id!r} names to register its env: "
                         f"{type(e).__name__}: {e}") from None
    if name not in gym.registry:
        raise _unknown(name, f"importing {module!r} did not register {name!r}")
    return name
