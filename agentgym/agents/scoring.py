"""Scoring a list of whole replies: the policy of an env made with ``scored_actions=True``.

Where an env lists what may be played (``info["scored_replies"]``: each admissible action in its
own words), the policy does not write a reply token by token: it scores each candidate ``a`` by
its summed token log-probability given the prompt, ``S(a) = sum_t log p(a_t | prompt, a_<t)``
(every token's log-softmax over the whole vocabulary, at the sampling temperature), and samples
from the softmax over the candidates, ``pi(a_i) = exp(S_i - logsumexp_j S_j)`` (temperature 0: the
best-scoring one). This is GLAM's policy (Carta et al., 2023), and what DRRN does with a Q-network
over the valid actions: what the model learns about "heat the egg" is learnt about those words,
wherever the next game lists them, where a numbered choice must learn what each number means in
each list.

The prompt is encoded once; every candidate is scored from its key-value cache, ``chunk`` at a
time (:func:`candidate_logprobs`). A model that returns no cache (gradient checkpointing in
training) scores each candidate after the whole prompt instead, with the same result.

A trainer keeps the same distribution: the chosen reply's per-token log-probabilities, its last
token's less ``logsumexp_j S_j`` (:func:`scored_token_logprobs`), sum to ``log pi(a_i)``, so the
ratio, the KL term and the recorded behaviour log-probabilities are all under the candidates'
softmax (``agentgym.train.optim.update``).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

DEFAULT_CHUNK = 64
"""Candidates scored per forward pass."""


def candidate_logprobs(model, prefix: Sequence[int], candidates: Sequence[Sequence[int]], temperature: float = 1.0,
                       chunk: int = DEFAULT_CHUNK) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-token log-probabilities of every candidate after ``prefix``: ``[n, longest]`` (0 past a
    candidate's end) and the candidates' lengths ``[n]``. Gradients flow when they are enabled.

    Every candidate is non-empty (its tokens and the stop token that ends the reply)."""
    if not candidates or any(len(c) == 0 for c in candidates):
        raise ValueError("every candidate needs at least one token")
    if not prefix:
        raise ValueError("the prompt is empty")
    device = next(model.parameters()).device
    scale = temperature if temperature > 0 else 1.0
    prompt = torch.tensor([list(prefix)], dtype=torch.long, device=device)
    out = model(input_ids=prompt, use_cache=True)
    first = torch.log_softmax(out.logits[0, -1].float() / scale, dim=-1)  # the candidates' first token
    keyword = _cache_keyword(model)
    cache = out.get(keyword)
    n, width = len(candidates), max(len(c) for c in candidates)
    lengths = torch.tensor([len(c) for c in candidates], device=device)
    rows: list[torch.Tensor] = []
    for start in range(0, n, chunk):
        part = [list(c) for c in candidates[start:start + chunk]]
        ids = torch.zeros((len(part), width), dtype=torch.long, device=device)
        for i, c in enumerate(part):
            ids[i, :len(c)] = torch.tensor(c, dtype=torch.long)
        lp = first[ids[:, 0]].unsqueeze(1)
        if width > 1:
            rest = _rest_logits(model, prompt, cache, keyword, ids[:, :-1], len(part))
            tail = torch.log_softmax(rest.float() / scale, dim=-1).gather(-1, ids[:, 1:].unsqueeze(-1)).squeeze(-1)
            lp = torch.cat([lp, tail], dim=1)
        rows.append(lp)
    lp = torch.cat(rows, dim=0)
    valid = torch.arange(width, device=device)[None, :] < lengths[:, None]
    return lp.masked_fill(~valid, 0.0), lengths


def _cache_keyword(model) -> str:
    """What the model's forward pass calls its key-value cache (argument and output): ``cache`` in
    recent transformers releases, ``past_key_values`` before."""
    import inspect

    inner = model
    while True:  # PEFT's wrapper, then DDP's
        unwrapped = inner.get_base_model() if hasattr(inner, "get_base_model") else getattr(inner, "module", None)
        if unwrapped is None or unwrapped is inner:
            break
        inner = unwrapped
    return "cache" if "cache" in inspect.signature(type(inner).forward).parameters else "past_key_values"


def _rest_logits(model, prompt: torch.Tensor, cache, keyword: str, inputs: torch.Tensor, rows: int) -> torch.Tensor:
    """Logits after each of ``inputs``' tokens (the candidates less their last token), given the
    prompt: from its cache, repeated for each row, or with the prompt run again in every row. A
    row's padding comes after its tokens, so it changes none of the positions read."""
    if cache is not None and hasattr(cache, "batch_repeat_interleave") and hasattr(cache, "crop"):
        import copy

        # a cache grows in place during a forward pass: each chunk gets its own shallow copy,
        # whose layers are new tensors (repeat, then the forward pass's concatenation)
        mine = copy.copy(cache)
        for name, value in vars(cache).items():
            if isinstance(value, list):  # per-layer state (layer objects, or tensors in older releases)
                setattr(mine, name, [copy.copy(v) for v in value])
        mine.batch_repeat_interleave(rows)
        mask = torch.ones((rows, prompt.shape[1] + inputs.shape[1]), dtype=torch.long, device=inputs.device)
        return model(input_ids=inputs, attention_mask=mask, use_cache=True, **{keyword: mine}).logits
    whole = torch.cat([prompt.expand(rows, -1), inputs], dim=1)
    return model(input_ids=whole, use_cache=False).logits[:, prompt.shape[1]:]


def candidate_scores(model, prefix: Sequence[int], candidates: Sequence[Sequence[int]], temperature: float = 1.0,
                     chunk: int = DEFAULT_CHUNK) -> torch.Tensor:
    """``S_j``, each candidate's summed token log-probability after ``prefix``: ``[n]``."""
    return candidate_logprobs(model, prefix, candidates, temperature, chunk)[0].sum(dim=1)


def scored_token_logprobs(token_logprobs: Sequence[float], log_normalizer: float) -> list[float]:
    """A chosen reply's per-token log-probabilities under the candidates' softmax: its own, the last
    less ``log_normalizer`` (``logsumexp_j S_j``), so they sum to ``log pi(reply)``.

    >>> scored_token_logprobs([-1.0, -0.5], 0.25)
    [-1.0, -0.75]
    """
    out = [float(v) for v in token_logprobs]
    out[-1] -= float(log_normalizer)
    return out


def choose(scores: torch.Tensor, greedy: bool) -> int:
    """The candidate played: a sample from ``softmax(scores)`` (torch's global random stream, which
    the trainers seed and checkpoint), or the best-scoring with ``greedy`` (the first of equals)."""
    if greedy:
        return int(torch.argmax(scores))
    return int(torch.multinomial(torch.softmax(scores.double(), dim=0), 1))
