"""The ``tasks=`` argument every agentgym env takes: play exactly the tasks of a task set.

    agentgym export-tasks ToolQA-v0 --split test --out tasks/toolqa-test --limit 20
    env = gym.make("ToolQA-v0", tasks="tasks/toolqa-test")

The set's keyword arguments (its ``environment.yaml``) are data: only those that shape the task
are taken (:mod:`agentgym.envs.data_settings`; a set that asks for any other is refused). They go
under the caller's, so the env is the one
the set was exported from with whatever the caller changes (``expert=True``, ``max_turns=...``). A
reset with ``options={"task_id": ...}`` starts that task of the set (a task outside it is refused);
a reset without one starts a task drawn with the reset seed, so the same seed is the same task and
the same episode as the plain env gives on that task with that seed. Other options (``prs_stage``,
``split``) pass through as without a set.

The argument is read where the env is constructed (:class:`TakesTaskSet`, the metaclass of
:class:`~agentgym.envs.base.AgentEnv`) rather than by a wrapper, so every way an env is made takes
it: ``gym.make``, ``gym.make_vec`` and its worker processes, ``agentgym serve --env-kwargs
'{"tasks": "DIR"}'`` and the trainers' ``--env-kwargs``. A metaclass, because merging the set's
keyword arguments under the caller's needs the call itself: a constructor sees its defaults and the
caller's values alike.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np

from agentgym import __version__
from agentgym.envs.data_settings import check_data_env_kwargs
from agentgym.envs.env_ids import env_creator
from agentgym.envs.task_set_reading import TaskSet, load_tasks
from agentgym.extras import require


def load_task_set(tasks: Any, split: Any = None) -> TaskSet:
    """``tasks`` as a loaded task set: a folder ``agentgym export-tasks`` wrote, or a ``TaskSet``.
    A set of several splits is narrowed to ``split`` (the env's ``split=``) when it holds a split of
    that name."""
    if isinstance(tasks, (str, os.PathLike)):
        require(["pyarrow", "yaml"], "datasets", "tasks= (a task set folder)")
        tasks = load_tasks(os.fspath(tasks))
    if not isinstance(tasks, TaskSet):
        raise ValueError(f"tasks must be a task set folder (from agentgym export-tasks) or a TaskSet, got {tasks!r}")
    if isinstance(split, str) and len(tasks.splits) > 1 and split in tasks.splits:
        return TaskSet(tasks.env_id, tasks.env_kwargs, split, list(tasks.splits[split]), tasks.spec, tasks.path)
    return tasks


def env_class_of(task_set: TaskSet) -> type:
    """The env class the set's env id is registered with (task_set_reading registered the ids)."""
    if task_set.env_id not in gym.registry:
        raise ValueError(f"the task set at {task_set.where} holds tasks of {task_set.env_id!r}, "
                         "which is not a registered env id here "
                         "(a user's env: import the module that registers it first; the set's card names it)")
    return env_creator(task_set.env_id)


class TakesTaskSet(type):
    """``Env(..., tasks=DIR)``: loads the set, makes the env with the set's keyword arguments under
    the call's (``tasks`` then holds the loaded set) and checks that it has every task of the set."""

    def __call__(cls, *args: Any, **kwargs: Any):
        if kwargs.get("tasks") is None:
            return super().__call__(*args, **kwargs)
        task_set = load_task_set(kwargs["tasks"], kwargs.get("split"))
        set_class = env_class_of(task_set)
        if not (isinstance(set_class, type) and issubclass(cls, set_class)):
            raise ValueError(f"the task set at {task_set.where} holds {task_set.env_id} tasks, which {cls.__name__} "
                             f"does not play: make it with gym.make({task_set.env_id!r}, tasks=...)")
        # the set's id's registered kwargs too, so that ToolQAEnv(tasks=...) of a ToolQA-LongForm-v0
        # set is long-form as gym.make("ToolQA-LongForm-v0", tasks=...) is
        # the set's kwargs are data: only those that shape the task are taken (data_settings.py)
        set_kwargs = check_data_env_kwargs(task_set.env_kwargs, f"the task set at {task_set.where}",
                                           folder=task_set.path, user_keys=kwargs)
        merged = {**gym.spec(task_set.env_id).kwargs, **set_kwargs, **kwargs, "tasks": task_set}
        env = super().__call__(*args, **merged)
        try:
            check_env_has_tasks(env, task_set)
        except BaseException:
            env.close()
            raise
        return env


def check_env_has_tasks(env: Any, task_set: TaskSet) -> None:
    """A ``ValueError`` when ``env`` lists its tasks and some task of the set is not one of them:
    a set made by a version of agentgym whose tasks differ, or arguments that leave tasks out."""
    splits: dict[str, list[str]] = {}
    for task in task_set.tasks:
        splits.setdefault(str(task.options.get("split", task_set.split)), []).append(task.task_id)
    for split, wanted in splits.items():
        listed = env._split_task_ids(split)
        if listed is None:
            return
        have = set(listed)
        missing = [t for t in wanted if t not in have]
        if missing:
            raise ValueError(
                f"{len(missing)} of the {len(task_set.tasks)} tasks of the set at {task_set.where} "
                f"(e.g. {missing[0]!r}) are not tasks of {type(env).__name__} on split {split!r} with the arguments "
                f"given; the set holds {task_set.env_id} tasks made by agentgym "
                f"{task_set.spec.get('agentgym_version')} (this is {__version__}): make it with "
                f"gym.make({task_set.env_id!r}, tasks=...) and arguments that keep its tasks, or export it again "
                "with this agentgym")


def set_task_ids(task_set: TaskSet, split: str | None,
                 split_task_ids: Callable[[str], list[str] | None]) -> list[str]:
    """The set's task ids; with ``split``, those that are tasks of it (``split_task_ids`` lists a
    split's), or a ``ValueError`` when none are: a run asked for a split the set does not hold."""
    if split is None:
        return task_set.task_ids
    listed = split_task_ids(split)
    if listed is None:
        return task_set.task_ids
    have = set(listed)
    kept = [t for t in task_set.task_ids if t in have]
    if not kept:
        raise ValueError(f"the task set at {task_set.where} holds no tasks of split {split!r}, "
                         f"only {task_set.split!r} ones")
    return kept


class TaskDraws:
    """Which task of a set a reset starts. Draws come from a generator of their own, seeded by the
    reset seed, so the env's ``np_random`` draws as it would without a set."""

    def __init__(self, task_set: TaskSet):
        if not task_set.tasks:
            raise ValueError(f"the task set at {task_set.where} holds no tasks")
        self.task_set = task_set
        # a task id is unique within a split, not across them (ALFWorld's trials)
        self._by_id: dict[str, list[tuple[str, Any]]] = {}
        for name, refs in task_set.splits.items():
            for t in refs:
                self._by_id.setdefault(t.task_id, []).append((name, t))
        self._draws = np.random.default_rng()

    def _task(self, task_id: str, split: Any) -> Any:
        """The set's task ``task_id``; of split ``split`` (the set's name or the env's) when the id is
        in several of the set's splits."""
        found = self._by_id.get(task_id, [])
        if len(found) > 1:
            found = [(name, t) for name, t in found if split is not None and split in (name, t.options.get("split"))]
            if len(found) != 1:
                names = ", ".join(name for name, _ in self._by_id[task_id])
                raise ValueError(f"task {task_id!r} is in splits {names} of the task set at {self.task_set.where}: "
                                 f"reset with options={{'task_id': {task_id!r}, 'split': NAME}}")
        if not found:
            raise ValueError(f"task {task_id!r} is not in the task set at {self.task_set.where}")
        return found[0][1]

    def options(self, seed: int | None, options: dict[str, Any]) -> dict[str, Any]:
        """The reset options that start the chosen task, with the caller's ``options`` on top."""
        if seed is not None:
            self._draws = np.random.default_rng(seed)
        if "task_id" in options:
            task = self._task(str(options["task_id"]), options.get("split"))
        else:
            tasks = self.task_set.tasks
            task = tasks[int(self._draws.integers(len(tasks)))]
        return {**task.options, **options}
