"""VSPO on the GRPO loop (SPEC §4.3): resample zero-advantage groups from a value buffer, then
value-smoothing clipping of the advantages.

Each step, after the rollout:

1. Every group's returns update the value buffer (task value ``(r_max - mean) * std``,
   EMA-smoothed across visits).
2. Groups whose returns tie (spread within ``tol``; or, with ``replace_below_value``, whose value
   is below it) are dropped.
3. Replacements are played: tasks from the buffer drawn in proportion to their value (never one
   already in the batch), and fresh tasks from the run's stream for the rest. A replacement that
   ties again is dropped too, and another round is played, up to ``max_resample_rounds``; what is
   still missing then is logged as the shortfall (the batch is smaller), never raised.
4. Advantages of a task replayed from the buffer for the n-th time are scaled by ``eta ** n``, and
   every advantage is clipped to ``[-a_max, a_max]``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from agentgym.train.run.config import ConfigError
from agentgym.train.hooks import StepContext, TrainerExtension
from agentgym.train.rollout.episodes import Episode, GroupRequest, by_group
from agentgym.train.vspo import ValueBuffer, groups_to_replace, is_zero_advantage, smooth_advantages


@dataclass
class VSPOConfig:
    """VSPO's own settings (flags ``--vspo.*``)."""

    resample: bool = True
    """replace zero-advantage groups with tasks from the value buffer (off: GRPO plus the clipping)"""
    tol: float = 1e-6
    """a group whose return spread is at most this counts as zero-advantage"""
    replace_below_value: float | None = None
    """instead, replace every group whose task value is below this (the paper's first version)"""
    max_resample_rounds: int = 2
    """extra rollout rounds per step at most; what is still missing is logged as the shortfall"""
    alpha: float = 0.5
    """EMA weight of a task's newest value across visits (1: only the last visit)"""
    value_sigma: Literal["std", "var"] = "std"
    """spread factor of the task value"""
    r_max: float = 1.0
    """the best return the env pays"""
    buffer_capacity: int | None = None
    """most tasks the value buffer keeps (None: all; past it the lowest-value task goes)"""
    smoothing: bool = True
    """scale advantages of a task reused n times by eta**n"""
    eta: float = 0.7
    """reuse decay of value-smoothing"""
    clip: bool = True
    """clip advantages to [-a_max, a_max]"""
    a_max: float = 3.0
    """advantage clip bound"""

    def validate(self) -> None:
        if not self.tol >= 0:
            raise ConfigError(f"--vspo.tol must be >= 0, got {self.tol}")
        if self.max_resample_rounds < 0:
            raise ConfigError(f"--vspo.max-resample-rounds must be >= 0, got {self.max_resample_rounds}")
        if not 0 < self.alpha <= 1:
            raise ConfigError(f"--vspo.alpha must be in (0, 1], got {self.alpha}")
        if not 0 < self.eta <= 1:
            raise ConfigError(f"--vspo.eta must be in (0, 1], got {self.eta}")
        if not self.a_max > 0:
            raise ConfigError(f"--vspo.a-max must be > 0, got {self.a_max}")
        if self.buffer_capacity is not None and self.buffer_capacity < 1:
            raise ConfigError(f"--vspo.buffer-capacity must be >= 1, got {self.buffer_capacity}")


def _returns(group: list[Episode]) -> list[float]:
    return [ep.ret for ep in group]


class VSPO(TrainerExtension):
    """The VSPO extension; pass ``VSPO(config.vspo)`` to :func:`agentgym.train.loop.train`."""

    name = "vspo"
    summed_metrics = frozenset({"vspo/groups_dropped", "vspo/groups_replaced", "vspo/shortfall", "vspo/extra_groups",
                                "vspo/from_buffer", "vspo/buffer_size"})

    def __init__(self, cfg: VSPOConfig | None = None):
        self.cfg = cfg or VSPOConfig()
        self.buffer = ValueBuffer(alpha=self.cfg.alpha, r_max=self.cfg.r_max, sigma=self.cfg.value_sigma,
                                  capacity=self.cfg.buffer_capacity)
        self.reuse_of_group: dict[int, int] = {}
        self._metrics: dict[str, float] = {}

    def _remember(self, groups: dict[int, list[Episode]]) -> None:
        for group in groups.values():
            ep = group[0]
            self.buffer.update(ep.group_key, _returns(group), {"seed": ep.seed, "options": dict(ep.reset_options)})

    def _to_drop(self, groups: dict[int, list[Episode]]) -> list[int]:
        ids = list(groups)
        picks = groups_to_replace([_returns(groups[g]) for g in ids], self.cfg.tol, self.cfg.replace_below_value,
                                  self.cfg.r_max, self.cfg.value_sigma)
        return [ids[k] for k in picks]

    def after_rollout(self, ctx: StepContext, episodes: list[Episode]) -> list[Episode]:
        groups = by_group(episodes)
        self.reuse_of_group = {}
        zero_before = [is_zero_advantage(_returns(g), self.cfg.tol) for g in groups.values()]
        self._remember(groups)
        m = {"vspo/zero_std_frac_before": float(np.mean(zero_before)) if zero_before else 0.0,
             "vspo/groups_replaced": 0.0, "vspo/groups_dropped": 0.0, "vspo/extra_groups": 0.0,
             "vspo/from_buffer": 0.0, "vspo/rounds": 0.0, "vspo/shortfall": 0.0}
        if self.cfg.resample:
            drop = self._to_drop(groups)
            m["vspo/groups_dropped"] = float(len(drop))
            kept = {g: eps for g, eps in groups.items() if g not in set(drop)}
            need, tried = len(drop), {eps[0].group_key for eps in groups.values()}
            while need > 0 and m["vspo/rounds"] < self.cfg.max_resample_rounds:
                m["vspo/rounds"] += 1
                records = self.buffer.sample(need, ctx.rng, exclude=tried)
                requests = [GroupRequest(int(r.request["seed"]), dict(r.request["options"]), "resample")
                            for r in records]
                requests += ctx.next_requests(need - len(requests), tag="resample")
                played = by_group(ctx.collect(requests))
                m["vspo/extra_groups"] += len(requests)
                m["vspo/from_buffer"] += len(records)
                reused = {r.key for r in records}
                for g, eps in played.items():
                    key = eps[0].group_key
                    tried.add(key)
                    if key in reused:
                        self.buffer.mark_reused(key)
                        self.reuse_of_group[g] = self.buffer.get(key).reuses if key in self.buffer else 1
                self._remember(played)
                bad = set(self._to_drop(played))
                for g, eps in played.items():
                    if g not in bad and need > 0:
                        kept[g] = eps
                        need -= 1
                        m["vspo/groups_replaced"] += 1
            m["vspo/shortfall"] = float(need)
            groups = kept
        zero_after = [is_zero_advantage(_returns(g), self.cfg.tol) for g in groups.values()]
        m["vspo/zero_std_frac_after"] = float(np.mean(zero_after)) if zero_after else 0.0
        m.update({f"vspo/buffer_{k}": v for k, v in self.buffer.stats().items()})
        self._metrics = m
        return [ep for eps in groups.values() for ep in eps]

    def transform_advantages(self, ctx, advantages, episodes):
        reuse = [self.reuse_of_group.get(ep.group, 0) for ep in episodes]
        return list(smooth_advantages(list(advantages), reuse, eta=self.cfg.eta if self.cfg.smoothing else None,
                                      a_max=self.cfg.a_max if self.cfg.clip else None)) if episodes else advantages

    def metrics(self) -> dict[str, float]:
        return dict(self._metrics)

    def state_dict(self) -> dict:
        return {"buffer": self.buffer.state_dict()}

    def load_state_dict(self, state: dict) -> None:
        if "buffer" in state:
            self.buffer.load_state_dict(state["buffer"])
