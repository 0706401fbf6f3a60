"""Group-relative advantages (GRPO, SPEC §4.2) and the hook that lets trainers reshape them.

Episodes of the same task form a group. An episode's advantage is its return minus the group mean,
divided by the group's standard deviation (``normalize_std=True``, GRPO) or not (Dr. GRPO). We use
the unbiased (n - 1) standard deviation, as the reference GRPO implementations do.

>>> group_advantages([1.0, 0.0, 0.0, 1.0], [0, 0, 0, 0]).round(4).tolist()
[0.866, -0.866, -0.866, 0.866]
>>> group_advantages([1.0, 0.0, 0.5, 0.5], [0, 0, 1, 1], normalize_std=False).tolist()
[0.5, -0.5, 0.0, 0.0]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, Sequence

import numpy as np


def group_advantages(rewards: Sequence[float], group_ids: Sequence, normalize_std: bool = True,
                     eps: float = 1e-6) -> np.ndarray:
    """Advantage of each episode relative to the other episodes of its group.

    Args:
        rewards: one return per episode.
        group_ids: the group of each episode (any hashable); groups need not be contiguous.
        normalize_std: divide by the group's std (GRPO); False gives Dr. GRPO's mean-centering only.
        eps: added to the std so a group whose returns all tie gets advantage 0, not NaN.
    """
    rewards = np.asarray(rewards, dtype=np.float64)
    if rewards.ndim != 1 or len(rewards) != len(group_ids):
        raise ValueError(f"need one group id per reward, got {len(group_ids)} ids for {rewards.shape} rewards")
    out = np.zeros_like(rewards)
    keys = list(group_ids)
    for key in dict.fromkeys(keys):
        idx = np.array([i for i, k in enumerate(keys) if k == key])
        r = rewards[idx]
        centered = r - r.mean()
        if normalize_std:
            std = r.std(ddof=1) if len(r) > 1 else 0.0
            # a tied group has nothing to compare: zero advantage even with eps=0
            centered = centered / (std + eps) if std + eps > 0 else np.zeros_like(centered)
        out[idx] = centered
    return out


@dataclass
class GroupStats:
    """Per-group summary the advantage transforms may use."""

    group_id: object
    task_id: str
    rewards: np.ndarray
    mean: float
    std: float


def group_stats(rewards: Sequence[float], group_ids: Sequence, task_ids: Sequence[str]) -> list[GroupStats]:
    rewards = np.asarray(rewards, dtype=np.float64)
    out = []
    keys = list(group_ids)
    for key in dict.fromkeys(keys):
        idx = [i for i, k in enumerate(keys) if k == key]
        r = rewards[idx]
        out.append(GroupStats(key, str(task_ids[idx[0]]), r, float(r.mean()),
                              float(r.std(ddof=1)) if len(r) > 1 else 0.0))
    return out


class AdvantageTransform(Protocol):
    """A hook that reshapes episode advantages before the loss (VSPO's value-smoothing scale and
    clipping, GiGPO's step term...). Gets the advantages and the episodes; returns new advantages
    of the same shape."""

    def __call__(self, advantages: np.ndarray, episodes: Sequence) -> np.ndarray: ...


def clip_advantages(max_abs: float) -> AdvantageTransform:
    """A transform clipping advantages to ``[-max_abs, max_abs]``."""
    if max_abs <= 0:
        raise ValueError(f"max_abs must be positive, got {max_abs}")

    def transform(advantages: np.ndarray, episodes: Sequence) -> np.ndarray:
        return np.clip(advantages, -max_abs, max_abs)

    return transform
