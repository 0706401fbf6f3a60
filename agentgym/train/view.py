"""What an extension may read of the run it is part of: a typed, read-only view.

Extensions (:mod:`agentgym.train.hooks`) get a :class:`RunView` instead of the run's whole config,
so a method depends on the few settings it uses (where the run writes, how it samples, its device
and autocast, its place among the ``torchrun`` processes, the tokenizer), each with its type, and
a change to how the config is declared does not reach into every method. The loop makes it once
(:func:`agentgym.train.run.setup.set_up`) and hands the same object to every hook.

>>> from agentgym.train.config.tree import TrainConfig
>>> view = RunView.of(TrainConfig())
>>> view.output_dir, view.sampling.temperature, view.is_main, view.world_size
('runs/grpo', 1.0, True, 1)
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from agentgym.agents.base import SamplingConfig
from agentgym.train.base.device import autocast_context
from agentgym.train.base.world import Dist
from agentgym.train.rollout.chat import ChatEncoder


@dataclass(frozen=True)
class RunView:
    """The run's settings an extension may read (frozen: extensions read them, the loop owns them)."""

    output_dir: str | None
    """where the run writes (metrics.jsonl, checkpoints; an extension's own files); None: nowhere"""
    seed: int
    """the run's ``--seed``"""
    quiet: bool
    """print nothing per step (an extension's notes too; errors still go to stderr)"""
    sampling: SamplingConfig
    """how the rollout samples a turn (``--max-new-tokens``, ``--temperature``, ``--top-p``,
    ``--top-k``): the run's one :class:`~agentgym.agents.SamplingConfig`"""
    layout: str
    """the token layout of training samples: ``concat`` or ``window``"""
    window: int | None
    """``window`` layout: past turns kept in a prompt besides the first observation (None: all)"""
    max_prompt_tokens: int
    """a prompt longer than this is cut (an episode ends, a judge prompt is skipped)"""
    std_normalize: bool
    """group advantages divide by the group's std (False: Dr. GRPO)"""
    learning_rate: float
    """the optimizer's learning rate (an extension's parameter groups default to it)"""
    micro_batch_size: int
    """sequences per forward pass in the update (an extension's own forward passes can follow it)"""
    device: str = "cpu"
    """the device the trained model is on"""
    bf16: bool = False
    """bf16 autocast of forward passes (on a GPU with ``--bf16``)"""
    dist: Dist = field(default_factory=Dist)
    """this process's place in the run: ``rank``, ``world_size``, ``is_main`` and collectives"""
    tokenizer: Any = None
    """the trained model's tokenizer"""

    @classmethod
    def of(cls, config: Any, *, tokenizer: Any = None, device: str = "cpu", bf16: bool = False,
           dist: Dist | None = None) -> RunView:
        """The view of a run's :class:`~agentgym.train.config.tree.TrainConfig`, with what only the
        running loop knows: the tokenizer, device, autocast, ``dist``."""
        r, o, run = config.rollout, config.optim, config.run
        return cls(output_dir=run.output_dir, seed=run.seed, quiet=run.quiet,
                   sampling=r.sampling, layout=r.layout, window=r.window, max_prompt_tokens=r.max_prompt_tokens,
                   std_normalize=o.std_normalize, learning_rate=o.learning_rate, micro_batch_size=o.micro_batch_size,
                   device=device, bf16=bf16, dist=dist if dist is not None else Dist(), tokenizer=tokenizer)

    def replace(self, **changes: Any) -> RunView:
        """A copy with some fields changed (the view itself never changes)."""
        return dataclasses.replace(self, **changes)

    @property
    def rank(self) -> int:
        return self.dist.rank

    @property
    def world_size(self) -> int:
        return self.dist.world_size

    @property
    def is_main(self) -> bool:
        """Rank 0 (the only process outside ``torchrun``): the one that writes files and prints."""
        return self.dist.is_main

    @cached_property
    def encoder(self):
        """The :class:`~agentgym.train.rollout.chat.ChatEncoder` of the tokenizer: chat messages to the
        token ids the policy sees."""
        if self.tokenizer is None:
            raise ValueError("this run view has no tokenizer")
        return ChatEncoder(self.tokenizer)

    @property
    def pad_token_id(self) -> int:
        return self.tokenizer.pad_token_id

    def autocast(self):
        """The autocast context of the run's forward passes (bf16 on a GPU with ``--bf16``; nothing
        on the CPU): generate or score under it as the rollout and the update do."""
        return autocast_context(self.device, self.bf16)
