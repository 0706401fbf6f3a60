"""Checks of the arguments every agentgym env shares, each failing with one line that names the
argument and what it may be.

A value that Python would coerce without complaint is the dangerous kind: ``max_turns=1.5`` became a
one-turn limit, ``prs_stage=-5`` silently paid stage 0's reward, and ``prs_stage=nan`` passed the
reset only to raise inside the first step. So the checks are by type and range, not by coercion.
"""

from __future__ import annotations

import difflib
import inspect
import json
import math
from collections.abc import Iterable
from numbers import Integral, Real
from typing import Any


def positive_int(name: str, value: Any) -> int:
    """``value`` as an int if it is a whole number >= 1 (a bool is not), else a ValueError.

    >>> positive_int("max_turns", 5)
    5
    >>> positive_int("max_turns", 1.5)
    Traceback (most recent call last):
    ...
    ValueError: max_turns must be a positive int (1, 2, ...), got 1.5
    """
    if isinstance(value, bool) or not isinstance(value, Integral) or value < 1:
        raise ValueError(f"{name} must be a positive int (1, 2, ...), got {value!r}")
    return int(value)


def int_in_range(name: str, value: Any, low: int, high: int) -> int:
    """``value`` as an int if it is a whole number in ``[low, high]`` (a bool is not), else a ValueError."""
    if isinstance(value, bool) or not isinstance(value, Integral) or not low <= value <= high:
        raise ValueError(f"{name} must be an int from {low} to {high}, got {value!r}")
    return int(value)


def seconds(name: str, value: Any) -> float:
    """``value`` as a float if it is a finite number >= 0 (a bool is not), else a ValueError.

    >>> seconds("search_latency", 0.2)
    0.2
    >>> seconds("search_latency", float("inf"))
    Traceback (most recent call last):
    ...
    ValueError: search_latency must be a finite number of seconds >= 0, got inf
    """
    if isinstance(value, bool) or not isinstance(value, Real) or not math.isfinite(value) or value < 0:
        raise ValueError(f"{name} must be a finite number of seconds >= 0, got {value!r}")
    return float(value)


def prs_stage(value: Any, where: str = "prs_stage") -> Real | None:
    """A PRS stage: None (the final stage, full reward) or a finite number >= 0, fractions
    interpolating between stages; a stage past the env's last means the last.

    >>> prs_stage(1.5), prs_stage(None)
    (1.5, None)
    >>> prs_stage(float("nan"))
    Traceback (most recent call last):
    ...
    ValueError: prs_stage must be None (the final stage) or a finite number >= 0, got nan
    """
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, Real) or not math.isfinite(value) or value < 0:
        raise ValueError(f"{where} must be None (the final stage) or a finite number >= 0, got {value!r}")
    return value


def constrained_choice(value: Any, action_format: str) -> bool:
    """``constrained_choice``: a bool, True only with ``action_format="choice"`` (the replies it
    lists are the numbers of the choices), else a ValueError.

    >>> constrained_choice(True, "choice")
    True
    >>> constrained_choice(True, "text")
    Traceback (most recent call last):
    ...
    ValueError: constrained_choice=True needs action_format='choice' (the replies it allows are the numbers of the listed actions), got action_format='text'
    """
    if not isinstance(value, bool):
        raise ValueError(f"constrained_choice must be True or False, got {value!r}")
    if value and action_format != "choice":
        raise ValueError("constrained_choice=True needs action_format='choice' (the replies it allows are the "
                         f"numbers of the listed actions), got action_format={action_format!r}")
    return value


def scored_actions(value: Any, constrained: bool) -> bool:
    """``scored_actions``: a bool, never with ``constrained_choice=True`` (a turn's replies are
    either sampled token by token within a list or scored whole), else a ValueError.

    >>> scored_actions(True, False)
    True
    >>> scored_actions(True, True)
    Traceback (most recent call last):
    ...
    ValueError: scored_actions=True and constrained_choice=True exclude each other: a policy either samples a listed number token by token or scores each listed action whole
    """
    if not isinstance(value, bool):
        raise ValueError(f"scored_actions must be True or False, got {value!r}")
    if value and constrained:
        raise ValueError("scored_actions=True and constrained_choice=True exclude each other: a policy either "
                         "samples a listed number token by token or scores each listed action whole")
    return value


def accepted_keywords(env_cls: type) -> list[str]:
    """Every keyword argument ``env_cls(...)`` takes, its base classes' included."""
    names: list[str] = []
    for cls in env_cls.__mro__:
        init = cls.__dict__.get("__init__")
        if init is None:
            continue
        for param in inspect.signature(init).parameters.values():
            if param.kind in (param.POSITIONAL_OR_KEYWORD, param.KEYWORD_ONLY) and param.name != "self":
                if param.name not in names:
                    names.append(param.name)
    part_keywords = getattr(env_cls, "part_keywords", None)  # AgentEnv's parts (agentgym.envs.parts)
    names += [name for name in (part_keywords() if part_keywords else ()) if name not in names]
    return names


def unknown_keywords_error(env_cls: type, unknown: Iterable[str]) -> TypeError:
    """The error for keyword arguments no env of ``env_cls`` takes: it names them, the closest
    known spelling, and the keywords the env does take."""
    unknown = sorted(unknown)
    known = accepted_keywords(env_cls)
    hints = [f"{name!r} (did you mean {close[0]!r}?)" if (close := difflib.get_close_matches(name, known, 1))
             else repr(name) for name in unknown]
    noun = "argument" if len(unknown) == 1 else "arguments"
    return TypeError(f"{env_cls.__name__} got unknown keyword {noun} {', '.join(hints)}; "
                     f"it takes: {', '.join(known)}")


def json_object(text: str, name: str = "env kwargs") -> dict[str, Any]:
    """``text`` read as a JSON object (env keyword arguments from a command line or a config), or a
    ``ValueError`` naming ``name`` and what is wrong.

    >>> json_object('{"max_turns": 3}')
    {'max_turns': 3}
    >>> json_object("[3]", "--env-kwargs")
    Traceback (most recent call last):
    ...
    ValueError: --env-kwargs must be a JSON object, got '[3]'
    """
    try:
        value = json.loads(text)
    except ValueError as e:
        raise ValueError(f"{name} is not valid JSON ({e}): {text[:200]!r}") from None
    if not isinstance(value, dict):
        raise ValueError(f"{name} must be a JSON object, got {text[:200]!r}")
    return value
