"""GiGPO on the GRPO loop (SPEC §4.5): a step-level advantage from step groups.

Steps of one task's episodes that start from the same anchor state form a step group. Each step's
discounted return (``gamma``) is compared within its step group, giving ``A_step`` (0 for a step
alone in its group), and each turn trains on ``A_episode + omega * A_step``. The anchor is the
observation text the step started from, or, with ``anchor="state"``, the ``info["state_key"]``
an env provides (different states can print the same text); steps without a key fall back to text.
Per-turn advantages reach the tokens in both layouts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

from agentgym.train.run.config import ConfigError
from agentgym.train.gigpo import combine_advantages, step_group_advantages
from agentgym.train.hooks import TrainerExtension
from agentgym.train.rollout.episodes import Episode


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

    FORMER_NAMES: ClassVar[dict[str, str]] = {"std_normalize": "step_std_normalize"}

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
        return combine_advantages(advantages, step_adv, self.cfg.omega)

    def metrics(self) -> dict[str, float]:
        return dict(self._metrics)
