"""Extension points of the GRPO loop, so VSPO, GCD and friends stay small.

A :class:`TrainerExtension` sees each step at three points:

1. ``after_rollout(ctx, episodes)``: replace or add episodes before advantages are computed
   (VSPO drops zero-advantage groups and rolls out resampled tasks with ``ctx.collect``).
2. ``transform_advantages(advantages, episodes)``: reshape episode advantages (VSPO's
   value-smoothing scale and clipping; GiGPO's step term).
3. ``extra_samples(ctx, episodes)``: add training samples of another ``kind`` with their own
   advantages (GCD's judge samples); ``loss_weights[kind]`` weighs that kind's loss term, so the
   objective is ``L_policy + sum_kind w_kind * L_kind`` in one backward pass.

``metrics()`` is merged into the step's logged metrics and ``state_dict``/``load_state_dict`` go
into checkpoints, so extensions resume exactly too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from agentgym.train.rollout import Episode
from agentgym.train.samples import Sample


@dataclass
class StepContext:
    """What an extension can use during a step."""

    step: int
    collect: Callable[[Sequence[int]], list[Episode]]
    """Roll out groups on the tasks chosen by these seeds (one seed per group; at most as many
    groups as the env batch has) with the current policy."""
    next_seeds: Callable[[int], list[int]]
    """Draw this many fresh task seeds from the data stream (advances the saved data position)."""
    policy: Any
    tokenizer: Any
    group_size: int


class TrainerExtension:
    """Base class: every hook does nothing."""

    loss_weights: dict[str, float] = {}

    def after_rollout(self, ctx: StepContext, episodes: list[Episode]) -> list[Episode]:
        return episodes

    def transform_advantages(self, advantages: np.ndarray, episodes: Sequence[Episode]) -> np.ndarray:
        return advantages

    def extra_samples(self, ctx: StepContext, episodes: Sequence[Episode]) -> list[Sample]:
        return []

    def metrics(self) -> dict[str, float]:
        return {}

    def state_dict(self) -> dict[str, Any]:
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        pass
