"""One task of an env, named so that a reset starts exactly it: what :meth:`AgentEnv.task_refs`
lists, a task set holds and the leaderboard plays.

>>> ref = TaskRef("q1", "lookup", {"task_id": "q1", "split": "test"})
>>> env_reset_options = ref.options  # env.reset(options=ref.options) starts that task
>>> task_list_hash(["q1", "q2"])
'548668e92cb97abb'
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any


@dataclass
class TaskRef:
    """One task: what to reset with, and how to group its results."""

    task_id: str
    task_type: str
    options: dict[str, Any] = field(default_factory=dict)
    """The reset options that start exactly this task."""


def task_list_hash(task_ids: Iterable[str]) -> str:
    """A short hash of the ordered task ids: equal hashes mean the same tasks in the same order."""
    return hashlib.sha256("\n".join(task_ids).encode("utf-8")).hexdigest()[:16]
