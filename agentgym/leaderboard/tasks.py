"""Every task of an env's split, enumerated by ``task_id`` (never sampled by seed).

The env lists them (:meth:`agentgym.envs.base.AgentEnv.task_refs`):

- ToolQA: every question of the split (built-in, or a user's Search-R1/FlashRAG file); the task
  type is the question kind, or for real data the data set it comes from (``data_source``), so
  the board scores each data set on its own.
- ALFWorld: every playable game of the split (official data or generated; levels included); the
  task type is ALFWorld's.
- ScienceWorld: every variation of the split for each of the env's tasks (the engine's own
  train/dev/test lists; levels pick tasks as :mod:`agentgym.envs.scienceworld.levels` says); the
  task type is the task.
- A user's own env: whatever its ``task_refs(split)`` lists (an ``AgentEnv`` subclass overrides
  it); on the command line it is named ``module:EnvId``, gymnasium's spelling, whose module
  registers it when imported.

Tasks are ordered round-robin over task types (each type's tasks in id order), so ``limit=n``
keeps the first ``n`` and still covers every type evenly.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence
from typing import Any

import gymnasium as gym

from agentgym.envs.task_refs import TaskRef
from agentgym.envs.task_set_reading import is_task_set, load_tasks

__all__ = ["FAMILIES", "OTHER", "enumerate_tasks", "env_module", "env_task_refs", "family", "round_robin"]

FAMILIES = ("toolqa", "alfworld", "scienceworld")
OTHER = "other"
"""The family of every env that is not one of agentgym's own (a user's)."""


def family(env_id: str) -> str:
    """``toolqa``, ``alfworld`` or ``scienceworld`` for agentgym's envs, :data:`OTHER` for any other
    registered env (the board picks its backend by it, a task set's card its tags and license)."""
    entry = gym.spec(env_id).entry_point
    if isinstance(entry, str) and entry.startswith("agentgym."):
        for name in FAMILIES:
            if f".{name}." in entry:
                return name
    return OTHER


def env_module(env_id: str) -> str | None:
    """The module to import before ``gym.make(env_id)`` for a user's env (its entry point's, whose
    import registers it, as ``--envs module:EnvId`` does); None for agentgym's own envs."""
    entry = gym.spec(env_id).entry_point
    if not isinstance(entry, str) or ":" not in entry or entry.startswith("agentgym."):
        return None
    return entry.partition(":")[0]


def enumerate_tasks(env_id: str, split: str, env_kwargs: dict[str, Any] | None = None,
                    select: Sequence[str] | None = None, limit: int | None = None) -> list[TaskRef]:
    """The tasks of ``env_id`` on ``split``; ``select`` keeps those whose id or type matches one
    of the glob patterns; ``limit`` keeps the first ``limit`` (round-robin over types)."""
    env_kwargs = dict(env_kwargs or {})
    if select and len(select) == 1 and is_task_set(select[0]):  # a folder from `agentgym export-tasks`
        tasks = load_tasks(select[0]).refs_for(env_id, split)
        return tasks[:limit] if limit is not None else tasks
    tasks = env_task_refs(env_id, split, env_kwargs)
    if select:
        tasks = [t for t in tasks if any(fnmatch.fnmatchcase(t.task_id, p) or fnmatch.fnmatchcase(t.task_type, p)
                                         for p in select)]
    tasks = round_robin(tasks)
    if limit is not None:
        if limit < 1:
            raise ValueError(f"limit must be >= 1, got {limit}")
        tasks = tasks[:limit]
    if not tasks:
        raise ValueError(f"no tasks of {env_id} on split {split!r} match {list(select or [])}")
    return tasks


def env_task_refs(env_id: str, split: str, env_kwargs: dict[str, Any]) -> list[TaskRef]:
    """Every task of ``env_id`` on ``split``, as the env lists them (its expert off: listing needs none)."""
    env = gym.make(env_id, **{**env_kwargs, "split": split, "expert": False})
    try:
        task_refs = getattr(env.unwrapped, "task_refs", None)
        refs = task_refs(split) if callable(task_refs) else None
    finally:
        env.close()
    if refs is None:
        raise ValueError(f"{env_id} does not list its tasks, so they cannot be enumerated: its env class needs a "
                         "task_refs(split) method (agentgym.envs.base.AgentEnv.task_refs says what it returns)")
    return list(refs)


def round_robin(tasks: list[TaskRef]) -> list[TaskRef]:
    by_type: dict[str, list[TaskRef]] = {}
    for t in sorted(tasks, key=lambda t: (t.task_type, t.task_id)):
        by_type.setdefault(t.task_type, []).append(t)
    out = []
    for k in range(max((len(v) for v in by_type.values()), default=0)):
        out += [v[k] for v in by_type.values() if k < len(v)]
    return out

