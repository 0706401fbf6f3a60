"""Token-level PPO-clip loss with an optional k3 KL penalty to a frozen reference (SPEC §4.2).

Per token t of a model-written span, with ratio r = exp(logp - logp_old) and advantage A:

    pg_t = -min(r * A, clip(r, 1 - eps_low, 1 + eps_high) * A)
    kl_t = exp(logp_ref - logp) - (logp_ref - logp) - 1          (k3 estimator, >= 0)
    l_t  = pg_t + beta * kl_t

CISPO (MiniMax-M1, ``loss_type="cispo"``; SPEC §4.5) clips the importance weight instead of the
update and detaches it, so no token loses its gradient the way PPO-clipped tokens do:

    pg_t = -sg(clip(r, 1 - eps_low, 1 + eps_high)) * A * logp

Its value is not a surrogate objective, only its gradient ``-clip(r) * A * d logp`` means anything.
MiniMax-M1 bounds the weight only from above; ``eps_low`` close to 1 comes nearest to that.

Aggregation: ``token-mean`` averages l_t over every loss token of the batch (long episodes weigh
more); ``seq-mean`` averages within each sequence first, then over sequences; ``episode-mean``
averages within each episode first (over the tokens of all its samples: the window layout makes
one sample per turn), then over episodes. All accept an explicit normalizer so micro-batches of one
optimizer step add up to the full-batch loss.

Why ``episode-mean``: in the window layout a failed episode that runs to the turn limit has more
samples than a solved one, so under token-mean its negative advantage covers more tokens than the
solved episode's positive one, even where the group's advantages sum to zero, and the update
lowers the probability of whatever the policy does, on net (docs/trainers.md, "Loss aggregation").
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from agentgym.train.config.optim import LossConfig


def k3_kl(logprobs: torch.Tensor, ref_logprobs: torch.Tensor) -> torch.Tensor:
    """Per-token k3 estimate of KL(policy || reference): exp(d) - d - 1 with d = ref - policy."""
    d = ref_logprobs - logprobs
    return torch.exp(d) - d - 1


def policy_loss(
    logprobs: torch.Tensor,
    old_logprobs: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    cfg: LossConfig,
    ref_logprobs: torch.Tensor | None = None,
    normalizer: float | None = None,
    sample_weights: torch.Tensor | None = None,
) -> tuple[torch.Tensor, dict[str, float]]:
    """PPO-clip (or CISPO, see ``cfg.loss_type``) loss over ``[batch, tokens]`` tensors.

    Args:
        logprobs: log-probabilities of the sampled tokens under the current policy (with grad).
        old_logprobs: the same under the policy that sampled them.
        advantages: per-token advantages (``[batch]`` is broadcast over tokens).
        mask: 1 for tokens the model wrote and that carry loss, 0 for prompt, env text and padding.
        cfg: clip ranges, KL weight and aggregation.
        ref_logprobs: under the frozen reference; needed when ``cfg.beta > 0``.
        normalizer: token-mean: the number of loss tokens in the whole optimizer batch; seq-mean:
            the number of sequences in it; episode-mean: the number of episodes in it. None uses
            this call's own count.
        sample_weights: episode-mean: per sequence, 1 / the loss tokens of its whole episode
            (None: each sequence is an episode of its own, as seq-mean).

    Returns the loss and detached metrics (sums over this call, for the caller to average).
    """
    mask = mask.to(logprobs.dtype)
    if advantages.dim() == 1:
        advantages = advantages.unsqueeze(1)
    advantages = advantages.to(logprobs.dtype)
    ratio = torch.exp(logprobs - old_logprobs)  # r = exp(logp - logp_old)
    pg_per_token = _pg_per_token(logprobs, ratio, advantages, cfg)
    per_token, kl = pg_per_token, None
    if cfg.beta > 0:
        # l_t = pg_t + beta * kl_t
        if ref_logprobs is None:
            raise ValueError("beta > 0 needs ref_logprobs")
        kl = k3_kl(logprobs, ref_logprobs)
        per_token = per_token + cfg.beta * kl
    loss = _aggregate(per_token, mask, cfg.aggregation, normalizer, sample_weights)
    return loss, _stats(ratio, advantages, mask, pg_per_token, kl, cfg)


def _pg_per_token(logprobs: torch.Tensor, ratio: torch.Tensor, advantages: torch.Tensor,
                  cfg: LossConfig) -> torch.Tensor:
    """The policy-gradient term pg_t of every token, for ``cfg.loss_type``:

        PPO-clip:  pg_t = -min(r * A, clip(r, 1 - eps_low, 1 + eps_high) * A)
        CISPO:     pg_t = -sg(clip(r, 1 - eps_low, 1 + eps_high)) * A * logp
    """
    if cfg.loss_type == "cispo":
        # the weight is a constant: a token far off-policy is down-weighted, never cut from the gradient
        weight = torch.clamp(ratio, 1 - cfg.eps_low, 1 + cfg.eps_high).detach()
        return -weight * advantages * logprobs
    unclipped = ratio * advantages
    clipped = torch.clamp(ratio, 1 - cfg.eps_low, 1 + cfg.eps_high) * advantages
    return -torch.minimum(unclipped, clipped)


def _aggregate(per_token: torch.Tensor, mask: torch.Tensor, aggregation: str, normalizer: float | None,
               sample_weights: torch.Tensor | None) -> torch.Tensor:
    """The loss from the per-token l_t under ``mask`` (N: ``normalizer``, else this call's count):

        token-mean:    sum_seq sum_t l_t / N_tokens
        seq-mean:      sum_seq (sum_t l_t / tokens_seq) / N_sequences
        episode-mean:  sum_seq (sum_t l_t * sample_weight_seq) / N_episodes
                       (sample_weight_seq: 1 / the tokens of its episode; without sample_weights, as seq-mean)
    """
    tokens_per_seq = mask.sum(dim=1)
    if aggregation == "token-mean":
        denom = float(normalizer) if normalizer is not None else tokens_per_seq.sum().clamp(min=1).item()
        return (per_token * mask).sum() / max(denom, 1e-8)
    denom = float(normalizer) if normalizer is not None else float(len(mask))
    per_seq = (per_token * mask).sum(dim=1)
    if aggregation == "episode-mean" and sample_weights is not None:
        per_seq = per_seq * sample_weights.to(per_seq.dtype)
    else:
        per_seq = per_seq / tokens_per_seq.clamp(min=1)
    return per_seq.sum() / max(denom, 1e-8)


@torch.no_grad()
def _stats(ratio: torch.Tensor, advantages: torch.Tensor, mask: torch.Tensor, pg_per_token: torch.Tensor,
           kl: torch.Tensor | None, cfg: LossConfig) -> dict[str, float]:
    """Sums under ``mask``: loss tokens, pg_t, kl_t, clipped tokens and the ratio r. A token is
    clipped, under PPO-clip, where r < 1 - eps_low with A < 0 or r > 1 + eps_high with A > 0 (the
    clip takes its gradient away); under CISPO wherever r is outside [1 - eps_low, 1 + eps_high]."""
    n = mask.sum()
    if cfg.loss_type == "cispo":
        # CISPO clips the weight whatever the sign of A
        is_clipped = (ratio < 1 - cfg.eps_low) | (ratio > 1 + cfg.eps_high)
    else:
        is_clipped = (((ratio < 1 - cfg.eps_low) & (advantages < 0))
                      | ((ratio > 1 + cfg.eps_high) & (advantages > 0)))
    return {
        "tokens": float(n),
        "pg_sum": float((pg_per_token * mask).sum()),
        "kl_sum": float((kl * mask).sum()) if kl is not None else 0.0,
        "clipped_sum": float((is_clipped.to(mask.dtype) * mask).sum()),
        "ratio_sum": float((ratio * mask).sum()),
    }
