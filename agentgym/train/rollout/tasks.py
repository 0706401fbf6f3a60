"""Which task each group plays: the RL task stream, kept apart from the cold start's tasks.

A run's tasks come from one seeded, resumable stream. When the env can list its tasks
(:meth:`agentgym.envs.base.AgentEnv.task_ids`), the cold start takes the first
``cold_start_episodes`` tasks of one seeded permutation, and the RL stream walks the *other*
tasks in permutations of its own (a new order every pass), each group asked for by ``task_id``.
So the tasks SFT taught by example are never the tasks RL trains on, by construction, and
training-batch success cannot be the cold start's memory. An env that cannot list its tasks
falls back to seed streams kept apart by a stream id; tasks may then repeat across the two, and
the trainer counts how many RL groups did.

>>> stream = TaskStream(run_seed=0, task_ids=[f"t{i}" for i in range(6)], exclude=["t0", "t3"])
>>> sorted({stream.request(p).options["task_id"] for p in range(8)})
['t1', 't2', 't4', 't5']
>>> stream.request(5) == TaskStream(0, [f"t{i}" for i in range(6)], ["t0", "t3"]).request(5)
True
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from agentgym.train.rollout.episodes import GroupRequest

STREAM_RL = 0
STREAM_COLD_START = 1
_STREAM_ORDER = 2


def task_seed(run_seed: int, position: int, stream: int = STREAM_RL) -> int:
    """The env seed of the ``position``-th task of a run's stream (deterministic, resumable).

    >>> task_seed(0, 3) == task_seed(0, 3) != task_seed(0, 3, STREAM_COLD_START)
    True
    """
    entropy = [int(run_seed), int(position)] if stream == STREAM_RL else [int(run_seed), int(position), int(stream)]
    return int(np.random.SeedSequence(entropy).generate_state(1)[0])


def _permutation(run_seed: int, stream: int, epoch: int, n: int) -> np.ndarray:
    return np.random.default_rng([int(run_seed), int(stream), int(epoch)]).permutation(n)


def cold_start_tasks(task_ids: Sequence[str], run_seed: int, count: int) -> list[str]:
    """The tasks a cold start of ``count`` episodes plays: the first of a seeded permutation.

    >>> cold_start_tasks(["a", "b", "c", "d"], 0, 2) == cold_start_tasks(["a", "b", "c", "d"], 0, 2)
    True
    """
    if count > len(task_ids):
        raise ValueError(f"a cold start of {count} distinct tasks needs {count} tasks; the split has {len(task_ids)}")
    order = _permutation(run_seed, STREAM_COLD_START, 0, len(task_ids))
    return [task_ids[i] for i in order[:count]]


class TaskStream:
    """The RL stream: ``request(position)`` is the group request of the run's position-th task.

    Args:
        run_seed: the run's seed.
        task_ids: every task of the training split, or None when the env cannot list them.
        exclude: tasks RL must not train on (the cold start's).
    """

    def __init__(self, run_seed: int, task_ids: Sequence[str] | None = None, exclude: Sequence[str] = ()):
        self.run_seed = int(run_seed)
        self.excluded = frozenset(exclude)
        self.pool = None if task_ids is None else [t for t in task_ids if t not in self.excluded]
        if self.pool is not None and not self.pool:
            raise ValueError(f"every one of the {len(task_ids)} training tasks is a cold-start task: nothing is left "
                             "for RL; lower --cold-start.num-episodes")
        self._order = lru_cache(maxsize=2)(self._epoch_order)

    def _epoch_order(self, epoch: int) -> np.ndarray:
        return _permutation(self.run_seed, _STREAM_ORDER, epoch, len(self.pool))

    def request(self, position: int, tag: str = "batch") -> GroupRequest:
        seed = task_seed(self.run_seed, position)
        if self.pool is None:
            return GroupRequest(seed, {}, tag)
        epoch, k = divmod(int(position), len(self.pool))
        return GroupRequest(seed, {"task_id": self.pool[int(self._order(epoch)[k])]}, tag)

    def replay_warning(self, positions: int, what: str) -> str | None:
        """A warning when ``positions`` stream positions (a run's steps x groups) pass the pool, so
        that tasks repeat and training-batch success stops measuring tasks new to the run; else None.

        >>> TaskStream(0, [f"t{i}" for i in range(6)], ["t0", "t3"]).replay_warning(10, "ToolQA-v0 [train]")[:62]
        'warning: ToolQA-v0 [train] leaves RL 4 tasks (6 listed, 2 the '
        >>> TaskStream(0, [f"t{i}" for i in range(6)]).replay_warning(6, "ToolQA-v0 [train]") is None
        True
        """
        if self.pool is None or positions <= len(self.pool):
            return None
        listed = len(self.pool) + len(self.excluded)
        return (f"warning: {what} leaves RL {len(self.pool)} tasks ({listed} listed, {len(self.excluded)} the cold "
                f"start's), and this run asks for {positions}: each is played about {positions / len(self.pool):.1f} "
                f"times, so training-batch success measures tasks the run has trained on, not new ones. Give the env "
                f"more tasks (ALFWorld: data_path='generated:N', docs/envs/alfworld.md) or the cold start fewer")

    @property
    def by_task_id(self) -> bool:
        """Whether tasks are chosen by id (disjoint from the cold start by construction)."""
        return self.pool is not None


class StepTasks:
    """The tasks one training step plays on one rank: its share of the batch, then the extra tasks
    the extensions ask for (VSPO's resampling, DAPO's oversampling).

    The batch takes the ``num_groups`` positions from ``position`` on, rank r the r-th slice of
    them; extra tasks come after, strided by rank so ranks never share one (one process: the next
    positions in order). :meth:`end` is the next step's position, past the most extra tasks any rank
    took, so the stream reads the same whatever the rank count and a resumed run goes on from it.

    >>> tasks = StepTasks(TaskStream(0), position=10, num_groups=4, rank=1, world_size=2)
    >>> [r.seed == task_seed(0, p) for r, p in zip(tasks.batch(), (12, 13))]
    [True, True]
    >>> [r.seed == task_seed(0, p) for r, p in zip(tasks.extra(2), (15, 17))]
    [True, True]
    >>> tasks.end(most_taken=3)
    20
    """

    def __init__(self, stream: TaskStream, position: int, num_groups: int, rank: int = 0, world_size: int = 1):
        self.stream, self.rank, self.world_size = stream, int(rank), int(world_size)
        self.position, self.num_groups = int(position), int(num_groups)
        self.taken = 0
        """extra tasks this rank took this step"""

    def batch(self) -> list[GroupRequest]:
        """This rank's groups of the step's batch."""
        local = self.num_groups // self.world_size
        first = self.position + self.rank * local
        return [self.stream.request(first + i) for i in range(local)]

    def extra(self, n: int, tag: str = "batch") -> list[GroupRequest]:
        """The next ``n`` extra tasks of this rank (an extension's ``ctx.next_requests``)."""
        start = self.position + self.num_groups
        out = [self.stream.request(start + (self.taken + i) * self.world_size + self.rank, tag) for i in range(n)]
        self.taken += n
        return out

    def end(self, most_taken: int) -> int:
        """The next step's stream position, given the most extra tasks any rank took this step."""
        return self.position + self.num_groups + int(most_taken) * self.world_size
