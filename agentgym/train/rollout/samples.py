"""Training samples: token ids, a loss mask and an advantage, built from episodes in a layout.

``concat``: one sample per episode, the episode's whole sequence with the mask recorded during the
rollout (1 on sampled ids only). ``window``: one sample per turn, the turn's prompt (mask 0) then
its sampled ids (mask 1). An episode's advantage is one number (every model-written token of
episode i gets A_i) or one number per turn (GiGPO's step term, value-smoothed turns): turn t's
tokens get A_i[t], in either layout.

Samples carry a ``kind`` so that extensions can add their own (GCD's judge samples) and weigh
their loss separately (``loss_weights`` in :func:`agentgym.train.optim.update.train_step`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from agentgym.train.rollout.episodes import Episode


@dataclass(frozen=True)
class ScoredReply:
    """A reply chosen whole among ``candidates`` (each its token ids), at ``start`` in its sample's
    ``input_ids``: everything before it is the prompt the candidates were scored after."""

    start: int
    candidates: list[list[int]]
    pick: int
    """Which candidate the sample holds."""
    scores: tuple[float, ...] | None = None
    """The candidates' scores under the weights that sampled the reply (the rollout's), when recorded."""

    @property
    def chosen(self) -> list[int]:
        return list(self.candidates[self.pick])

    @property
    def length(self) -> int:
        return len(self.candidates[self.pick])


@dataclass
class Sample:
    input_ids: list[int]
    loss_mask: list[int]
    """Per token of ``input_ids``: 1 if the model sampled it and it carries loss."""
    advantage: float
    kind: str = "policy"
    episode: int = -1
    """Index of the episode it came from (-1: none)."""
    token_advantages: list[float] | None = None
    """Per token of ``input_ids`` (used instead of ``advantage`` when set): turns of one
    ``concat`` sequence with different advantages."""
    turn: int = -1
    """``window`` layout: the turn of its episode it holds (-1: all of them, or none)."""
    behaviour_logprobs: list[float] | None = None
    """Per token of ``input_ids``: the log-probability the policy that sampled it gave it when it
    sampled (0.0 on tokens it did not sample); None when the sampler did not report them. Under
    ``--async-steps`` these are the PPO ratio's denominator, so the ratio corrects for the lag."""
    allowed_token_ids: list[list[int] | None] | None = None
    """Per token of ``input_ids``: the ids the sampler could choose from there (a constrained
    reply's mask, :attr:`agentgym.agents.Completion.allowed_token_ids`), None where it was free;
    None when no token was constrained. The update masks its logits alike, so the ratio is taken
    under the distribution that sampled."""
    scored: list[ScoredReply] | None = None
    """The replies of this sample chosen whole among candidates (an env's ``scored_actions=True``,
    :attr:`agentgym.agents.Completion.candidate_ids`): the update takes each one's last token's
    log-probability less the log-sum-exp of the candidates' scores, as the sampler recorded it."""

    def __post_init__(self) -> None:
        if len(self.input_ids) != len(self.loss_mask):
            raise ValueError(f"input_ids ({len(self.input_ids)}) and loss_mask ({len(self.loss_mask)}) differ")
        if self.token_advantages is not None and len(self.token_advantages) != len(self.input_ids):
            raise ValueError(f"token_advantages ({len(self.token_advantages)}) and input_ids "
                             f"({len(self.input_ids)}) differ")
        if self.behaviour_logprobs is not None and len(self.behaviour_logprobs) != len(self.input_ids):
            raise ValueError(f"behaviour_logprobs ({len(self.behaviour_logprobs)}) and input_ids "
                             f"({len(self.input_ids)}) differ")
        if self.allowed_token_ids is not None and len(self.allowed_token_ids) != len(self.input_ids):
            raise ValueError(f"allowed_token_ids ({len(self.allowed_token_ids)}) and input_ids "
                             f"({len(self.input_ids)}) differ")

        for reply in self.scored or ():
            end = reply.start + reply.length
            if reply.start < 1 or end > len(self.input_ids) or self.input_ids[reply.start:end] != reply.chosen:
                raise ValueError(f"a scored reply at {reply.start} is not the sample's tokens there")

    @property
    def num_loss_tokens(self) -> int:
        return int(sum(self.loss_mask))


def per_turn(episodes: Sequence[Episode], advantages: Sequence) -> list[np.ndarray]:
    """Each episode's advantage as one value per turn (a scalar is repeated over the turns)."""
    if len(episodes) != len(advantages):
        raise ValueError(f"{len(episodes)} episodes but {len(advantages)} advantages")
    out = []
    for ep, adv in zip(episodes, advantages):
        a = np.asarray(adv, dtype=np.float64)
        if a.ndim == 0:
            a = np.full(len(ep.turns), float(a))
        if a.shape != (len(ep.turns),):
            raise ValueError(f"an episode of {len(ep.turns)} turns got advantages of shape {a.shape}")
        out.append(a)
    return out


def _turn_logprobs(turn) -> list[float] | None:
    """The sampler's log-probabilities of a turn's ids, or None where it gave none for each id."""
    lps = turn.completion.logprobs
    return [float(x) for x in lps] if len(lps) == len(turn.completion.token_ids) else None


def _concat_logprobs(ep: Episode) -> list[float] | None:
    if len(ep.turn_spans) != len(ep.turns):
        return None
    out = [0.0] * len(ep.concat_ids)
    for (start, end), turn in zip(ep.turn_spans, ep.turns):
        lps = _turn_logprobs(turn)
        if lps is None or len(lps) != end - start:
            return None
        out[start:end] = lps
    return out


def _turn_allowed(turn) -> list[list[int] | None] | None:
    """The sampler's allowed ids of each of a turn's ids, or None where the turn was free."""
    allowed = turn.completion.allowed_token_ids
    return list(allowed) if allowed is not None and len(allowed) == len(turn.completion.token_ids) else None


def scored_reply(start: int, token_ids: Sequence[int], candidates: Sequence[Sequence[int]] | None,
                 scores: Sequence[float] | None = None) -> ScoredReply | None:
    """The reply ``token_ids`` at ``start`` as chosen among ``candidates`` (None: a free reply), with
    the candidates' ``scores`` when the sampler recorded them."""
    if candidates is None:
        return None
    listed = [list(c) for c in candidates]
    try:
        pick = listed.index(list(token_ids))
    except ValueError:
        raise ValueError("a scored completion's tokens are none of its candidates") from None
    return ScoredReply(start, listed, pick, None if scores is None else tuple(float(v) for v in scores))


def _listed(reply: ScoredReply | None) -> list[ScoredReply] | None:
    return None if reply is None else [reply]


def _concat_scored(ep: Episode) -> list[ScoredReply] | None:
    if len(ep.turn_spans) != len(ep.turns):
        return None
    out = [scored_reply(start, turn.completion.token_ids, turn.completion.candidate_ids, turn.completion.candidate_scores)
           for (start, _), turn in zip(ep.turn_spans, ep.turns)]
    return [r for r in out if r is not None] or None


def _concat_allowed(ep: Episode) -> list[list[int] | None] | None:
    if len(ep.turn_spans) != len(ep.turns) or all(_turn_allowed(t) is None for t in ep.turns):
        return None
    out: list[list[int] | None] = [None] * len(ep.concat_ids)
    for (start, end), turn in zip(ep.turn_spans, ep.turns):
        allowed = _turn_allowed(turn)
        if allowed is not None and len(allowed) == end - start:
            out[start:end] = allowed
    return out


def episode_samples(episodes: Sequence[Episode], advantages: Sequence, layout: str) -> list[Sample]:
    """Samples of every episode that has at least one model turn; ``advantages[i]`` is a number or
    one number per turn of episode i."""
    out = []
    for i, (ep, adv) in enumerate(zip(episodes, per_turn(episodes, advantages))):
        if not ep.turns:
            continue
        if layout == "concat":
            token_adv = None
            if len(adv) and np.ptp(adv) > 0:
                if len(ep.turn_spans) != len(ep.turns):
                    raise ValueError("per-turn advantages in the concat layout need the episode's turn spans")
                token_adv = [0.0] * len(ep.concat_ids)
                for (start, end), a in zip(ep.turn_spans, adv):
                    token_adv[start:end] = [float(a)] * (end - start)
            out.append(Sample(list(ep.concat_ids), list(ep.concat_mask), float(adv[0]), episode=i,
                              token_advantages=token_adv, behaviour_logprobs=_concat_logprobs(ep),
                              allowed_token_ids=_concat_allowed(ep), scored=_concat_scored(ep)))
        elif layout == "window":
            for t, (turn, a) in enumerate(zip(ep.turns, adv)):
                ids, lps, allowed = turn.completion.token_ids, _turn_logprobs(turn), _turn_allowed(turn)
                out.append(Sample(list(turn.prompt_ids) + list(ids), [0] * len(turn.prompt_ids) + [1] * len(ids),
                                  float(a), episode=i, turn=t,
                                  behaviour_logprobs=None if lps is None else [0.0] * len(turn.prompt_ids) + lps,
                                  allowed_token_ids=None if allowed is None
                                  else [None] * len(turn.prompt_ids) + allowed,
                                  scored=_listed(scored_reply(len(turn.prompt_ids), ids, turn.completion.candidate_ids,
                                                             turn.completion.candidate_scores))))
        else:
            raise ValueError(f"unknown layout {layout!r}")
    return out
