"""Training samples: token ids, a loss mask and an advantage, built from episodes in a layout.

``concat``: one sample per episode, the episode's whole sequence with the mask recorded during the
rollout (1 on sampled ids only). ``window``: one sample per turn, the turn's prompt (mask 0) then
its sampled ids (mask 1). Either way every model-written token of episode i gets advantage A_i.

Samples carry a ``kind`` so that extensions can add their own (GCD's judge samples) and weigh
their loss separately (``loss_weights`` in :func:`agentgym.train.update.train_step`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from agentgym.train.rollout import Episode


@dataclass
class Sample:
    input_ids: list[int]
    loss_mask: list[int]
    """Per token of ``input_ids``: 1 if the model sampled it and it carries loss."""
    advantage: float
    kind: str = "policy"
    episode: int = -1
    """Index of the episode it came from (-1: none)."""

    def __post_init__(self) -> None:
        if len(self.input_ids) != len(self.loss_mask):
            raise ValueError(f"input_ids ({len(self.input_ids)}) and loss_mask ({len(self.loss_mask)}) differ")

    @property
    def num_loss_tokens(self) -> int:
        return int(sum(self.loss_mask))


def episode_samples(episodes: Sequence[Episode], advantages: Sequence[float], layout: str) -> list[Sample]:
    """Samples of every episode that has at least one model turn."""
    if len(episodes) != len(advantages):
        raise ValueError(f"{len(episodes)} episodes but {len(advantages)} advantages")
    out = []
    for i, (ep, adv) in enumerate(zip(episodes, advantages)):
        if not ep.turns:
            continue
        if layout == "concat":
            out.append(Sample(list(ep.concat_ids), list(ep.concat_mask), float(adv), episode=i))
        elif layout == "window":
            for turn in ep.turns:
                ids = turn.completion.token_ids
                out.append(Sample(list(turn.prompt_ids) + list(ids), [0] * len(turn.prompt_ids) + [1] * len(ids),
                                  float(adv), episode=i))
        else:
            raise ValueError(f"unknown layout {layout!r}")
    return out
