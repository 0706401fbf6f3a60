"""Where a training run stands: the counters and states the loop carries from step to step.

:class:`RunState` is everything of a run that is neither weights, optimizer nor random streams:
steps done, the position in the task stream, episodes played, training seconds, the held-out
evaluations and learning curve, the PRS schedule's state and the extensions' state. The loop
changes it in place, a checkpoint saves its :meth:`~RunState.state_dict` and a resumed run starts
from :meth:`~RunState.load_state_dict`, so a run stopped at any step goes on as if it never had.

>>> state = RunState(step=2, data_position=4, episodes=8, seconds=1.5)
>>> state.add_curve_point({"success_rate": 0.25, "prs_return": 0.5})
{'step': 2, 'episodes': 8, 'seconds': 1.5, 'success': 0.25, 'return': 0.5}
>>> RunState.from_state_dict(state.state_dict()) == state
True
"""

from __future__ import annotations

import copy
import math
import numbers
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

# RunState field -> its key in a checkpoint's trainer state (the names checkpoints have always used)
_KEYS = {"step": "step", "data_position": "data_position", "episodes": "episodes_played",
         "seconds": "train_seconds", "evaluation": "evaluation", "curve": "eval_curve",
         "schedule": "prs_schedule", "extension": "extension", "tasks": "task_success"}


class StateFieldError(ValueError):
    """A saved value that is not what its field holds (a hand-edited or damaged checkpoint); the
    message names the field by its trainer-state key and says what it takes."""

    def __init__(self, field: str, expected: str, value: Any):
        self.field = field
        text = repr(value)
        super().__init__(f"{field} must be {expected}, got {text if len(text) <= 60 else text[:60] + '...'}")


def _count(value: Any, key: str) -> int:
    """An integer >= 0 (a float with an integer value too, as an older checkpoint may hold)."""
    whole = isinstance(value, numbers.Integral) or (isinstance(value, float) and value.is_integer())
    if isinstance(value, bool) or not whole or value < 0:
        raise StateFieldError(key, "an integer >= 0", value)
    return int(value)


def _amount(value: Any, key: str) -> float:
    """A finite number >= 0."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value) or value < 0:
        raise StateFieldError(key, "a finite number >= 0", value)
    return float(value)


def _mapping(value: Any, key: str) -> dict:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise StateFieldError(key, "a mapping", value)
    return dict(value)


def _task_row(value: Any, key: str) -> list[int]:
    """``[played, solved, last_played, last_solved]`` as :class:`~agentgym.train.rollout.pool.TaskSuccess`
    keeps them: a task's last step played it at least once."""
    expected = ("[played, solved, last_played, last_solved]: four integers, solved <= played, "
                "1 <= last_played <= played, last_solved <= last_played")
    if not isinstance(value, (list, tuple)) or len(value) != 4:
        raise StateFieldError(key, expected, value)
    try:
        played, solved, last_played, last_solved = (_count(x, key) for x in value)
    except StateFieldError:
        raise StateFieldError(key, expected, value) from None
    if not (solved <= played and 1 <= last_played <= played and last_solved <= last_played):
        raise StateFieldError(key, expected, value)
    return [played, solved, last_played, last_solved]


def split_scores(result: dict) -> dict[str, float]:
    """A held-out result's scores by key: ``success`` and ``return`` (the headline split), and
    ``<split>/success``, ``<split>/return`` for each split of a several-split evaluation."""
    scores = {"success": result["success_rate"], "return": result["prs_return"]}
    for split, res in result.get("splits", {}).items():
        scores.update({f"{split}/success": res["success_rate"], f"{split}/return": res["prs_return"]})
    return scores


@dataclass
class RunState:
    """A run's progress and the state of its schedule and extensions, as plain data."""

    step: int = 0
    """training steps completed"""
    data_position: int = 0
    """position in the task stream of the next step's first group (extra tasks the extensions
    took included)"""
    episodes: int = 0
    """env episodes played so far, extra rollouts included (``--max-episodes`` counts these)"""
    seconds: float = 0.0
    """training seconds so far (held-out evaluations excluded)"""
    evaluation: dict[str, dict] = field(default_factory=dict)
    """``before`` / ``after``: :func:`agentgym.train.evaluate.evaluate` results on held-out tasks"""
    curve: list[dict[str, float]] = field(default_factory=list)
    """held-out ``{"step", "episodes", "seconds", "success", "return"}`` points in the order they were
    taken (with ``<split>/success`` and ``<split>/return`` per split under several ``--eval-split``)"""
    schedule: dict[str, Any] = field(default_factory=dict)
    """the PRS schedule's ``state_dict()`` as of the last save ({}: the schedule's start)"""
    extension: dict[str, Any] = field(default_factory=dict)
    """the extensions' ``state_dict()`` as of the last save, by extension name (rank 0's under
    ``torchrun``; each rank's own are in the checkpoint's ``per_rank``)"""
    tasks: dict[str, list[int]] = field(default_factory=dict)
    """per task id of the training stream: episodes played, solved, and played and solved in the
    task's last step (:class:`agentgym.train.rollout.pool.TaskSuccess`)"""

    def add_curve_point(self, result: Mapping[str, Any], step: int | None = None) -> dict[str, float]:
        """Append a held-out result to the learning curve at ``step`` (default: this one); returns
        the point."""
        point = {"step": self.step if step is None else step, "episodes": self.episodes,
                 "seconds": round(self.seconds, 3), **split_scores(result)}
        self.curve.append(point)
        return point

    def budget_spent(self, max_episodes: int) -> bool:
        """Whether ``--max-episodes`` (0: no limit) is played out."""
        return 0 < max_episodes <= self.episodes

    def state_dict(self) -> dict[str, Any]:
        """The state under the keys a checkpoint's trainer state holds it (copies, not views); no
        ``task_success`` key while no task was recorded, so a checkpoint written before the record
        existed is written back as it was."""
        return {key: copy.deepcopy(getattr(self, name)) for name, key in _KEYS.items()
                if name != "tasks" or self.tasks}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Take the state from :meth:`state_dict`'s keys. ``data_position`` is required; the rest
        defaults as in a checkpoint written before it was recorded (no curve, no episodes...).

        A value that is not what its field holds (a count that is not an integer >= 0, ``inf``
        seconds, a short per-task row) raises :class:`StateFieldError` naming the key, before
        anything is taken: a run never resumes from half a state."""
        if "data_position" not in state:
            raise KeyError("data_position")
        step = _count(state.get("step", 0), "step")
        position = _count(state["data_position"], "data_position")
        episodes = _count(state.get("episodes_played", 0), "episodes_played")
        seconds = _amount(state.get("train_seconds", 0.0), "train_seconds")
        evaluation = _mapping(state.get("evaluation"), "evaluation")
        curve = state.get("eval_curve") or []
        if not isinstance(curve, list) or not all(isinstance(p, Mapping) for p in curve):
            raise StateFieldError("eval_curve", "a list of points (mappings)", curve)
        schedule = _mapping(state.get("prs_schedule"), "prs_schedule")
        if "stage" in schedule:  # PRSSchedule.state_dict(): the stage is a weight position, never inf
            _amount(schedule["stage"], "prs_schedule.stage")
        extension = _mapping(state.get("extension"), "extension")
        tasks = {str(k): _task_row(v, f"task_success[{str(k)!r}]")
                 for k, v in _mapping(state.get("task_success"), "task_success").items()}
        self.step, self.data_position, self.episodes, self.seconds = step, position, episodes, seconds
        self.evaluation, self.curve, self.schedule = evaluation, list(curve), schedule
        self.extension, self.tasks = extension, tasks

    @classmethod
    def from_state_dict(cls, state: Mapping[str, Any]) -> RunState:
        out = cls()
        out.load_state_dict(state)
        return out


STATE_KEYS = frozenset(_KEYS.values())
"""The trainer-state keys a :class:`RunState` reads and writes."""
