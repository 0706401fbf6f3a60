"""GiGPO-style step grouping: a second, per-step advantage from steps that share a state (SPEC §4.5),
and :class:`GiGPO`, the extension that adds it on the GRPO loop.

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
  :mod:`.grpo`; mean-centring only with ``normalize_std=False``). A step alone in its group
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

On the loop (:class:`GiGPO`, flags ``--gigpo.*``): steps of one task's episodes that start from the
same anchor state form a step group. Each step's discounted return (``gamma``) is compared within
its step group, giving ``A_step`` (0 for a step alone in its group), and each turn trains on
``A_episode + omega * A_step``. The anchor is the observation text the step started from, or, with
``anchor="state"``, the ``info["state_key"]`` an env provides (different states can print the same
text); steps without a key fall back to text. Per-turn advantages reach the tokens in both layouts.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from agentgym.train.base.errors import ConfigError
from agentgym.train.config.run import RunConfig
from agentgym.train.config.tree import TrainConfig
from agentgym.train.hooks import TrainerExtension
from agentgym.train.methods.registry import Method, register
from agentgym.train.rollout.episodes import Episode


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


@dataclass
class GiGPOConfig:
    """GiGPO's own settings (flags ``--gigpo.*``)."""

    gamma: float = 0.95
    """discount of the step returns compared within a step group"""
    omega: float = 1.0
    """weight of the step advantage: A = A_episode + omega * A_step"""
    anchor: Literal["text", "state"] = "text"
    """what makes two steps the same state: the observation text, or the env's info['state_key']"""
    step_std_normalize: bool = True
    """divide step advantages by the step group's std"""


    def validate(self) -> None:
        if not 0 <= self.gamma <= 1:
            raise ConfigError(f"--gigpo.gamma must be in [0, 1], got {self.gamma}")
        if not self.omega >= 0:
            raise ConfigError(f"--gigpo.omega must be >= 0, got {self.omega}")


def anchors_of(ep: Episode, anchor: str = "text") -> list:
    """One anchor key per turn of ``ep``: the state each turn started from. The text is the
    engine's own (``ep.raw_observations``), not an observation that also shows the history."""
    keys = []
    for t in range(len(ep.turns)):
        key = ep.state_keys[t] if anchor == "state" and t < len(ep.state_keys) else None
        text = ep.raw_observations[t] if t < len(ep.raw_observations) else ep.observations[t]
        keys.append(("state", key) if key is not None else ("text", text))
    return keys


class GiGPO(TrainerExtension):
    """The GiGPO extension; pass ``GiGPO(config.gigpo)`` to :func:`agentgym.train.loop.train`."""

    name = "gigpo"
    summed_metrics = frozenset({"gigpo/step_groups"})

    def __init__(self, cfg: GiGPOConfig | None = None):
        self.cfg = cfg or GiGPOConfig()
        self._metrics: dict[str, float] = {}

    def transform_advantages(self, ctx, advantages, episodes):
        if not episodes:
            return advantages
        step_adv, stats = step_group_advantages(
            [ep.group for ep in episodes], [anchors_of(ep, self.cfg.anchor) for ep in episodes],
            [ep.rewards[:len(ep.turns)] for ep in episodes], self.cfg.gamma, self.cfg.step_std_normalize)
        self._metrics = {f"gigpo/{k}": v for k, v in stats.items()}
        for ep, a in zip(episodes, step_adv):  # for the saved episodes (--log-episodes)
            ep.turn_signals["gigpo/step_advantage"] = [float(x) for x in a]
        return combine_advantages(advantages, step_adv, self.cfg.omega)

    def metrics(self) -> dict[str, float]:
        return dict(self._metrics)


@dataclass
class GiGPOTrainConfig(TrainConfig):
    gigpo: GiGPOConfig = field(default_factory=GiGPOConfig)


GIGPO_METHOD = register(Method(
    name="gigpo", summary="GiGPO: GRPO plus a step-level advantage from steps in the same state",
    description="""GiGPO: GRPO plus a step-level advantage from steps that start in the same state (SPEC §4.5).

    python trainers/gigpo.py --env-id ALFWorld-v0 --layout window
    python trainers/gigpo.py --gigpo.omega 0.5 --gigpo.anchor state

Every GRPO flag works here; GiGPO's own are --gigpo.* (--help lists them).
""",
    config=GiGPOTrainConfig, defaults=lambda: GiGPOTrainConfig(run=RunConfig(output_dir="runs/gigpo")),
    extensions=lambda config: [GiGPO(config.gigpo)], extension=(GiGPO, GiGPOConfig), doc="docs/trainers.md#gigpo"))
