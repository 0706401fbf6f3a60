"""DAPO's dynamic sampling: keep only the groups whose rewards differ (SPEC §4.5): the filter, and
:class:`DAPO`, the extension that refills the batch on the GRPO loop.

A group of episodes whose returns all tie gets advantage 0 for every episode under GRPO, so it adds
tokens to the batch but no gradient. DAPO (Yu et al., 2025) filters such groups out and keeps
sampling until the batch is full of groups that carry signal.

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

On the loop (:class:`DAPO`, flags ``--dapo.*``): groups whose returns tie are dropped, and fresh
tasks from the run's stream are sampled until the batch has ``num_groups`` groups with reward
spread, or until ``max_rounds`` extra rounds were played (a soft cap: the shortfall is logged and
the step trains on what it has). DAPO's loss settings are the trainer's flags: clip-higher
(``--eps-high 0.28`` with ``--eps-low 0.2``), token-mean aggregation and no KL term;
``trainers/dapo.py`` makes them its defaults.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from agentgym.train.base.errors import ConfigError
from agentgym.train.config.optim import LossConfig, OptimConfig
from agentgym.train.config.run import RunConfig
from agentgym.train.config.tree import TrainConfig
from agentgym.train.hooks import StepContext, TrainerExtension
from agentgym.train.methods.registry import Method, register
from agentgym.train.rollout.episodes import Episode, by_group

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


@dataclass
class DAPOConfig:
    """DAPO's own settings (flags ``--dapo.*``)."""

    spread_tol: float = 1e-6
    """a group whose return spread is at most this has none"""
    max_rounds: int = 3
    """extra generation rounds per step at most (soft cap: a shortfall is logged, never raised)"""


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


@dataclass
class DAPOTrainConfig(TrainConfig):
    dapo: DAPOConfig = field(default_factory=DAPOConfig)


def dapo_defaults() -> DAPOTrainConfig:
    return DAPOTrainConfig(optim=OptimConfig(loss=LossConfig(eps_low=DAPO_EPS_LOW, eps_high=DAPO_EPS_HIGH, beta=0.0,
                                                             aggregation="token-mean")),
                           run=RunConfig(output_dir="runs/dapo"))


DAPO_METHOD = register(Method(
    name="dapo", summary="DAPO: dynamic sampling of groups with reward spread, clip-higher, no KL",
    description="""DAPO-style training: dynamic sampling (only groups whose returns differ, oversampled to fill
the batch) with clip-higher (eps_low 0.2, eps_high 0.28), token-mean loss and no KL term.

    python trainers/dapo.py
    python trainers/dapo.py --dapo.max-rounds 5 --eps-high 0.3

Every GRPO flag works here; DAPO's own are --dapo.* (--help lists them).
""",
    config=DAPOTrainConfig, defaults=dapo_defaults, extensions=lambda config: [DAPO(config.dapo)],
    extension=(DAPO, DAPOConfig), doc="docs/trainers.md#dapo"))
