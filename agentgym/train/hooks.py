"""Extension points of the training loop, so VSPO, GiGPO, DAPO and GCD stay small.

A :class:`TrainerExtension` sees each step at these points, in this order:

1. ``system_prompt(prompt)``: rewrite the system prompt of every episode before its first turn
   (GCD's "Common mistakes" list).
2. ``after_rollout(ctx, episodes)``: replace or add episodes before advantages are computed (VSPO
   drops zero-advantage groups and plays resampled tasks with ``ctx.collect``; DAPO keeps groups
   with reward spread and oversamples).
3. ``transform_advantages(ctx, advantages, episodes)``: reshape advantages, one array per episode
   with one value per turn (VSPO's value-smoothing scale and clip; GiGPO's step term).
4. ``extra_samples(ctx, episodes)``: add training samples of another ``kind`` (GCD's judge
   samples). ``sample_kinds[kind]`` gives that kind's loss weight and loss settings, so the
   objective is ``L_policy + sum_kind w_kind * L_kind`` in one backward pass.

``metrics()`` is merged into the step's logged metrics and ``state_dict``/``load_state_dict`` go
into checkpoints, so extensions resume exactly. ``agentgym eval`` rebuilds a checkpoint's
extensions the same way (:func:`agentgym.train.extensions.recorded_extensions`: the recorded
settings, then ``load_state_dict``) and evaluates with their ``system_prompt``, printing
``system_prompt_note()``. :class:`Extensions` chains several in order.

Data-parallel (``torchrun``), each rank runs the hooks on its own groups, with its own state
(saved per rank); ``summed_metrics`` names the metrics that count things, summed over ranks where
the others are averaged (:func:`agentgym.train.distributed.reduce_metrics`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from agentgym.train.rollout import Episode, GroupRequest
from agentgym.train.samples import Sample


@dataclass
class SampleKind:
    """How the samples of one extra kind enter the loss."""

    weight: float = 1.0
    """Its loss term's weight (GCD's lambda)."""
    loss: Any = None
    """Its :class:`agentgym.train.loss.LossConfig` (None: the policy's)."""


@dataclass
class StepContext:
    """What an extension can use during a step."""

    step: int
    """The step being trained, counted from 0."""
    collect: Callable[[Sequence[GroupRequest]], list[Episode]]
    """Play these groups with the current policy (any number: played in rounds of the env batch's
    size); their time and tokens count in the step's rollout cost. Episodes that ended in an env
    fault are already left out."""
    next_requests: Callable[..., list[GroupRequest]]
    """``next_requests(n, tag="batch")``: the next ``n`` tasks of the run's stream (advances the
    saved data position)."""
    policy: Any
    tokenizer: Any
    group_size: int
    num_groups: int
    rng: np.random.Generator
    """Randomness of this step for the extension's own draws (seeded by run seed and step, so a
    resumed run draws the same)."""
    config: Any = None
    """The run's :class:`agentgym.train.config.TrainConfig`."""
    info: dict = field(default_factory=dict)
    """Scratch space shared by the extensions of one step."""
    dist: Any = None
    """This process's :class:`agentgym.train.distributed.Dist` (rank, world size, collectives); None
    outside the training loop. ``group_size`` and ``num_groups`` are this rank's."""


class TrainerExtension:
    """Base class: every hook does nothing."""

    name: str = "extension"
    sample_kinds: dict[str, SampleKind] = {}
    summed_metrics: frozenset[str] = frozenset()
    """metric names that count things (groups, samples): summed over ranks, not averaged"""

    def system_prompt(self, prompt: str) -> str:
        return prompt

    def after_rollout(self, ctx: StepContext, episodes: list[Episode]) -> list[Episode]:
        return episodes

    def transform_advantages(self, ctx: StepContext, advantages: list[np.ndarray],
                             episodes: Sequence[Episode]) -> list[np.ndarray]:
        return advantages

    def extra_samples(self, ctx: StepContext, episodes: Sequence[Episode]) -> list[Sample]:
        return []

    def metrics(self) -> dict[str, float]:
        return {}

    def state_dict(self) -> dict[str, Any]:
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        pass

    def system_prompt_note(self) -> str | None:
        """One line on how :meth:`system_prompt` rewrites prompts now (``agentgym eval`` prints it
        for a checkpoint); None when it leaves them as they are."""
        return None


class Extensions(TrainerExtension):
    """Several extensions as one, applied in order (each sees the previous one's output)."""

    name = "extensions"

    def __init__(self, extensions: Sequence[TrainerExtension] = ()):
        self.items = list(extensions)
        names = [e.name for e in self.items]
        if len(set(names)) != len(names):
            raise ValueError(f"extension names must be unique (they key checkpoint state): {names}")
        self.sample_kinds = {}
        self.summed_metrics = frozenset().union(*(e.summed_metrics for e in self.items))
        for e in self.items:
            clash = set(e.sample_kinds) & (set(self.sample_kinds) | {"policy"})
            if clash:
                raise ValueError(f"sample kind(s) {sorted(clash)} of {e.name!r} are already taken")
            self.sample_kinds.update(e.sample_kinds)

    def system_prompt(self, prompt):
        for e in self.items:
            prompt = e.system_prompt(prompt)
        return prompt

    def after_rollout(self, ctx, episodes):
        for e in self.items:
            episodes = e.after_rollout(ctx, episodes)
        return episodes

    def transform_advantages(self, ctx, advantages, episodes):
        for e in self.items:
            advantages = e.transform_advantages(ctx, advantages, episodes)
            if len(advantages) != len(episodes):
                raise ValueError(f"{e.name}.transform_advantages returned {len(advantages)} arrays for "
                                 f"{len(episodes)} episodes")
        return advantages

    def extra_samples(self, ctx, episodes):
        return [s for e in self.items for s in e.extra_samples(ctx, episodes)]

    def metrics(self):
        return {k: v for e in self.items for k, v in e.metrics().items()}

    def state_dict(self):
        return {e.name: e.state_dict() for e in self.items}

    def load_state_dict(self, state):
        for e in self.items:
            e.load_state_dict(state.get(e.name, {}))

    def system_prompt_note(self):
        notes = [note for e in self.items if (note := e.system_prompt_note())]
        return "; ".join(notes) or None
