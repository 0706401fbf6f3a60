"""Extension points of the training loop, so VSPO, GiGPO, DAPO, GCD and PPO stay small.

A :class:`TrainerExtension` sees the run at these points, in this order:

0. ``build(run, model)``: once, in setup, after the policy is loaded and before the optimizer is
   made: add modules of its own (PPO's value head) and return their parameters as optimizer
   parameter groups. A checkpoint is restored after it, so ``load_state_dict`` finds them built.
1. ``system_prompt(prompt)``: rewrite the system prompt of every episode before its first turn
   (GCD's "Common mistakes" list).
2. ``after_rollout(ctx, episodes)``: replace or add episodes before advantages are computed (VSPO
   drops zero-advantage groups and plays resampled tasks with ``ctx.collect``; DAPO keeps groups
   with reward spread and oversamples).
3. ``transform_advantages(ctx, advantages, episodes)``: reshape advantages, one array per episode
   with one value per turn (VSPO's value-smoothing scale and clip; GiGPO's step term), or replace
   them (PPO's GAE over turns from its value head).
4. ``extra_samples(ctx, episodes)``: add training samples of another ``kind`` (GCD's judge
   samples). ``sample_kinds[kind]`` gives that kind's loss weight and loss settings, so the
   objective is ``L_policy + sum_kind w_kind * L_kind`` in one backward pass.
5. ``extra_loss(batch)``, in the update, once per micro-batch that holds any of its
   ``loss_items``: a loss term of its own, on the micro-batch's log-probabilities or (with
   ``needs_hidden_states``) the policy's last hidden states, added to that micro-batch's loss
   before its backward pass (PPO's value loss). It returns a sum over its items; the update
   divides by the optimizer batch's item count (over every rank), so micro-batches add up to a mean.

``cold_start_samples(env, encoder, requests, settings, seed)`` is where a method contributes samples of
its own to the SFT cold start (GCD's judge samples, ``--cold-start.judge-samples``).

Under ``--async-steps`` (:mod:`agentgym.train.run.pipeline`) ``after_rollout`` runs on the
rollout thread, with ``ctx.policy`` the behaviour policy that played the batch and, for an
extension that overrides it, only once the learner has finished the step before; the other step
hooks run on the learner's thread, where ``ctx.policy`` is the current weights' policy and
``ctx.collect`` / ``ctx.next_requests`` are refused. An extension whose prompt rewrite has state
gives the rollout thread a copy of it (``frozen_system_prompt``); one that samples in its hooks
says so (``generates_in_hooks``).

What a method decides about an episode or a turn (a task value, a step advantage, a label) it may
note in :attr:`Episode.signals <agentgym.train.rollout.episodes.Episode.signals>` or
``Episode.turn_signals`` from any step hook: training never reads them; the saved episodes
(``--log-episodes``, :mod:`agentgym.train.run.episode_log`) keep them for ``agentgym view``.

``metrics()`` is merged into the step's logged metrics and ``state_dict``/``load_state_dict`` go
into checkpoints (tensors too: a value head's weights resume bitwise), so extensions resume
exactly. ``agentgym eval`` rebuilds a checkpoint's extensions the same way
(:func:`agentgym.train.methods.recorded_extensions`: the recorded settings, then
``load_state_dict``) and evaluates with their ``system_prompt``, printing ``system_prompt_note()``.
:class:`Extensions` chains several in order.

What an extension reads of the run is a typed :class:`~agentgym.train.view.RunView` (output
directory, sampling, layout, device and autocast, rank and world size, tokenizer): ``ctx.run`` in
the step hooks, the ``run`` argument of ``build``.

Data-parallel (``torchrun``), each rank runs the hooks on its own groups, with its own state
(saved per rank); ``summed_metrics`` names the metrics that count things, summed over ranks where
the others are averaged (:func:`agentgym.train.optim.distributed.reduce_metrics`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from agentgym.agents.base import Policy
from agentgym.train.base.world import Dist
from agentgym.train.rollout.episodes import Episode, GroupRequest
from agentgym.train.rollout.samples import Sample
from agentgym.train.view import RunView

if TYPE_CHECKING:
    import torch
    from transformers import PreTrainedTokenizerBase

    from agentgym.train.config.coldstart import SFTConfig
    from agentgym.train.rollout.chat import ChatEncoder


@dataclass
class SampleKind:
    """How the samples of one extra kind enter the loss."""

    weight: float = 1.0
    """Its loss term's weight (GCD's lambda)."""
    loss: Any = None
    """Its :class:`agentgym.train.optim.loss.LossConfig` (None: the policy's)."""


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
    policy: Policy | None
    """The policy that plays the episodes (``generate`` under ``run.autocast()``, as the rollout)."""
    tokenizer: PreTrainedTokenizerBase | None
    """The trained model's tokenizer."""
    group_size: int
    """Episodes per task."""
    num_groups: int
    """Tasks per step, on this rank (``--num-groups`` split across ``torchrun``'s processes)."""
    rng: np.random.Generator
    """Randomness of this step for the extension's own draws (seeded by run seed and step, so a
    resumed run draws the same)."""
    run: RunView
    """The run's settings, typed (:class:`~agentgym.train.view.RunView`)."""
    info: dict = field(default_factory=dict)
    """Scratch space shared by the extensions of one step."""

    @property
    def dist(self) -> Dist:
        """This process's place in the run (rank, world size, collectives): ``run.dist``."""
        return self.run.dist


@dataclass
class MicroBatch:
    """One forward pass of the update, as :meth:`TrainerExtension.extra_loss` sees it. Rows are
    the samples, right-padded; position t of ``logprobs`` scores token t + 1."""

    kind: str
    """the samples' kind (a micro-batch holds one kind: ``policy``, GCD's ``judge``...)"""
    samples: Sequence[Sample]
    input_ids: torch.Tensor
    """``[batch, length]``"""
    attention_mask: torch.Tensor
    """``[batch, length]``, 0 on padding"""
    logprobs: torch.Tensor
    """``[batch, length - 1]`` next-token log-probabilities under the current policy, with grad"""
    hidden: torch.Tensor | None = None
    """``[batch, length, hidden]`` the policy's last hidden state (after its final norm), with
    grad; only when an extension of the batch has ``needs_hidden_states``"""


class TrainerExtension:
    """Base class: every hook does nothing."""

    name: str = "extension"
    sample_kinds: dict[str, SampleKind] = {}
    summed_metrics: frozenset[str] = frozenset()
    """metric names that count things (groups, samples): summed over ranks, not averaged"""
    needs_hidden_states: bool = False
    """:meth:`extra_loss` reads :attr:`MicroBatch.hidden` (the update then asks the model for it)"""
    generates_in_hooks: bool = False
    """:meth:`transform_advantages` or :meth:`extra_samples` sample from ``ctx.policy`` (GCD's judge
    and its summary). Under ``--async-steps`` the learner then waits for the rollout thread to
    pause before those hooks, so the two never draw from the random stream at once."""

    def build(self, run: RunView, model) -> list[dict[str, Any]]:
        """Once per run, in setup, after the policy ``model`` is loaded (on ``run.device``) and
        before the optimizer is made: build the extension's own modules (PPO's value head) and
        return their trainable parameters as optimizer parameter groups, ``{"params": [...]}``
        plus any AdamW setting of their own (``lr``...; unset ones are the run's). They are
        trained by the same optimizer steps as the policy, with one gradient clip over all of
        them, and their optimizer state is checkpointed with the policy's; their weights go into
        checkpoints through :meth:`state_dict`. ``[]`` (the default): no parameters of its own."""
        return []

    def system_prompt(self, prompt: str) -> str:
        return prompt

    def frozen_system_prompt(self) -> Callable[[str], str]:
        """:meth:`system_prompt` as it rewrites prompts now, kept as it is when the extension's
        state changes later: what the rollout thread of ``--async-steps`` plays a batch with, so
        its prompts lag the learner by as many steps as its weights. The default returns
        :meth:`system_prompt` itself, right for an extension whose rewrite has no state."""
        return self.system_prompt

    def after_rollout(self, ctx: StepContext, episodes: list[Episode]) -> list[Episode]:
        return episodes

    def transform_advantages(self, ctx: StepContext, advantages: list[np.ndarray],
                             episodes: Sequence[Episode]) -> list[np.ndarray]:
        return advantages

    def extra_samples(self, ctx: StepContext, episodes: Sequence[Episode]) -> list[Sample]:
        return []

    def loss_items(self, sample: Sample) -> int:
        """How many terms of :meth:`extra_loss` ``sample`` holds (PPO: one value per turn of a
        policy sample of this step). The update sums it over its optimizer batch, on every rank,
        before the first backward pass, and divides the extra loss by it. 0 (the default): none,
        and :meth:`extra_loss` is not called for a micro-batch whose samples all hold none."""
        return 0

    def extra_loss(self, batch: MicroBatch) -> tuple[torch.Tensor, dict[str, float]] | None:
        """A loss term of the extension's own on one micro-batch of the update: the *sum* over the
        micro-batch's :meth:`loss_items` of its per-item loss, its weight included, with grad (to
        the policy through ``batch.logprobs`` / ``batch.hidden``, and to the extension's own
        parameters); the update adds ``term / items`` (the optimizer batch's items) to the
        micro-batch's loss before its backward pass. The metrics are sums over the same items,
        logged as their mean per item (e.g. ``{"loss/value": ...}``). None: no term here."""
        return None

    def cold_start_samples(self, env, encoder: ChatEncoder, requests: Sequence[tuple[int, dict]],
                           settings: SFTConfig, seed: int) -> tuple[list[Sample], str]:
        """Samples the extension adds to the SFT cold start, and a line saying what they are (empty:
        none). ``env`` is the cold start's env (made with ``expert=True``), ``requests`` the ``(task
        seed, reset options)`` of the cold start's own tasks, so RL's task split stays as it is;
        ``settings`` the cold start's settings, ``seed`` the run's."""
        return [], ""

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
        self.needs_hidden_states = any(e.needs_hidden_states for e in self.items)
        self.generates_in_hooks = any(e.generates_in_hooks for e in self.items)
        for e in self.items:
            clash = set(e.sample_kinds) & (set(self.sample_kinds) | {"policy"})
            if clash:
                raise ValueError(f"sample kind(s) {sorted(clash)} of {e.name!r} are already taken")
            self.sample_kinds.update(e.sample_kinds)

    def build(self, run, model):
        return [group for e in self.items for group in e.build(run, model)]

    def system_prompt(self, prompt):
        for e in self.items:
            prompt = e.system_prompt(prompt)
        return prompt

    def frozen_system_prompt(self):
        rewrites = [e.frozen_system_prompt() for e in self.items]

        def rewrite(prompt: str) -> str:
            for r in rewrites:
                prompt = r(prompt)
            return prompt

        return rewrite

    @property
    def rewrites_rollouts(self) -> bool:
        """Whether an extension has an :meth:`after_rollout` of its own (it may then read or change
        state the learner's hooks also use, so under ``--async-steps`` it runs after the previous
        step is done)."""
        return any(e.rewrites_rollouts if isinstance(e, Extensions)
                   else type(e).after_rollout is not TrainerExtension.after_rollout for e in self.items)

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

    def cold_start_samples(self, env, encoder, requests, settings, seed):
        samples, notes = [], []
        for e in self.items:
            more, note = e.cold_start_samples(env, encoder, requests, settings, seed)
            samples += more
            notes += [note] if note else []
        return samples, "; ".join(notes)

    def flat(self) -> list[TrainerExtension]:
        """Every extension, nested chains unrolled, in order."""
        return [t for e in self.items for t in (e.flat() if isinstance(e, Extensions) else [e])]

    def defining(self, hook: str) -> list[TrainerExtension]:
        """The extensions that define ``hook`` (not the no-op default), in order."""
        return [e for e in self.flat() if getattr(type(e), hook) is not getattr(TrainerExtension, hook)]

    def loss_terms(self) -> list[TrainerExtension]:
        """The extensions that define an :meth:`extra_loss`, each asked by the update with its own
        item count (so each term is its own mean)."""
        return self.defining("extra_loss")

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
