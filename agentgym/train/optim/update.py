"""One policy update from a batch of samples: forward passes, the PPO-clip loss, the optimizer step.

Samples are padded on the right into micro-batches; a micro-batch holds samples of one ``kind``
only, and each kind's loss is normalized over all of that kind's tokens (or sequences) in the
batch, so gradient accumulation gives exactly the full-batch loss
``sum_kind loss_weights[kind] * L_kind``.

Data-parallel (``dist`` active, :mod:`agentgym.train.optim.distributed`): those counts are all-reduced
first, so a rank's loss is its share of the *global* batch's loss, and the gradients are summed
across ranks before clipping; with ``--fsdp`` the reduce-scatter of every backward sums them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch
from torch.utils.checkpoint import checkpoint

from agentgym.agents.scoring import candidate_scores
from agentgym.train.base.device import autocast_context
from agentgym.train.base.world import Dist
from agentgym.train.hooks import MicroBatch, TrainerExtension
from agentgym.train.optim.distributed import all_reduce_grads
from agentgym.train.optim.fsdp import gathered, is_sharded
from agentgym.train.optim.loss import policy_loss
from agentgym.train.rollout.samples import Sample, ScoredReply

if TYPE_CHECKING:
    from agentgym.train.config.optim import LossConfig

STAT_KEYS = ("loss", "tokens", "pg_sum", "kl_sum", "clipped_sum", "ratio_sum")


def pad_batch(samples: Sequence[Sample], pad_id: int, device) -> dict[str, torch.Tensor]:
    """Right-padded ids and attention mask, plus the loss mask and advantages aligned with the
    next-token predictions (position t predicts token t + 1)."""
    width = max(len(s.input_ids) for s in samples)
    ids = torch.full((len(samples), width), pad_id, dtype=torch.long)
    attention = torch.zeros((len(samples), width), dtype=torch.long)
    mask = torch.zeros((len(samples), width), dtype=torch.float32)
    for i, s in enumerate(samples):
        n = len(s.input_ids)
        ids[i, :n] = torch.tensor(s.input_ids, dtype=torch.long)
        attention[i, :n] = 1
        mask[i, :n] = torch.tensor(s.loss_mask, dtype=torch.float32)
    if any(s.token_advantages is not None for s in samples):
        # per-token advantages, shifted like the loss mask (position t predicts token t + 1)
        adv = torch.zeros((len(samples), width), dtype=torch.float32)
        for i, s in enumerate(samples):
            n = len(s.input_ids)
            adv[i, :n] = torch.tensor(s.token_advantages if s.token_advantages is not None else [s.advantage] * n,
                                      dtype=torch.float32)
        adv = adv[:, 1:]
    else:
        adv = torch.tensor([s.advantage for s in samples], dtype=torch.float32)
    out = {"input_ids": ids.to(device), "attention_mask": attention.to(device),
           "loss_mask": mask[:, 1:].to(device), "advantages": adv.to(device)}
    allowed = allowed_masks(samples, width, device)
    if allowed is not None:
        out["allowed"] = allowed
    scored = [(row, reply) for row, s in enumerate(samples) for reply in s.scored or ()]
    if scored:
        out["scored"] = scored
    return out


ScoredRows = list[tuple[int, ScoredReply]]
"""A batch's replies chosen whole among candidates: ``(row, reply)`` for each (``pad_batch(...)["scored"]``)."""

AllowedIds = tuple[torch.Tensor, torch.Tensor, torch.Tensor]
"""A batch's constrained positions: ``where`` (``[batch, length - 1]`` bool, aligned with the
next-token predictions), and for each position it marks (in row-major order) ``ids`` (``[n, k]``,
the ids the sampler could choose there, padded) and ``valid`` (``[n, k]``, False on the padding)."""


def allowed_masks(samples: Sequence[Sample], width: int, device) -> AllowedIds | None:
    """The constrained positions of a batch padded to ``width`` (:data:`AllowedIds`), from the
    samples' :attr:`~agentgym.train.rollout.samples.Sample.allowed_token_ids`; None when none is."""
    if all(s.allowed_token_ids is None for s in samples):
        return None
    where = torch.zeros((len(samples), width), dtype=torch.bool)
    rows: list[list[int]] = []
    for i, s in enumerate(samples):
        for t, ids in enumerate(s.allowed_token_ids or ()):
            if t > 0 and ids is not None:  # token t is predicted at position t - 1
                where[i, t] = True
                rows.append(list(ids))
    k = max((len(r) for r in rows), default=1)
    ids = torch.zeros((len(rows), k), dtype=torch.long)
    valid = torch.zeros((len(rows), k), dtype=torch.bool)
    for j, r in enumerate(rows):
        ids[j, :len(r)] = torch.tensor(r, dtype=torch.long)
        valid[j, :len(r)] = True
    return where[:, 1:].to(device), ids.to(device), valid.to(device)


def token_logprobs(model, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                   temperature: float = 1.0) -> torch.Tensor:
    """log p(token t+1 | tokens <= t) for every position, ``[batch, length - 1]``, in float32.

    Logits are divided by the sampling temperature so these match the distribution that sampled.
    """
    return logprobs_and_hidden(model, input_ids, attention_mask, temperature)[0]


def logprobs_and_hidden(model, input_ids: torch.Tensor, attention_mask: torch.Tensor, temperature: float = 1.0,
                        hidden: bool = False, keep: torch.Tensor | None = None, allowed: AllowedIds | None = None,
                        scored: ScoredRows | None = None, scored_samples: int = 0, scored_recorded: bool = False
                        ) -> tuple[torch.Tensor, torch.Tensor | None]:
    """:func:`token_logprobs`, and with ``hidden`` the model's last hidden state (``[batch, length,
    hidden]``, after its final norm) from the same forward pass (None without).

    ``keep`` (a ``[batch, length - 1]`` mask, with ``hidden`` False): the caller reads only the
    positions it keeps, and the others hold 0. With a :func:`plain_head` only those go through the
    output layer and its log-softmax: in a windowed embodied batch the reply is a few tokens after
    a prompt of hundreds, and that layer over every position was 15% of a tiny model's update
    (`benchmarks/window_update.py`).

    ``allowed`` (:data:`AllowedIds`, a batch's ``pad_batch(...)["allowed"]``): at the positions it
    marks the log-softmax is taken over the ids the sampler could choose only (a constrained
    reply's mask), as the sampler took it. Those positions must be among ``keep``'s.

    ``scored`` (:data:`ScoredRows`, a batch's ``pad_batch(...)["scored"]``): each reply chosen whole
    among candidates has its last token's log-probability less the log-sum-exp of the candidates'
    scores after its prompt, so its tokens' sum is its log-probability under the candidates'
    softmax (:mod:`agentgym.agents.scoring`); the candidates are scored with gradients, from the
    prompt's cache (all of them, or ``scored_samples`` drawn from the policy, with ``scored_recorded``
    from the scores the sampler recorded: :func:`scored_normalizers`).
    """
    if keep is not None and not hidden:
        keep = keep.bool()
        picked = _picked_logprobs(_next_token_logits(model, input_ids, attention_mask)(keep),
                                  input_ids[:, 1:][keep], temperature,
                                  None if allowed is None else _kept(allowed, keep))
        lp = torch.zeros(keep.shape, dtype=torch.float32, device=picked.device).masked_scatter(keep, picked)
        return _less_normalizers(model, lp, input_ids, scored, temperature, scored_samples, scored_recorded), None
    extra = {"output_hidden_states": True} if hidden else {}
    out = model(input_ids=input_ids, attention_mask=attention_mask, use_cache=False, **extra)
    lp = _logprobs(out.logits, input_ids, temperature, allowed)
    return _less_normalizers(model, lp, input_ids, scored, temperature, scored_samples, scored_recorded), (out.hidden_states[-1] if hidden else None)


def _less_normalizers(model, lp: torch.Tensor, input_ids: torch.Tensor, scored: ScoredRows | None,
                      temperature: float, samples: int = 0, recorded: bool = False) -> torch.Tensor:
    """``lp`` with each scored reply's last token less its candidates' log-sum-exp
    (:func:`scored_normalizers`)."""
    if not scored:
        return lp
    normalizers = [norm for norm, _ in scored_normalizers(model, input_ids, scored, temperature, samples, recorded)]
    rows = [row for row, _ in scored]
    positions = [reply.start + reply.length - 2 for _, reply in scored]  # position t predicts token t + 1
    index = (torch.tensor(rows, device=lp.device), torch.tensor(positions, device=lp.device))
    return lp - torch.zeros_like(lp).index_put(index, torch.stack(normalizers).to(lp.dtype), accumulate=True)


def scored_candidates(model, input_ids: torch.Tensor, scored: ScoredRows, temperature: float = 1.0
                      ) -> list[torch.Tensor]:
    """Each scored reply's candidates' scores after its prompt (``[n]`` each; gradients flow when
    they are enabled).

    With gradients, each reply's scoring is recomputed in the backward pass rather than kept
    (``torch.utils.checkpoint``): a ScienceWorld turn lists hundreds of actions, and the graph of
    every candidate token's log-softmax over the vocabulary, for every turn of a micro-batch at
    once, ran a tiny model's cold start out of 23 GB. So a micro-batch holds the scores alone until
    its backward pass, which rebuilds one reply's graph at a time."""
    out = []
    for row, reply in scored:
        prefix = input_ids[row, :reply.start].tolist()
        if torch.is_grad_enabled():
            out.append(checkpoint(candidate_scores, model, prefix, reply.candidates, temperature, use_reentrant=False))
        else:
            out.append(candidate_scores(model, prefix, reply.candidates, temperature))
    return out


def scored_normalizers(model, input_ids: torch.Tensor, scored: ScoredRows, temperature: float = 1.0,
                       samples: int = 0, recorded: bool = False) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Each scored reply's ``(logsumexp_j S_j, the scores S)`` after its prompt.

    ``samples`` (with gradients enabled, and fewer than the reply's candidates): the value stays
    exact and its gradient, ``E_{j ~ pi}[grad S_j]``, is estimated from ``samples`` candidates drawn
    from ``pi = softmax(S)`` (with replacement; torch's global random stream), the only ones scored
    with a graph. The estimate is unbiased, so the policy gradient stays unbiased; a ScienceWorld
    kitchen lists 1,263 actions, and scoring all of them with a graph was most of an update. The
    other candidates are scored without a graph, or, with ``recorded`` (the weights are the ones
    that sampled: one optimizer step per rollout), not at all: the reply's recorded scores
    (:attr:`ScoredReply.scores`) are these weights' own. 0: every candidate carries the gradient."""
    if samples <= 0 or not torch.is_grad_enabled():
        return [(torch.logsumexp(s, dim=0), s) for s in scored_candidates(model, input_ids, scored, temperature)]
    out = []
    for row, reply in scored:
        if len(reply.candidates) <= samples:
            (scores,) = scored_candidates(model, input_ids, [(row, reply)], temperature)
            out.append((torch.logsumexp(scores, dim=0), scores))
            continue
        prefix = input_ids[row, :reply.start].tolist()
        if recorded and reply.scores is not None:
            scores = torch.tensor(reply.scores, dtype=torch.float32, device=input_ids.device)
        else:
            with torch.no_grad():
                scores = candidate_scores(model, prefix, reply.candidates, temperature)
        draws = torch.multinomial(torch.softmax(scores.double(), dim=0), samples, replacement=True)
        picked, counts = torch.unique(draws, return_counts=True)
        some = checkpoint(candidate_scores, model, prefix, [reply.candidates[j] for j in picked.tolist()],
                          temperature, use_reentrant=False)
        estimate = (counts.to(some.dtype) / samples * some).sum()
        out.append((torch.logsumexp(scores, dim=0) + (estimate - estimate.detach()), scores))
    return out


def sampled_softmax_normalizers(model, input_ids: torch.Tensor, scored: ScoredRows, negatives: int,
                                temperature: float = 1.0) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Each scored reply's log-sum-exp over itself and ``negatives`` other candidates drawn uniformly
    without replacement (torch's global random stream), the others' terms weighted by
    ``(n - 1) / negatives`` so that the sum inside estimates the whole list's without bias: a
    sampled softmax, the cold start's cheap stand-in for every candidate. Returns
    ``(normalizer, the scores of [the reply, the drawn ones])``, the reply's first; a reply with no
    more than ``negatives`` others is scored against all of them (the normalizer exact)."""
    out = []
    for row, reply in scored:
        others = [j for j in range(len(reply.candidates)) if j != reply.pick]
        if len(others) > negatives:
            others = [others[k] for k in torch.randperm(len(others))[:negatives].tolist()]
        part = ScoredReply(reply.start, [reply.candidates[j] for j in [reply.pick, *others]], 0)
        (scores,) = scored_candidates(model, input_ids, [(row, part)], temperature)
        # each drawn term stands for (n - 1) / k of the list's others (1 when all are drawn)
        weights = torch.full_like(scores, math.log((len(reply.candidates) - 1) / max(len(others), 1)))
        weights[0] = 0.0
        out.append((torch.logsumexp(scores + weights, dim=0), scores))
    return out


def last_hidden_state(model, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """The model's last hidden state, ``[batch, length, hidden]``: what :func:`logprobs_and_hidden`
    gives the update, for an extension's own passes (PPO's values before the update)."""
    out = model(input_ids=input_ids, attention_mask=attention_mask, use_cache=False, output_hidden_states=True)
    return out.hidden_states[-1]


def _kept(allowed: AllowedIds, keep: torch.Tensor) -> AllowedIds:
    """``allowed`` at the positions ``keep`` keeps (in the order boolean indexing takes them)."""
    where, ids, valid = allowed
    rows = keep[where]  # which of the constrained positions are kept, in their row-major order
    return where[keep], ids[rows], valid[rows]


def _logprobs(logits: torch.Tensor, input_ids: torch.Tensor, temperature: float,
              allowed: AllowedIds | None = None) -> torch.Tensor:
    return _picked_logprobs(logits[:, :-1], input_ids[:, 1:], temperature, allowed)


def _picked_logprobs(logits: torch.Tensor, targets: torch.Tensor, temperature: float,
                     allowed: AllowedIds | None = None) -> torch.Tensor:
    """log-softmax of ``logits`` (``[..., vocab]``, divided by the sampling temperature) at ``targets``;
    at the positions ``allowed`` marks (its ``where`` shaped like ``targets``), over its ids only."""
    logits = logits.float()
    if temperature not in (0, 1):
        logits = logits / temperature
    norm = torch.logsumexp(logits, dim=-1)
    if allowed is not None:
        where, ids, valid = allowed
        if bool(where.any()):
            masked = logits[where].gather(-1, ids).masked_fill(~valid, float("-inf"))
            norm = norm.index_put((where,), torch.logsumexp(masked, dim=-1))
    return logits.gather(-1, targets.unsqueeze(-1)).squeeze(-1) - norm


def plain_head(model) -> bool:
    """Whether the model's logits are its output layer applied to its decoder's last hidden state,
    so the logits of a few positions can be computed alone. Checked once, numerically, on a short
    input (and cached on the model): a model that post-processes its logits (soft-capping, a logit
    scale) fails the check and keeps the full forward.
    """
    cached = getattr(model, "_agentgym_plain_head", None)
    if cached is not None:
        return cached
    ok = False
    if not is_sharded(model):
        try:
            decoder, head = model.get_decoder(), model.get_output_embeddings()
            if decoder is not None and head is not None and decoder is not model:
                device = next(model.parameters()).device
                ids = torch.arange(1, 9, device=device).unsqueeze(0) % model.config.vocab_size
                was_training = model.training
                model.eval()
                try:
                    with torch.no_grad():
                        full = model(input_ids=ids, use_cache=False).logits.float()
                        mine = head(decoder(input_ids=ids, use_cache=False).last_hidden_state).float()
                finally:
                    model.train(was_training)
                ok = full.shape == mine.shape and bool(torch.allclose(full, mine, atol=1e-4, rtol=1e-4))
        except (AttributeError, TypeError, NotImplementedError):
            ok = False
    model._agentgym_plain_head = ok
    return ok


def masked_next_token_logits(model, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                             loss_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The next-token logits (float32, ``[n, vocab]``) of the positions ``loss_mask`` keeps, and
    their targets (``[n]``). With a :func:`plain_head` only those positions go through the output
    layer: on a small model with a large vocabulary that layer is most of a training step, and in
    SFT most positions are prompt and observation tokens that carry no loss.
    """
    keep = loss_mask.bool()
    return _next_token_logits(model, input_ids, attention_mask)(keep), input_ids[:, 1:][keep]


def _next_token_logits(model, input_ids: torch.Tensor, attention_mask: torch.Tensor):
    """One forward pass; returns ``logits_of(keep)``, the float32 next-token logits of the positions
    a ``[batch, len - 1]`` boolean mask keeps. With a :func:`plain_head` only those positions go
    through the output layer."""
    if plain_head(model):
        hidden = model.get_decoder()(input_ids=input_ids, attention_mask=attention_mask,
                                     use_cache=False).last_hidden_state[:, :-1]
        head = model.get_output_embeddings()
        return lambda keep: head(hidden[keep]).float()
    full = model(input_ids=input_ids, attention_mask=attention_mask, use_cache=False).logits[:, :-1]
    return lambda keep: full[keep].float()


def reply_and_prompt_logits(model, input_ids: torch.Tensor, attention_mask: torch.Tensor, loss_mask: torch.Tensor
                            ) -> tuple[tuple[torch.Tensor, torch.Tensor], tuple[torch.Tensor, torch.Tensor]]:
    """Like :func:`masked_next_token_logits`, and also the logits and targets of every other real
    token (the prompt and observations: positions ``loss_mask`` leaves out whose target is not
    padding), from the same forward pass."""
    reply = loss_mask.bool()
    prompt = attention_mask[:, 1:].bool() & ~reply
    logits_of = _next_token_logits(model, input_ids, attention_mask)
    targets = input_ids[:, 1:]
    return (logits_of(reply), targets[reply]), (logits_of(prompt), targets[prompt])



def _loss_tokens(s: Sample) -> int:
    """The sample's tokens that carry loss after the next-token shift (a first token has no predictor)."""
    return s.num_loss_tokens - (1 if s.loss_mask and s.loss_mask[0] else 0)


def _normalizers(samples: Sequence[Sample], configs: Mapping[str, LossConfig]) -> tuple[dict[str, float], list[float]]:
    """Per kind, what its loss is divided by (token-mean: loss tokens; seq-mean: samples;
    episode-mean: episodes), and per sample its episode-mean weight, 1 / its episode's loss tokens
    (a sample with no episode, ``episode == -1``, is an episode of its own)."""
    keys = [(s.kind, s.episode if s.episode >= 0 else ("sample", i)) for i, s in enumerate(samples)]
    episode_tokens: dict[tuple, int] = {}
    for key, s in zip(keys, samples):
        episode_tokens[key] = episode_tokens.get(key, 0) + _loss_tokens(s)
    normalizers: dict[str, float] = {}
    for s in samples:
        aggregation = configs[s.kind].aggregation
        if aggregation != "episode-mean":
            normalizers[s.kind] = normalizers.get(s.kind, 0.0) + (_loss_tokens(s) if aggregation == "token-mean" else 1)
    for kind, _ in episode_tokens:
        if configs[kind].aggregation == "episode-mean":
            normalizers[kind] = normalizers.get(kind, 0.0) + 1
    return normalizers, [1.0 / max(episode_tokens[key], 1) for key in keys]


def _micro_batches(samples: Sequence[Sample], size: int) -> list[list[int]]:
    """Indices of micro-batches, each of one kind, kinds in order of first appearance. Within a kind
    the samples go by length, so a micro-batch pads its short rows to a near length (windowed
    samples differ by hundreds of tokens); every micro-batch adds to one accumulated gradient, so
    their grouping changes nothing but the padding."""
    by_kind: dict[str, list[int]] = {}
    for i, s in enumerate(samples):
        by_kind.setdefault(s.kind, []).append(i)
    ordered = [sorted(idx, key=lambda i: len(samples[i].input_ids)) for idx in by_kind.values()]
    return [idx[j:j + size] for idx in ordered for j in range(0, len(idx), size)]


@torch.no_grad()
def sample_logprobs(model, samples: Sequence[Sample], pad_id: int, micro_batch_size: int,
                    temperature: float = 1.0, bf16: bool = False) -> list[torch.Tensor]:
    """Per-sample next-token logprobs under ``model`` (no grad): for the reference model, or the
    pre-update policy when a batch takes several optimizer steps. Only the loss mask's positions are
    computed where the model allows (:func:`logprobs_and_hidden`'s ``keep``); the rest may be 0."""
    device = next(model.parameters()).device
    out: list[torch.Tensor | None] = [None] * len(samples)
    was_training = model.training
    model.eval()
    try:
        # FSDP: ranks hold different sample counts, so the weights are gathered once rather than
        # per forward (a collective every rank would have to join the same number of times)
        with gathered(model):
            for idx in _micro_batches(samples, micro_batch_size):
                batch = pad_batch([samples[i] for i in idx], pad_id, device)
                with autocast_context(device, bf16):
                    lp = logprobs_and_hidden(model, batch["input_ids"], batch["attention_mask"], temperature,
                                             keep=batch["loss_mask"], allowed=batch.get("allowed"),
                                             scored=batch.get("scored"))[0]
                for row, i in enumerate(idx):
                    out[i] = lp[row, : len(samples[i].input_ids) - 1].detach()
    finally:
        model.train(was_training)
    return out  # type: ignore[return-value]


def behaviour_logprobs(model, samples: Sequence[Sample], pad_id: int, micro_batch_size: int,
                       temperature: float = 1.0, bf16: bool = False) -> tuple[list[torch.Tensor], int]:
    """Per-sample next-token logprobs of the policy that sampled each sample, as recorded at
    sampling (:attr:`Sample.behaviour_logprobs`, shifted like :func:`sample_logprobs`'s); a sample
    without them gets ``model``'s own (no grad). Returns them and how many samples had none."""
    out: list[torch.Tensor | None] = [None if s.behaviour_logprobs is None
                                      else torch.tensor(s.behaviour_logprobs[1:], dtype=torch.float32)
                                      for s in samples]
    missing = [i for i, row in enumerate(out) if row is None]
    if missing:
        computed = sample_logprobs(model, [samples[i] for i in missing], pad_id, micro_batch_size, temperature, bf16)
        for i, row in zip(missing, computed):
            out[i] = row
    return out, len(missing)


def _stack(rows: Sequence[torch.Tensor], width: int, device) -> torch.Tensor:
    out = torch.zeros((len(rows), width), dtype=torch.float32, device=device)
    for i, r in enumerate(rows):
        out[i, : len(r)] = r.to(device)
    return out


@dataclass(frozen=True)
class UpdatePlan:
    """One :func:`train_step`'s batch, worked out before its first forward pass: its micro-batches
    and, per sample kind, the loss settings, weight and normalizer (over every rank's samples), and
    the extensions' loss terms with their item counts; plus what every forward pass reads."""

    samples: Sequence[Sample]
    micro_batches: list[list[int]]
    """indices into ``samples``, each micro-batch of one kind (:func:`_micro_batches`)"""
    padding: int
    """FSDP: the empty forward and backward passes that follow this rank's own, so that it runs as
    many as the busiest rank (0 otherwise)"""
    weights: dict[str, float]
    """each kind's loss weight (``policy``: 1.0 unless set)"""
    configs: dict[str, LossConfig]
    """each kind's loss settings"""
    normalizers: dict[str, float]
    """per kind of the (global) batch, what its loss is divided by (:func:`_normalizers`)"""
    episode_weights: list[float]
    """per sample, its episode-mean weight"""
    loss_terms: Sequence[TrainerExtension]
    term_items: list[list[int]]
    """per loss term, per sample, its loss items"""
    term_totals: list[float]
    """per loss term, the (global) batch's loss items: what its extra loss is divided by"""
    device: torch.device
    pad_id: int
    temperature: float
    bf16: bool
    old_logprobs: Sequence[torch.Tensor] | None
    ref_logprobs: Sequence[torch.Tensor] | None

    def terms_in(self, idx: Sequence[int]) -> list[tuple[TrainerExtension, float]]:
        """The loss terms with an item in the micro-batch ``idx``, each with its batch's item count."""
        return [(term, total) for term, per_sample, total in zip(self.loss_terms, self.term_items, self.term_totals)
                if any(per_sample[i] for i in idx)]


def train_step(
    model,
    optimizer,
    samples: Sequence[Sample],
    cfg: LossConfig,
    pad_id: int,
    micro_batch_size: int = 8,
    temperature: float = 1.0,
    ref_logprobs: Sequence[torch.Tensor] | None = None,
    old_logprobs: Sequence[torch.Tensor] | None = None,
    loss_weights: Mapping[str, float] | None = None,
    max_grad_norm: float | None = 1.0,
    bf16: bool = False,
    loss_configs: Mapping[str, LossConfig] | None = None,
    dist: Dist | None = None,
    loss_terms: Sequence[TrainerExtension] = (),
) -> dict[str, float]:
    """One optimizer step on ``samples``; returns metrics.

    ``old_logprobs`` None means the samples were drawn from the current weights (one update per
    rollout batch), so the ratio's denominator is the current logprob, detached.
    ``loss_configs[kind]`` is the loss of samples of that kind (default: ``cfg``), so GCD's judge
    samples can clip and aggregate differently from the policy's.
    ``loss_terms``: extensions whose :meth:`~agentgym.train.hooks.TrainerExtension.extra_loss` is
    added to each micro-batch holding any of their ``loss_items``, divided by the batch's item count
    (PPO's value loss); the optimizer's every parameter group (an extension's own parameters too)
    is clipped and stepped.
    With an active ``dist`` every rank calls this together with its own samples (none is allowed);
    the step and the returned metrics are those of all ranks' samples as one batch.
    """
    dist = dist or Dist()
    plan = _plan_update(model, samples, cfg, dist, micro_batch_size=micro_batch_size, loss_weights=loss_weights,
                        loss_configs=loss_configs, loss_terms=loss_terms, pad_id=pad_id, temperature=temperature,
                        bf16=bf16, old_logprobs=old_logprobs, ref_logprobs=ref_logprobs)
    model.train()
    optimizer.zero_grad(set_to_none=True)
    sums: dict[str, float] = {}
    term_sums: dict[str, float] = {}
    for idx in plan.micro_batches:
        _micro_batch_backward(model, plan, idx, sums, term_sums)
    for _ in range(plan.padding):
        _empty_backward(model, plan)
    grad_norm = _optimizer_step(model, optimizer, dist, max_grad_norm)
    if dist.active:
        sums, term_sums = _global_sums(plan, dist, sums, term_sums)
    return _step_metrics(plan, grad_norm, sums, term_sums)


def _plan_update(model, samples: Sequence[Sample], cfg: LossConfig, dist: Dist, *, micro_batch_size: int,
                 loss_weights: Mapping[str, float] | None, loss_configs: Mapping[str, LossConfig] | None,
                 loss_terms: Sequence[TrainerExtension], pad_id: int, temperature: float, bf16: bool,
                 old_logprobs: Sequence[torch.Tensor] | None, ref_logprobs: Sequence[torch.Tensor] | None
                 ) -> UpdatePlan:
    """:func:`train_step`'s :class:`UpdatePlan`; data-parallel, the counts are all-reduced here."""
    if not samples and not dist.active:
        raise ValueError("train_step needs at least one sample")
    weights = {"policy": 1.0, **(loss_weights or {})}
    unknown = {s.kind for s in samples} - set(weights)
    if unknown:
        raise ValueError(f"no loss weight for sample kinds {sorted(unknown)}")
    configs = {kind: (loss_configs or {}).get(kind, cfg) for kind in weights}
    normalizers, episode_weights = _normalizers(samples, configs)
    # each extension's loss items per sample, and in the whole batch (every rank's)
    items = [[term.loss_items(s) for s in samples] for term in loss_terms]
    term_totals = [float(sum(per_sample)) for per_sample in items]
    if dist.active:
        normalizers, term_totals = _global_counts(dist, samples, sorted(weights), normalizers, term_totals)
    batches = _micro_batches(samples, micro_batch_size)
    # FSDP gathers weights and reduce-scatters gradients in every forward and backward, so every
    # rank runs as many as the busiest one (empty ones, with zero loss, after its own)
    padding = dist.max_int(len(batches)) - len(batches) if is_sharded(model) else 0
    return UpdatePlan(samples, batches, padding, weights, configs, normalizers, episode_weights, loss_terms,
                      items, term_totals, next(model.parameters()).device, pad_id, temperature, bf16,
                      old_logprobs, ref_logprobs)


def _global_counts(dist: Dist, samples: Sequence[Sample], kinds: list[str], normalizers: dict[str, float],
                   term_totals: list[float]) -> tuple[dict[str, float], list[float]]:
    """The global batch's loss tokens (or sequences) per kind any rank has, and its loss items per
    extension: one all-reduce of this rank's counts."""
    present = [float(any(s.kind == k for s in samples)) for k in kinds]
    totals = dist.sum_floats([normalizers.get(k, 0.0) for k in kinds] + present + term_totals)
    return ({k: totals[j] for j, k in enumerate(kinds) if totals[len(kinds) + j] > 0},
            totals[2 * len(kinds):])


def _micro_batch_backward(model, plan: UpdatePlan, idx: list[int], sums: dict[str, float],
                          term_sums: dict[str, float]) -> None:
    """One micro-batch: its forward pass, its kind's weighted policy loss plus the extensions' loss
    terms, and their backward pass (the gradient accumulates). Adds the loss's stats to ``sums``
    and the terms' metrics (divided by their item counts) to ``term_sums``."""
    kind = plan.samples[idx[0]].kind
    batch = pad_batch([plan.samples[i] for i in idx], plan.pad_id, plan.device)
    terms = plan.terms_in(idx)
    # an extension's loss term sees every position's logprobs; the policy loss only the loss mask's
    keep = batch["loss_mask"].bool()
    with autocast_context(plan.device, plan.bf16):
        lp, hidden = logprobs_and_hidden(model, batch["input_ids"], batch["attention_mask"], plan.temperature,
                                         hidden=any(term.needs_hidden_states for term, _ in terms),
                                         keep=None if terms else keep, allowed=batch.get("allowed"),
                                         scored=batch.get("scored"), scored_samples=plan.configs[kind].scored_samples,
                                         scored_recorded=plan.old_logprobs is None)
    loss, stats = _micro_batch_policy_loss(plan, kind, idx, batch, lp, keep)
    total = plan.weights[kind] * loss
    for term, count in terms:
        with autocast_context(plan.device, plan.bf16):
            extra = term.extra_loss(MicroBatch(kind, [plan.samples[i] for i in idx], batch["input_ids"],
                                               batch["attention_mask"], lp, hidden))
        if extra is not None:
            value, term_metrics = extra
            total = total + value.float() / count
            for key, v in term_metrics.items():
                term_sums[key] = term_sums.get(key, 0.0) + float(v) / count
    total.backward()
    for key, value in stats.items():
        sums[f"{kind}/{key}"] = sums.get(f"{kind}/{key}", 0.0) + value
    sums[f"{kind}/loss"] = sums.get(f"{kind}/loss", 0.0) + float(loss.detach())


def _micro_batch_policy_loss(plan: UpdatePlan, kind: str, idx: list[int], batch: dict[str, torch.Tensor],
                             lp: torch.Tensor, keep: torch.Tensor) -> tuple[torch.Tensor, dict[str, float]]:
    """:func:`~agentgym.train.optim.loss.policy_loss` of one micro-batch of ``kind``, normalized
    over the whole batch, so the micro-batches' losses add up to the batch's."""
    width = lp.shape[1]
    old = lp.detach() if plan.old_logprobs is None else _stack([plan.old_logprobs[i] for i in idx], width,
                                                               plan.device)
    ref = _stack([plan.ref_logprobs[i] for i in idx], width, plan.device) if plan.ref_logprobs is not None else None
    episode_mean = plan.configs[kind].aggregation == "episode-mean"
    # the loss reads the three only under the mask; elsewhere each may hold 0 (not computed), and
    # exp(0 - logprob) overflows there and inf * 0 would poison the masked sums
    return policy_loss(*(t.masked_fill(~keep, 0.0) for t in (lp, old)), batch["advantages"],
                       batch["loss_mask"], plan.configs[kind],
                       ref_logprobs=ref.masked_fill(~keep, 0.0) if ref is not None else None,
                       normalizer=plan.normalizers[kind],
                       sample_weights=torch.tensor([plan.episode_weights[i] for i in idx], device=plan.device)
                       if episode_mean else None)


def _empty_backward(model, plan: UpdatePlan) -> None:
    """FSDP: a forward and backward pass with zero loss, so that this rank joins the collectives of
    a busier rank's micro-batch."""
    ids = torch.full((1, 2), plan.pad_id, dtype=torch.long, device=plan.device)
    with autocast_context(plan.device, plan.bf16):
        lp = token_logprobs(model, ids, torch.ones_like(ids), plan.temperature)
    (lp.sum() * 0.0).backward()


def _optimizer_step(model, optimizer, dist: Dist, max_grad_norm: float | None) -> float:
    """Sum the gradients over ranks, clip them (all parameter groups together), step and zero them;
    returns the gradient norm before clipping (nan without clipping)."""
    params = [p for group in optimizer.param_groups for p in group["params"]]
    if not is_sharded(model):
        # Not DistributedDataParallel: ranks run different numbers of micro-batches (episodes differ
        # in length, extensions add or drop samples, a rank may have none), and DDP's per-backward
        # hooks need every rank in every backward. One summed all-reduce after accumulation is the
        # same communication DDP does under no_sync(), without that constraint.
        all_reduce_grads(dist, params)
    grad_norm = float("nan")
    if max_grad_norm is not None and max_grad_norm > 0:
        norm = torch.nn.utils.clip_grad_norm_(params, max_grad_norm)
        grad_norm = float(norm.full_tensor() if hasattr(norm, "full_tensor") else norm)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return grad_norm


def _global_sums(plan: UpdatePlan, dist: Dist, sums: dict[str, float], term_sums: dict[str, float]
                 ) -> tuple[dict[str, float], dict[str, float]]:
    """The loss stats and the extensions' metrics summed over ranks."""
    keys = [f"{kind}/{key}" for kind in sorted(plan.weights) for key in STAT_KEYS]
    sums = dict(zip(keys, dist.sum_floats([sums.get(k, 0.0) for k in keys])))
    if plan.loss_terms:  # a rank whose samples held no item has no key: name them all, in one order
        names = sorted({k for part in dist.all_gather(sorted(term_sums)) for k in part})
        term_sums = dict(zip(names, dist.sum_floats([term_sums.get(k, 0.0) for k in names])))
    return sums, term_sums


def _step_metrics(plan: UpdatePlan, grad_norm: float, sums: dict[str, float], term_sums: dict[str, float]
                  ) -> dict[str, float]:
    """:func:`train_step`'s metrics: the gradient norm, each kind's loss and mean pg term per loss
    token, the policy's KL, clip fraction and mean ratio, and the extensions' metrics."""
    metrics = {"grad_norm": grad_norm}
    for kind in plan.normalizers:
        tokens = max(sums.get(f"{kind}/tokens", 0.0), 1.0)
        prefix = "loss/policy" if kind == "policy" else f"loss/{kind}"
        metrics[prefix] = sums.get(f"{kind}/loss", 0.0)
        metrics[f"{prefix}_pg"] = sums.get(f"{kind}/pg_sum", 0.0) / tokens
        if kind == "policy":
            metrics["kl"] = sums.get("policy/kl_sum", 0.0) / tokens
            metrics["clip_ratio"] = sums.get("policy/clipped_sum", 0.0) / tokens
            metrics["ratio/mean"] = sums.get("policy/ratio_sum", 0.0) / tokens
            metrics["tokens/loss"] = sums.get("policy/tokens", 0.0)
    metrics.update(term_sums)
    return metrics
