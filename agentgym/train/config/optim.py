"""The settings the update reads: a token loss (:class:`LossConfig`) and the optimizer (:class:`OptimConfig`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Literal

from agentgym.settings import SettingError, check_on_init
from agentgym.train.base.errors import at_least, finite, is_int, is_number
from agentgym.train.base.flags import Flat

AGGREGATIONS = ("token-mean", "seq-mean", "episode-mean")
LOSS_TYPES = ("ppo", "cispo")


@dataclass
class LossConfig:
    """A token loss (agentgym/train/optim/loss.py): the policy's (flags without a prefix), and GCD's
    judge's (``--gcd.judge-loss.*``)."""

    eps_low: float = 0.2
    """PPO clip range below 1"""
    eps_high: float = 0.2
    """PPO clip range above 1 (DAPO's clip-higher: 0.28)"""
    beta: float = 0.001
    """k3 KL weight to the frozen initial model (0: no reference model)"""
    aggregation: Literal["token-mean", "seq-mean", "episode-mean"] = "token-mean"
    """how token losses are averaged (`seq-mean`: within each sequence first, so a long one weighs no more; `episode-mean`: within each episode first, over all its window samples, so an episode of many turns weighs no more)"""
    loss_type: Literal["ppo", "cispo"] = "ppo"
    """token loss: PPO-clip, or CISPO's clipped, detached importance weight"""
    scored_samples: int = 0
    """replies scored among listed actions (an env's `scored_actions=True`): how many candidates, drawn from the policy, carry the gradient of the candidates' log-sum-exp, whose value stays exact (an unbiased estimate; 0: every candidate, exact)"""

    def __post_init__(self) -> None:
        check_on_init(self)

    def check(self) -> None:
        if self.loss_type not in LOSS_TYPES:
            raise SettingError("loss_type", f"must be one of {LOSS_TYPES}, got {self.loss_type!r}")
        if self.aggregation not in AGGREGATIONS:
            raise SettingError("aggregation", f"must be one of {AGGREGATIONS}, got {self.aggregation!r}")
        if not (is_number(self.eps_low) and 0 <= self.eps_low < 1):
            raise SettingError("eps_low", f"must be in [0, 1), got {self.eps_low!r}")
        if not (is_number(self.eps_high) and self.eps_high >= 0):
            raise SettingError("eps_high", f"must be a finite number >= 0, got {self.eps_high!r}")
        if not (is_number(self.beta) and self.beta >= 0):
            raise SettingError("beta", f"must be a finite number >= 0, got {self.beta!r}")
        if not (is_int(self.scored_samples) and self.scored_samples >= 0):
            raise SettingError("scored_samples", f"must be an integer >= 0, got {self.scored_samples!r}")


@dataclass
class OptimConfig:
    """The policy loss and the optimizer."""

    std_normalize: bool = True
    """divide advantages by the group std (False: Dr. GRPO)"""
    loss: Annotated[LossConfig, Flat] = field(default_factory=LossConfig)
    """the policy's token loss"""
    num_epochs: int = 1
    """passes over each rollout batch"""
    num_minibatches: int = 1
    """optimizer steps per pass"""
    micro_batch_size: int = 8
    """sequences per forward pass (gradient accumulation)"""
    learning_rate: float = 2e-4
    """AdamW learning rate (2e-4 suits the tiny models; real models want ~1e-6)"""
    weight_decay: float = 0.0
    """AdamW weight decay"""
    max_grad_norm: float = 1.0
    """gradient clipping (0: off)"""

    def validate(self) -> None:
        finite("learning-rate", self.learning_rate, positive=True)
        finite("weight-decay", self.weight_decay, minimum=0.0)
        finite("max-grad-norm", self.max_grad_norm, minimum=0.0)
        at_least("num-epochs", self.num_epochs, 1)
        at_least("num-minibatches", self.num_minibatches, 1)
        at_least("micro-batch-size", self.micro_batch_size, 1)

    def loss_config(self) -> LossConfig:
        """The policy's :class:`LossConfig`."""
        return self.loss
