"""GiGPO-style step grouping: a second, per-step advantage from steps that share a state (SPEC §4.5).

GRPO gives every step of an episode the same advantage, so a long episode that succeeded rewards
its wasted steps as much as its good ones. GiGPO (Feng et al., 2025, as in verl-agent) adds a
step-level comparison without extra rollouts: episodes of the same task often pass through the same
state (the same observation text, or an env-provided state key), and the actions taken from that
"anchor" state can be compared directly.

- Each step's return is its discounted return ``G_t = r_t + gamma * G_{t+1}`` within its episode.
- Steps of episodes in the **same task group** whose anchors are **equal** form a step group.
  Anchors are never compared across task groups: two tasks may show the same text and still differ.
  A state visited twice in one episode puts two members into the step group.
- Step advantage ``(G - mean) / (std + eps)`` within the step group (unbiased std, as
  :mod:`.advantages`; mean-centring only with ``normalize_std=False``). A step alone in its group
  has nothing to be compared with and gets 0.
- Per step: ``A = A_episode + omega * A_step`` (:func:`combine_advantages`).

>>> discounted_returns([0.0, 0.0, 1.0], gamma=0.5).tolist()
[0.25, 0.5, 1.0]
>>> steps, stats = step_group_advantages([0, 0], [["s0", "s1"], ["s0"]], [[0.0, 1.0], [0.0]],
...                                      gamma=1.0, normalize_std=False)
>>> [a.tolist() for a in steps], stats["step_groups"]   # s0: returns 1 and 0, mean 0.5
([[0.5, 0.0], [-0.5]], 1.0)
>>> [a.tolist() for a in combine_advantages([1.0, -1.0], steps, omega=2.0)]
[[2.0, 1.0], [-2.0]]
"""

from __future__ import annotations

from typing import Hashable, Sequence

import numpy as np


def discounted_returns(rewards: Sequence[float], gamma: float) -> np.ndarray:
    """Return-to-go of each step: ``G_t = r_t + gamma * G_{t+1}``, ``G`` past the end being 0.

    >>> discounted_returns([1.0, 0.0, 2.0], gamma=0.9).round(4).tolist()   # 1 + 0.81 * 2, 0.9 * 2, 2
    [2.62, 1.8, 2.0]
    """
    if not 0 <= gamma <= 1:
        raise ValueError(f"gamma must be in [0, 1], got {gamma}")
    r = np.asarray(rewards, dtype=np.float64).reshape(-1)
    out = np.zeros_like(r)
    running = 0.0
    for t in range(len(r) - 1, -1, -1):
        running = r[t] + gamma * running
        out[t] = running
    return out


def step_group_advantages(
    group_ids: Sequence[Hashable],
    anchors: Sequence[Sequence[Hashable]],
    step_rewards: Sequence[Sequence[float]],
    gamma: float = 0.95,
    normalize_std: bool = True,
    eps: float = 1e-6,
) -> tuple[list[np.ndarray], dict[str, float]]:
    """Step-level advantages of GiGPO, one array per episode with one value per step.

    Args:
        group_ids: per episode, its task group (episodes of one task share it).
        anchors: per episode, one hashable key per step: the state the step started from (e.g.
            the observation text, or a state key the env provides).
        step_rewards: per episode, one reward per step.
        gamma: discount of the per-step returns.
        normalize_std: divide by the step group's std; False only subtracts its mean.
        eps: added to the std, so a step group whose returns tie gets 0, not NaN.

    Returns the per-episode step advantages and stats (floats, for logging): ``step_groups`` (how
    many step groups have at least two members), ``step_group_size`` (their mean size; 0 if none)
    and ``singleton_frac`` (the fraction of steps alone in their group; 0 if there are no steps).
    """
    n = len(group_ids)
    if len(anchors) != n or len(step_rewards) != n:
        raise ValueError(f"need one anchor list and one reward list per episode, got {n} group ids, "
                         f"{len(anchors)} anchor lists and {len(step_rewards)} reward lists")
    returns = []
    members: dict[tuple, list[tuple[int, int]]] = {}
    for i, (gid, keys, rewards) in enumerate(zip(group_ids, anchors, step_rewards)):
        if len(keys) != len(rewards):
            raise ValueError(f"episode {i}: {len(keys)} anchors for {len(rewards)} step rewards")
        returns.append(discounted_returns(rewards, gamma))
        for t, key in enumerate(keys):
            # the task group is part of the key: equal text under another task is another state
            members.setdefault((gid, key), []).append((i, t))
    out = [np.zeros(len(g)) for g in returns]
    sizes = []
    singletons = 0
    for steps in members.values():
        if len(steps) < 2:
            singletons += 1
            continue
        sizes.append(len(steps))
        g = np.array([returns[i][t] for i, t in steps])
        adv = g - g.mean()
        if normalize_std:
            std = g.std(ddof=1)
            # a tied step group carries no signal: 0 even with eps=0
            adv = adv / (std + eps) if std + eps > 0 else np.zeros_like(adv)
        for (i, t), a in zip(steps, adv):
            out[i][t] = a
    total = sum(len(g) for g in returns)
    stats = {
        "step_groups": float(len(sizes)),
        "step_group_size": float(np.mean(sizes)) if sizes else 0.0,
        "singleton_frac": singletons / total if total else 0.0,
    }
    return out, stats


def combine_advantages(episode_advantages: Sequence[float] | np.ndarray, step_advantages: Sequence[np.ndarray],
                       omega: float = 1.0) -> list[np.ndarray]:
    """Per-step GiGPO advantage ``A_episode + omega * A_step``.

    ``episode_advantages`` holds one float per episode (broadcast over its steps) or, per episode,
    an array as long as its steps.

    >>> [a.tolist() for a in combine_advantages([0.5], [np.array([1.0, -1.0])], omega=0.5)]
    [[1.0, 0.0]]
    """
    if len(episode_advantages) != len(step_advantages):
        raise ValueError(f"need one episode advantage per episode, got {len(episode_advantages)} "
                         f"for {len(step_advantages)} episodes")
    return [np.asarray(e, dtype=np.float64) + omega * np.asarray(s, dtype=np.float64)
            for e, s in zip(episode_advantages, step_advantages)]
