"""Evaluation levels L0 / L1 / L2 for ScienceWorld, and the tasks training never draws.

The GCD paper (after RLVMR) evaluates at three levels; for ScienceWorld, L2 holds out the last
task of each of the ten topics (1-4, 2-3, 3-4, 4-4, 5-2, 6-3, 7-3, 8-2, 9-3, 10-2):

- ``L0``: seen tasks: the ``train`` variations of the twenty seen tasks.
- ``L1``: unseen instances of seen tasks: their ``test`` variations.
- ``L2``: unseen tasks: the ``test`` variations of the ten held-out tasks.

``split="train"`` draws only seen tasks, so a trainer on the default split never plays an L2 task.
Tasks named explicitly are played as asked: ``task="find-animal"`` (or ``ScienceWorld-FindAnimal-v0``,
or ``options={"task_id": ...}``) plays that task on any split, because the user chose it.
``split="train_all"`` draws from every task, ScienceWorld's own training setting.
"""

from __future__ import annotations

from collections.abc import Sequence

# The split names and the variations each plays are the tasks' data (tasks.py); this module adds
# which tasks each level holds. Imports go one way, levels -> tasks.
from agentgym.envs.scienceworld.tasks import LEVELS, TASKS, TRAIN_ALL, VARIATION_SPLIT, variation_split  # noqa: F401


def _held_out() -> tuple[str, ...]:
    last: dict[str, str] = {}
    for name, number, _ in TASKS:  # TASKS is in task-number order, so the last one seen wins
        last[number.split("-")[0]] = name
    return tuple(last.values())


HELD_OUT_TASKS: tuple[str, ...] = _held_out()
"""The L2 tasks: the last task of each topic."""

def drawable_tasks(tasks: Sequence[str], split: str, explicit: bool) -> tuple[str, ...]:
    """The tasks a ``reset`` may draw from on ``split``, out of the env's ``tasks``.

    ``explicit``: the env was made for these tasks by name (they are then kept on ``train``)."""
    if split == "L2":
        kept = tuple(t for t in tasks if t in HELD_OUT_TASKS)
    elif split in ("L0", "L1") or (split == "train" and not explicit):
        kept = tuple(t for t in tasks if t not in HELD_OUT_TASKS)
    else:
        kept = tuple(tasks)
    if not kept:
        raise ValueError(f"none of the env's tasks {list(tasks)} belongs to split {split!r} "
                         f"(L2 tasks: {list(HELD_OUT_TASKS)})")
    return kept
