"""PPO's math over turns (SPEC §4.5): generalized advantage estimation from a value head, the
advantages' whitening and the (optionally clipped) value loss.

A turn is one step of the MDP: its state is the prompt the policy saw, its action the completion,
its reward the env's step reward. ``V_t`` is the value head's estimate at the end of turn t's
prompt; after the last turn the episode is over, so ``V_T = 0`` (also for an episode the turn limit
ended: the limit is part of the task). With ``delta_t = r_t + gamma * V_{t+1} - V_t``:

    A_t = delta_t + gamma * lam * A_{t+1}          (A_T = 0)
    R_t = A_t + V_t                                 (the value head's target)

A hand-computed episode of two turns, rewards (0, 1), values (0.5, 0.8), gamma 0.9, lam 0.5:
``delta_1 = 1 - 0.8 = 0.2``, ``delta_0 = 0 + 0.9 * 0.8 - 0.5 = 0.22``, ``A_1 = 0.2``,
``A_0 = 0.22 + 0.45 * 0.2 = 0.31``, ``R = (0.81, 1.0)``:

>>> adv, ret = gae([0.0, 1.0], [0.5, 0.8], gamma=0.9, lam=0.5)
>>> adv.round(6).tolist(), ret.round(6).tolist()
([0.31, 0.2], [0.81, 1.0])

``lam = 1`` gives the Monte Carlo return minus the value; ``lam = 0`` the one-step TD error:

>>> gae([0.0, 1.0], [0.5, 0.8], gamma=1.0, lam=1.0)[0].round(6).tolist()
[0.5, 0.2]
>>> gae([0.0, 1.0], [0.5, 0.8], gamma=1.0, lam=0.0)[0].round(6).tolist()
[0.3, 0.2]
"""

from __future__ import annotations

from typing import Sequence

import numpy as np


def gae(rewards: Sequence[float], values: Sequence[float], gamma: float = 1.0,
        lam: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Advantages and value targets of one episode's turns (module docstring), float64.

    Args:
        rewards: the env's reward for each turn.
        values: the value head's estimate at each turn's prompt end (one per reward).
        gamma: discount per turn.
        lam: GAE's lambda: 1 is the Monte Carlo return minus the value, 0 the one-step TD error.
    """
    r = np.asarray(rewards, dtype=np.float64)
    v = np.asarray(values, dtype=np.float64)
    if r.shape != v.shape or r.ndim != 1:
        raise ValueError(f"need one value per reward, got {v.shape} values for {r.shape} rewards")
    adv = np.zeros_like(r)
    running = 0.0
    for t in range(len(r) - 1, -1, -1):
        next_value = v[t + 1] if t + 1 < len(r) else 0.0
        delta = r[t] + gamma * next_value - v[t]
        running = delta + gamma * lam * running
        adv[t] = running
    return adv, adv + v


def whiten(advantages: Sequence[np.ndarray], count: float, total: float, total_sq: float,
           eps: float = 1e-8) -> list[np.ndarray]:
    """Advantages minus their mean, over their std (population), with the mean and std from
    ``count`` values summing to ``total`` and their squares to ``total_sq`` (a batch's, summed
    over ranks, so every rank whitens alike).

    >>> a = [np.array([1.0, 3.0]), np.array([2.0])]
    >>> [x.round(4).tolist() for x in whiten(a, 3, 6.0, 14.0)]
    [[-1.2247, 1.2247], [0.0]]
    """
    if count <= 0:
        return [np.asarray(a, dtype=np.float64) for a in advantages]
    mean = total / count
    std = float(np.sqrt(max(total_sq / count - mean * mean, 0.0)))
    return [(np.asarray(a, dtype=np.float64) - mean) / (std + eps) for a in advantages]


def explained_variance(values: np.ndarray, returns: np.ndarray) -> float:
    """``1 - Var(R - V) / Var(R)``: 1 when the values predict the targets, 0 when no better than
    their mean, negative when worse; nan when the targets do not vary.

    >>> explained_variance(np.array([0.0, 1.0]), np.array([0.0, 1.0]))
    1.0
    >>> explained_variance(np.array([0.5, 0.5]), np.array([0.0, 1.0]))
    0.0
    """
    var = float(np.var(returns))
    return float("nan") if var == 0 else 1.0 - float(np.var(returns - values)) / var


def value_loss(values, old_values, returns, clip: float | None = None):
    """Per-item value loss ``0.5 * (V - R)^2`` (torch tensors in, a tensor out). With ``clip``
    (PPO2's clipped value loss) the larger of that and the loss of ``V`` kept within ``clip`` of
    the value before the update, so one batch cannot move a value far:
    ``0.5 * max((V - R)^2, (V_old + clamp(V - V_old, -clip, clip) - R)^2)``.

    >>> import torch
    >>> v, old, ret = torch.tensor([1.0, 0.3]), torch.tensor([0.5, 0.5]), torch.tensor([0.6, 0.0])
    >>> [round(x, 6) for x in value_loss(v, old, ret).tolist()]
    [0.08, 0.045]
    >>> [round(x, 6) for x in value_loss(v, old, ret, clip=0.1).tolist()]
    [0.08, 0.08]
    """
    import torch

    loss = (values - returns) ** 2
    if clip is not None:
        clipped = old_values + torch.clamp(values - old_values, -clip, clip)
        loss = torch.maximum(loss, (clipped - returns) ** 2)
    return 0.5 * loss
