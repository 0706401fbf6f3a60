"""Every task of an env's split, enumerated by ``task_id`` (never sampled by seed).

- ToolQA: every question of the split (built-in, or a user's Search-R1/FlashRAG file); the task
  type is the question kind, or for real data the data set it comes from (``data_source``), so
  the board scores each data set on its own.
- ALFWorld: every playable game of the split (official data or generated; levels included); the
  task type is ALFWorld's.
- ScienceWorld: every variation of the split for each of the env's tasks (the engine's own
  train/dev/test lists; levels pick tasks as :mod:`agentgym.envs.scienceworld.levels` says); the
  task type is the task.

Tasks are ordered round-robin over task types (each type's tasks in id order), so ``limit=n``
keeps the first ``n`` and still covers every type evenly.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym

FAMILIES = ("toolqa", "alfworld", "scienceworld")


@dataclass
class TaskRef:
    """One task of the board: what to reset with, and how to group its results."""

    task_id: str
    task_type: str
    options: dict[str, Any] = field(default_factory=dict)
    """The reset options that start exactly this task."""


def family(env_id: str) -> str:
    """``toolqa``, ``alfworld`` or ``scienceworld``: which enumerator an env id needs."""
    entry = str(gym.spec(env_id).entry_point)
    for name in FAMILIES:
        if f".{name}." in entry:
            return name
    raise ValueError(f"the leaderboard cannot enumerate the tasks of {env_id} ({entry}); "
                     f"it knows the {', '.join(FAMILIES)} envs")


def enumerate_tasks(env_id: str, split: str, env_kwargs: dict[str, Any] | None = None,
                    select: Sequence[str] | None = None, limit: int | None = None) -> list[TaskRef]:
    """The tasks of ``env_id`` on ``split``; ``select`` keeps those whose id or type matches one
    of the glob patterns; ``limit`` keeps the first ``limit`` (round-robin over types)."""
    env_kwargs = dict(env_kwargs or {})
    if select and len(select) == 1 and _is_task_set(select[0]):  # a folder from `agentgym export-tasks`
        from agentgym.integrations.tasksets import load_tasks

        tasks = load_tasks(select[0]).refs_for(env_id, split)
        return tasks[:limit] if limit is not None else tasks
    kind = family(env_id)
    tasks = {"toolqa": _toolqa, "alfworld": _alfworld, "scienceworld": _scienceworld}[kind](env_id, split, env_kwargs)
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


def _is_task_set(path: str) -> bool:
    return os.path.isfile(os.path.join(path, "environment.yaml"))


def round_robin(tasks: list[TaskRef]) -> list[TaskRef]:
    by_type: dict[str, list[TaskRef]] = {}
    for t in sorted(tasks, key=lambda t: (t.task_type, t.task_id)):
        by_type.setdefault(t.task_type, []).append(t)
    out = []
    for k in range(max((len(v) for v in by_type.values()), default=0)):
        out += [v[k] for v in by_type.values() if k < len(v)]
    return out


def _toolqa(env_id: str, split: str, env_kwargs: dict) -> list[TaskRef]:
    env = gym.make(env_id, **{**env_kwargs, "split": split})
    try:
        inner = env.unwrapped
        questions = [q for q in inner.data.questions(split) if q.kind in inner.question_kinds]
        return [TaskRef(q.id, q.source or q.kind, {"task_id": q.id, "split": split}) for q in questions]
    finally:
        env.close()


def _alfworld(env_id: str, split: str, env_kwargs: dict) -> list[TaskRef]:
    env = gym.make(env_id, **{**env_kwargs, "split": split, "expert": False})
    try:
        inner = env.unwrapped
        return [TaskRef(g.task_id, g.task_type, {"task_id": g.task_id, "split": inner.split})
                for g in inner.games_in(split)]
    finally:
        env.close()


def _scienceworld(env_id: str, split: str, env_kwargs: dict) -> list[TaskRef]:
    # From the task tables alone: no JVM is started to list tasks.
    from agentgym.envs.scienceworld.levels import drawable_tasks
    from agentgym.envs.scienceworld.tasks import TASK_NAMES, canonical_split, canonical_task, split_variations

    task = {**gym.spec(env_id).kwargs, **env_kwargs}.get("task")
    if task is None:
        tasks = TASK_NAMES
    else:
        tasks = (canonical_task(task),) if isinstance(task, str) else tuple(canonical_task(t) for t in task)
    split = canonical_split(split)
    out = []
    for name in drawable_tasks(tasks, split, explicit=task is not None):
        out += [TaskRef(f"{name}/{v}", name, {"task_id": f"{name}/{v}", "split": split})
                for v in split_variations(name, split)]
    return out
