"""DAPO's dynamic sampling: keep only the groups whose rewards differ (SPEC §4.5).

A group of episodes whose returns all tie gets advantage 0 for every episode under GRPO, so it adds
tokens to the batch but no gradient. DAPO (Yu et al., 2025) filters such groups out and keeps
sampling until the batch is full of groups that carry signal. This module is the filter only; the
trainer decides how many extra rollouts to spend refilling the batch.

Shaped returns rarely tie to the last bit, so "tied" means the spread ``max(R) - min(R)`` is at most
a tolerance (the same test VSPO uses to find zero-advantage groups, see :mod:`.vspo`).

DAPO's other loss-side settings live in :class:`~agentgym.train.optim.loss.LossConfig` and are exposed as
trainer flags rather than here: clip-higher (``eps_low=0.2``, ``eps_high=0.28``: the upper clip
range is widened so low-probability tokens can still grow, which keeps entropy from collapsing) and
token-level aggregation (``aggregation="token-mean"``, so long answers weigh by their length).

>>> has_reward_spread([1.0, 0.0, 0.0, 1.0])
True
>>> has_reward_spread([0.5, 0.5 + 1e-7, 0.5])
False
>>> dynamic_sampling_mask([[1.0, 1.0], [0.0, 1.0], [0.0, 0.0]])
[False, True, False]
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

DAPO_EPS_LOW = 0.2
"""Lower PPO clip range DAPO trains with."""
DAPO_EPS_HIGH = 0.28
"""Upper PPO clip range DAPO trains with (clip-higher)."""


def has_reward_spread(rewards: Sequence[float], tol: float = 1e-6) -> bool:
    """Whether a group's returns differ by more than ``tol`` (``max - min > tol``).

    An empty or single-episode group has no spread: there is nothing to compare against.

    >>> has_reward_spread([0.2, 0.3], tol=0.05), has_reward_spread([0.2, 0.3], tol=0.1)
    (True, False)
    >>> has_reward_spread([1.0])
    False
    """
    if tol < 0:
        raise ValueError(f"tol must be >= 0, got {tol}")
    r = np.asarray(rewards, dtype=np.float64).reshape(-1)
    if r.size == 0:
        return False
    return bool(r.max() - r.min() > tol)


def dynamic_sampling_mask(group_rewards: Sequence[Sequence[float]], tol: float = 1e-6) -> list[bool]:
    """One flag per group: True keeps the group (its returns spread by more than ``tol``).

    >>> dynamic_sampling_mask([[0.1, 0.1, 0.1], [0.1, 0.4, 0.1]])
    [False, True]
    """
    return [has_reward_spread(r, tol) for r in group_rewards]
