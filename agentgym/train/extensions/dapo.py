"""DAPO's dynamic sampling on the GRPO loop: train only on groups whose returns differ.

Groups whose returns tie carry no gradient; DAPO drops them and keeps sampling fresh tasks from
the run's stream until the batch has ``num_groups`` groups with reward spread, or until
``max_rounds`` extra rounds were played (a soft cap: the shortfall is logged and the step trains
on what it has). DAPO's loss settings are the trainer's flags: clip-higher (``--eps-high 0.28``
with ``--eps-low 0.2``), token-mean aggregation and no KL term; ``trainers/dapo.py`` makes them
its defaults.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from agentgym.train.run.config import ConfigError
from agentgym.train.dapo import dynamic_sampling_mask
from agentgym.train.hooks import StepContext, TrainerExtension
from agentgym.train.rollout.episodes import Episode, by_group


@dataclass
class DAPOConfig:
    """DAPO's own settings (flags ``--dapo.*``)."""

    spread_tol: float = 1e-6
    """a group whose return spread is at most this has none"""
    max_rounds: int = 3
    """extra generation rounds per step at most (soft cap: a shortfall is logged, never raised)"""

    FORMER_NAMES: ClassVar[dict[str, str]] = {"tol": "spread_tol"}

    def validate(self) -> None:
        if not self.spread_tol >= 0:
            raise ConfigError(f"--dapo.spread-tol must be >= 0, got {self.spread_tol}")
        if self.max_rounds < 0:
            raise ConfigError(f"--dapo.max-rounds must be >= 0, got {self.max_rounds}")


class DAPO(TrainerExtension):
    """The DAPO dynamic-sampling extension."""

    name = "dapo"
    summed_metrics = frozenset({"dapo/extra_groups", "dapo/shortfall"})

    def __init__(self, cfg: DAPOConfig | None = None):
        self.cfg = cfg or DAPOConfig()
        self._metrics: dict[str, float] = {}

    def _with_spread(self, groups: dict[int, list[Episode]]) -> dict[int, list[Episode]]:
        mask = dynamic_sampling_mask([[ep.ret for ep in eps] for eps in groups.values()], self.cfg.spread_tol)
        return {g: eps for (g, eps), keep in zip(groups.items(), mask) if keep}

    def after_rollout(self, ctx: StepContext, episodes: list[Episode]) -> list[Episode]:
        groups = by_group(episodes)
        kept = self._with_spread(groups)
        m = {"dapo/kept_frac": len(kept) / len(groups) if groups else 0.0, "dapo/rounds": 0.0,
             "dapo/extra_groups": 0.0}
        need = ctx.num_groups - len(kept)
        while need > 0 and m["dapo/rounds"] < self.cfg.max_rounds:
            m["dapo/rounds"] += 1
            # ask for the whole batch's worth again: the kept fraction is usually well below 1
            played = by_group(ctx.collect(ctx.next_requests(ctx.num_groups, tag="oversample")))
            m["dapo/extra_groups"] += ctx.num_groups
            for g, eps in self._with_spread(played).items():
                if need > 0:
                    kept[g] = eps
                    need -= 1
        m["dapo/shortfall"] = float(max(need, 0))
        self._metrics = m
        return [ep for eps in kept.values() for ep in eps]

    def metrics(self) -> dict[str, float]:
        return dict(self._metrics)
