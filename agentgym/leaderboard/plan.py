"""Planning a board: the blocks (agent x env split) to play, checked before anything is played.

- Options: ``repeats``, ``limit`` and ``num_envs`` are at least 1, the agent timeout a positive
  number of seconds (``inf``: none).
- Envs: each id is registered, its class is an :class:`~agentgym.envs.base.AgentEnv` (whose
  ``task_refs`` the board enumerates), and ``--env-kwargs`` make it (it is made once, with the first
  of the requested splits that exists).
- Names: two agents whose rows would share a file are refused (see :mod:`~agentgym.leaderboard.store`).
- Agents: an agent's own ``env_kwargs`` that no env can be made with (not a dict, an unknown
  keyword, a bad value) cost that agent its rows on that env, reported in :attr:`Plan.skipped`;
  a ``stamps()`` that raises leaves ``stamps_error`` in its rows' stamps. Neither stops the board.
- Splits an env lacks are reported and skipped; a board left with nothing to play is refused.

Every refusal is a :class:`~agentgym.leaderboard.errors.BoardError` with one line naming the problem.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from agentgym.envs.base import AgentEnv
from agentgym.envs.env_ids import env_creator, require_registered
from agentgym.envs.task_refs import task_list_hash
from agentgym.envs.task_set_reading import is_task_set, load_tasks
from agentgym.leaderboard.agents import BOARD_KWARGS, SCORING_KWARGS
from agentgym.leaderboard.calls import describe
from agentgym.leaderboard.errors import BoardError
from agentgym.leaderboard.specs import check_spec, split_name
from agentgym.leaderboard.stamps import code_stamps
from agentgym.leaderboard.store import NAMING, Block, file_part
from agentgym.leaderboard.tasks import OTHER, enumerate_tasks, family

_UNEXPECTED = re.compile(r"unexpected keyword argument '([^']+)'")


@dataclass
class Plan:
    """What a board will play."""

    pairs: list[tuple[Block, Any]] = field(default_factory=list)
    """(block, agent) in playing order."""
    skipped: list[tuple[str, str, str]] = field(default_factory=list)
    """(agent name, env id, why) for each agent left out of an env."""


def check_options(repeats: int, limit: int | None, num_envs: int, agent_timeout: float | None) -> None:
    if not isinstance(repeats, int) or repeats < 1:
        raise BoardError(f"--repeats must be an integer >= 1, got {repeats!r}")
    if limit is not None and (not isinstance(limit, int) or limit < 1):
        raise BoardError(f"--limit must be an integer >= 1, got {limit!r}")
    if not isinstance(num_envs, int) or num_envs < 1:
        raise BoardError(f"--num-envs must be an integer >= 1, got {num_envs!r}")
    if agent_timeout is not None and not (isinstance(agent_timeout, (int, float)) and agent_timeout > 0):
        raise BoardError(f"--agent-timeout must be a positive number of seconds (inf: no limit), got {agent_timeout!r}")


def check_env_ids(env_ids) -> None:
    if not env_ids:
        raise BoardError("no env to play: name one or more with --envs")
    for env_id in env_ids:
        try:
            require_registered(env_id)
        except ValueError as e:  # the closest registered id, as every command says it
            raise BoardError(f"--envs: {e}") from None
        if family(env_id) == OTHER:
            try:
                env_class = env_creator(env_id)
            except Exception as e:  # noqa: BLE001  an entry point that does not import
                raise BoardError(f"{env_id}: its entry point does not load: {describe(e)}") from None
            if not (isinstance(env_class, type) and issubclass(env_class, AgentEnv)):
                raise BoardError(f"{env_id} ({env_class!r}) is not an agentgym env: the board plays envs built on "
                                 "agentgym.envs.base.AgentEnv that list their tasks (task_refs)")


def check_agent_names(specs) -> None:
    """Every agent spec names an agent, and no two names share a file."""
    if not specs:
        raise BoardError("no agent to play: name one or more with --agents")
    for spec in specs:
        check_spec(spec)
    names = [split_name(spec)[0] for spec in specs]
    if len(set(names)) != len(names):
        raise BoardError(f"two agents share a name in {names}; name them with NAME=AGENT")
    seen: dict[str, str] = {}
    for name in names:
        other = seen.setdefault(file_part(name).casefold(), name)
        if other != name:
            raise BoardError(f"agents {other!r} and {name!r} would share the file name {file_part(name)!r} ({NAMING})")


def env_kwargs_for(env_id: str, env_kwargs: dict, env_ids) -> dict:
    """``--env-kwargs`` is one object for every env, or an object keyed by env id."""
    if env_kwargs and set(env_kwargs) <= set(env_ids):
        return dict(env_kwargs.get(env_id, {}))
    return dict(env_kwargs)


def _make_error(env_id: str, kwargs: dict) -> Exception | None:
    """Why ``env_id`` cannot be made with ``kwargs``, or None when it can."""
    import gymnasium as gym

    try:
        gym.make(env_id, **kwargs).close()
    except Exception as e:  # noqa: BLE001  reported by the caller
        return e
    return None


def _why(env_id: str, kwargs: dict, error: Exception, source: str) -> str:
    unknown = _UNEXPECTED.search(str(error))
    if isinstance(error, TypeError) and unknown:
        return f"{env_id} takes no keyword argument {unknown.group(1)!r} ({source})"
    # gymnasium appends "was raised from the environment creator ... with kwargs (...)": we say it shorter
    message = describe(error).split(" was raised from the environment creator")[0]
    return f"{env_id} cannot be made with {source} {json.dumps(kwargs, default=str)}: {message}"


def usable_split(env_id: str, kwargs: dict, splits, source: str = "--env-kwargs") -> str | None:
    """The first split ``env_id`` can be made on with ``kwargs`` (None: the env can be made, on no
    requested split; those are reported when their tasks are listed); BoardError if it cannot be made."""
    first = None
    for split in splits:
        error = _make_error(env_id, {**kwargs, "split": split})
        if error is None:
            return split
        first = first or error
    if first is None or _make_error(env_id, kwargs) is None:
        return None
    raise BoardError(_why(env_id, kwargs, first, source))


def agent_env_kwargs(agent) -> dict:
    """The agent's own env keyword arguments (TypeError if they are not a dict)."""
    extra = getattr(agent, "env_kwargs", None) or {}
    if not isinstance(extra, Mapping):
        raise TypeError(f"env_kwargs must be a dict, got {type(extra).__name__} {str(extra)[:100]!r}")
    return dict(extra)


def agent_stamps(agent, log) -> dict:
    try:
        return dict(agent.stamps())
    except Exception as e:  # noqa: BLE001  a broken stamps() is reported in the row, not fatal
        log(f"warning: agent {agent.name!r}: stamps() failed ({describe(e)}); its rows carry stamps_error")
        return {"stamps_error": describe(e)}


def _agent_error(agent, env_id: str, kwargs: dict, split: str | None) -> str | None:
    """Why the agent's envs cannot be made, or None."""
    try:
        extra = agent_env_kwargs(agent)
    except Exception as e:  # noqa: BLE001  a broken attribute costs this agent only
        return describe(e)
    if not extra:
        return None
    scoring = sorted(SCORING_KWARGS & set(extra))
    if scoring:
        return (f"its env_kwargs set {scoring[0]!r}, which decides how episodes are scored: the board sets it "
                f"(--env-kwargs), the same for every agent")
    merged = {**kwargs, **extra, **({"split": split} if split is not None else {})}
    error = _make_error(env_id, merged)
    return None if error is None else _why(env_id, extra, error, "its env_kwargs")


def _trained_env_kwargs(agent, env_id: str) -> dict:
    """The env settings ``agent`` was trained with on ``env_id`` (a checkpoint's record), or {},
    less those the board chooses (:data:`BOARD_KWARGS`: which tasks, and how they are scored)."""
    method = getattr(agent, "trained_env_kwargs", None)
    trained = method(env_id) if callable(method) else {}
    if not isinstance(trained, dict):
        raise TypeError(f"expected a dict, got {type(trained).__name__}")
    return {k: v for k, v in trained.items() if k not in BOARD_KWARGS}


def plan_blocks(agents, env_ids, splits, env_kwargs: dict, repeats: int = 1, select=None,
                limit: int | None = None, log=print) -> Plan:
    """The (block, agent) pairs for every agent on every env split that exists."""
    plan = Plan()
    stamps = code_stamps()
    missing: list[str] = []
    played = 0
    agent_stamp = {id(agent): agent_stamps(agent, log) for agent in agents}
    task_set = load_tasks(select[0]) if select and len(select) == 1 and is_task_set(select[0]) else None
    for env_id in env_ids:
        kwargs = env_kwargs_for(env_id, env_kwargs, env_ids)
        if task_set is not None and task_set.env_id == env_id and "tasks" not in kwargs:
            # a set's tasks play on the set's own env settings (its games, its data), read through the
            # data allow-list, as gym.make(env_id, tasks=DIR) plays them; --env-kwargs may still name tasks
            kwargs["tasks"] = select[0]
        split_ok = usable_split(env_id, kwargs, splits)
        playing = []
        trained: dict[int, dict] = {}
        for agent in agents:
            try:
                trained[id(agent)] = _trained_env_kwargs(agent, env_id)
                why = _agent_error(agent, env_id, {**trained[id(agent)], **kwargs}, split_ok)
            except Exception as e:  # noqa: BLE001  a broken agent costs only its own rows
                why = f"its trained_env_kwargs({env_id!r}) failed: {type(e).__name__}: {e}"
            if why is None:
                playing.append(agent)
            else:
                log(f"skipping agent {agent.name!r} on {env_id}: {why}")
                plan.skipped.append((agent.name, env_id, why))
        for split in splits:
            try:
                tasks = enumerate_tasks(env_id, split, kwargs, select, limit)
            except ValueError as e:
                missing.append(f"{env_id} {split}: {e}")
                continue
            played += 1
            task_dicts = [{"task_id": t.task_id, "task_type": t.task_type, "options": t.options} for t in tasks]
            canonical = tasks[0].options.get("split", split)
            for agent in playing:
                # a checkpoint plays with the env settings it was trained with, under --env-kwargs
                played_kwargs = {**trained[id(agent)], **kwargs, "split": canonical}
                block = Block(agent.name, env_id, split, task_dicts, repeats, played_kwargs,
                              {**stamps, **agent_stamp[id(agent)],
                               "task_list_hash": task_list_hash(t.task_id for t in tasks)})
                plan.pairs.append((block, agent))
    if not played:
        raise BoardError(f"nothing to play: {missing[0] if missing else 'no env split'}"
                         + (f" (and {len(missing) - 1} more like it)" if len(missing) > 1 else ""))
    for line in missing:
        log(f"skipping {line}")
    return plan
