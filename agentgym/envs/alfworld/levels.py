"""Evaluation levels L0 / L1 / L2 for ALFWorld, and the task types training never sees.

The GCD paper evaluates generalization at three levels (it takes them from RLVMR):

- ``L0``: seen tasks. Games the agent trained on: every tenth game of each seen task type in
  ``train`` (the first, the eleventh, ...), so the level is a fixed, type-balanced subset.
- ``L1``: unseen instances of seen task types. The seen-type games of ``valid_seen`` and
  ``valid_unseen``, which training never plays.
- ``L2``: unseen task types. The games of the held-out types, ``pick_cool_then_place_in_recep``
  and ``pick_two_obj_and_place``, in ``valid_seen`` and ``valid_unseen``.

So that L2 measures what it says, ``split="train"`` leaves the held-out types out: a trainer on
the default split never plays one. ``split="train_all"`` is ALFWorld's full training split, all
six types, for runs that want ALFWorld's own setting rather than the levels.

A level's ``task_id`` names the split its game comes from (``valid_seen/<task folder>/<trial>``),
because the two validation splits may hold trials of the same name.
"""

from __future__ import annotations

from dataclasses import replace

from agentgym.envs.alfworld.tasks import TASK_TYPES

HELD_OUT_TYPES = ("pick_cool_then_place_in_recep", "pick_two_obj_and_place")
"""Task types of level L2, never played on ``split="train"``."""
SEEN_TYPES = tuple(t for t in TASK_TYPES if t not in HELD_OUT_TYPES)
LEVELS = ("L0", "L1", "L2")
TRAIN_ALL = "train_all"
"""The official ``train`` folder with all six task types."""
L0_EVERY = 10
"""L0 keeps every ``L0_EVERY``-th train game of each seen type, starting with the first."""

# level -> (source splits, task types it keeps)
_SOURCES = {
    "L0": (("train",), SEEN_TYPES),
    "L1": (("valid_seen", "valid_unseen"), SEEN_TYPES),
    "L2": (("valid_seen", "valid_unseen"), HELD_OUT_TYPES),
}


def source_splits(split: str) -> tuple[str, ...]:
    """The on-disk splits whose games make up ``split`` (a canonical split, level or ``train_all``)."""
    if split in _SOURCES:
        return _SOURCES[split][0]
    return ("train",) if split == TRAIN_ALL else (split,)


def select_games(split: str, games_by_source: dict[str, list], l0_every: int = L0_EVERY) -> list:
    """The games of ``split`` from the on-disk splits' games (``GameRecord`` lists, sorted by id).

    ``train`` drops the held-out types; ``train_all`` and the validation splits keep everything;
    levels pick as the module docstring says, L0 every ``l0_every``-th train game of each seen type
    (a larger stride gives a smaller pool of training games to replay and measure)."""
    if split == "train":
        return [g for g in games_by_source["train"] if g.task_type not in HELD_OUT_TYPES]
    if split == TRAIN_ALL:
        return list(games_by_source["train"])
    if split not in _SOURCES:
        return list(games_by_source[split])
    sources, types = _SOURCES[split]
    if split == "L0":
        out = []
        for task_type in types:
            of_type = [g for g in games_by_source["train"] if g.task_type == task_type]
            out += of_type[::l0_every]
        return sorted(out, key=lambda g: g.task_id)
    return [replace(g, task_id=f"{source}/{g.task_id}")
            for source in sources for g in games_by_source[source] if g.task_type in types]
