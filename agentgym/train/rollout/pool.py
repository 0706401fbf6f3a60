"""Per-task success over a run: how each task of the training pool has been played so far.

A run on a fixed pool of tasks (``--split L0`` on ALFWorld, any stream that replays its tasks)
can learn some tasks and not others, and group-relative methods learn nothing from a task every
episode of a group solves, or none does. :class:`TaskSuccess` keeps, per task id, the episodes
played, those solved, and the last group's share solved; its :meth:`~TaskSuccess.metrics` are the
``pool/*`` metrics of docs/trainers.md, so a run that learns nothing shows whether its tasks were
all solved, all failed, or split.

>>> record = TaskSuccess()
>>> record.update([("a", True), ("a", True), ("b", False), ("b", True)])
>>> record.update([("b", False), ("b", False)])
>>> record.tasks["b"]
[4, 1, 2, 0]
>>> {k: round(v, 3) for k, v in record.metrics(pool_size=4).items()}
{'pool/played_frac': 0.5, 'pool/success': 0.5, 'pool/solved_frac': 0.5, 'pool/always_frac': 0.5, 'pool/never_frac': 0.5}
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

PLAYS, SOLVED, LAST_PLAYS, LAST_SOLVED = range(4)


class TaskSuccess:
    """Episodes played and solved per task id, and each task's last step's share solved."""

    def __init__(self, tasks: dict[str, list[int]] | None = None):
        self.tasks: dict[str, list[int]] = {} if tasks is None else tasks
        """task id -> [episodes played, episodes solved, played in its last step, solved in it];
        the dict given is updated in place (a run's :attr:`~agentgym.train.base.state.RunState.tasks`)"""

    def update(self, results: Iterable[tuple[str, bool]]) -> None:
        """Add one step's ``(task_id, success)`` pairs; a task's "last" counts become this step's."""
        step: dict[str, list[int]] = {}
        for task_id, success in results:
            counts = step.setdefault(str(task_id), [0, 0])
            counts[0] += 1
            counts[1] += bool(success)
        for task_id, (plays, solved) in step.items():
            row = self.tasks.setdefault(task_id, [0, 0, 0, 0])
            row[PLAYS] += plays
            row[SOLVED] += solved
            row[LAST_PLAYS], row[LAST_SOLVED] = plays, solved

    def metrics(self, pool_size: int | None = None) -> dict[str, float]:
        """``pool/played_frac`` (tasks played at least once, of ``pool_size``), and over the tasks
        played: ``pool/success`` (mean last share solved), ``pool/solved_frac`` (last step solved
        at least one), ``pool/always_frac`` / ``pool/never_frac`` (last step solved all / none:
        the tasks whose groups tie)."""
        if not self.tasks:
            return {}
        last = np.array([row[LAST_SOLVED] / row[LAST_PLAYS] for row in self.tasks.values()])
        out = {"pool/played_frac": len(self.tasks) / pool_size} if pool_size else {}
        out.update({"pool/success": float(last.mean()), "pool/solved_frac": float(np.mean(last > 0)),
                    "pool/always_frac": float(np.mean(last == 1)), "pool/never_frac": float(np.mean(last == 0))})
        return out

    def table(self) -> dict[str, dict[str, int]]:
        """Every task's counts by name (``RUN_DIR/task_success.json``), task ids sorted."""
        return {task_id: {"played": row[PLAYS], "solved": row[SOLVED], "last_played": row[LAST_PLAYS],
                          "last_solved": row[LAST_SOLVED]} for task_id, row in sorted(self.tasks.items())}
