"""RFT: rejection-sampling fine-tuning (expert iteration, filtered self-imitation): the policy plays
its groups as usual, the successful episodes are kept and the policy is fine-tuned on them with the
SFT loss; every other episode is left out of the update. The rule that keeps episodes,
then :class:`RFT`, the extension.

Micheli and Fleuret ("Language Models are Few-Shot Butlers", 2021) fine-tune a language model on
its own successful trajectories in ALFWorld, and repeat; RFT does that online, one step per batch.

Which episodes are kept: those the env marked successful (``info["success"]``), or with
``min_return`` set, those whose return reaches it. ``keep="all"`` keeps every such episode of a
group; ``keep="best"`` only the one with the highest return (the first played, on a tie):

>>> keep_in_group([True, False, True], [0.8, 0.1, 0.9])
[True, False, True]
>>> keep_in_group([True, False, True], [0.8, 0.1, 0.9], keep="best")
[False, False, True]
>>> keep_in_group([False, False], [0.3, 0.2], keep="best")
[False, False]

The loss. Every kept episode's model-written tokens get advantage ``A = 1``; the others give no
sample at all (they are dropped, not given 0), so the token-mean runs over the kept tokens only.
The policy's token loss is PPO-clip (:mod:`agentgym.train.optim.loss`), per token t with ratio
``r_t = pi(a_t | s_t) / pi_old(a_t | s_t)``:

    pg_t = -min(r_t * A, clip(r_t, 1 - eps_low, 1 + eps_high) * A)

With one epoch and one minibatch (``--num-epochs 1 --num-minibatches 1``, the defaults) the batch
was sampled by the weights being updated, so ``r_t = 1`` with ``pi_old`` a constant, the clip is
inactive, and ``d pg_t = -d r_t = -r_t * d log pi(a_t | s_t) = -d log pi(a_t | s_t)``. Over the
batch's N kept tokens (``--aggregation token-mean``):

    grad L = -(1 / N) * sum_t grad log pi(a_t | s_t) = grad L_SFT,
    L_SFT  = -(1 / N) * sum_t log pi(a_t | s_t)

exactly the gradient of the SFT negative log-likelihood of the kept episodes' replies (the
*value* of ``L`` is ``-1`` per token, not the NLL: ``loss/policy`` logs it so). Other settings
change that, and ``trainers/rft.py`` leaves them at what keeps it SFT: with more epochs or
minibatches, a token whose ratio passed ``1 + eps_high`` earlier in the step gets no more gradient
(a clipped SFT that stops pushing a reply up once it has grown by that factor); under
``--async-steps`` the ratio is against the weights that played the batch (importance-weighted,
clipped); ``--beta`` > 0 adds the k3 KL to the initial model (``trainers/rft.py`` sets 0); and
``--aggregation seq-mean`` / ``episode-mean`` weigh each sample / episode alike instead of each token.

No group baseline is needed, so ``--group-size 1`` is allowed (a group is then one task's one
try). A step where nothing succeeded keeps no episode and trains on nothing (``update/skipped``
is 1, ``rft/kept_episodes`` 0).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import ClassVar, Literal

import numpy as np

from agentgym.train.base.errors import ConfigError
from agentgym.train.config.optim import LossConfig, OptimConfig
from agentgym.train.config.run import RunConfig
from agentgym.train.config.tree import TrainConfig
from agentgym.train.hooks import StepContext, TrainerExtension
from agentgym.train.methods.registry import Method, register
from agentgym.train.rollout.episodes import Episode, by_group

KEEP_RULES = ("all", "best")


def keep_in_group(successes: Sequence[bool], returns: Sequence[float], keep: str = "all") -> list[bool]:
    """One flag per episode of one group: True trains on it. ``successes``: whether each episode
    passed (succeeded, or reached the return threshold); ``returns``: their returns, which pick the
    one episode ``keep="best"`` keeps among those that passed (the first, on a tie).

    >>> keep_in_group([True, True, True], [0.5, 0.9, 0.9], keep="best")
    [False, True, False]
    >>> keep_in_group([], [])
    []
    """
    if keep not in KEEP_RULES:
        raise ValueError(f"keep must be one of {KEEP_RULES}, got {keep!r}")
    if len(successes) != len(returns):
        raise ValueError(f"need one return per episode, got {len(returns)} returns for {len(successes)} episodes")
    flags = [bool(s) for s in successes]
    if keep == "all" or not any(flags):
        return flags
    best = max((i for i, s in enumerate(flags) if s), key=lambda i: (returns[i], -i))
    return [i == best for i in range(len(flags))]


def passed(episode: Episode, min_return: float | None = None) -> bool:
    """Whether ``episode`` counts as a success: the env's ``info["success"]``, or with
    ``min_return`` its return reaching it."""
    return episode.success if min_return is None else episode.ret >= min_return


def select(episodes: Sequence[Episode], keep: str = "all",
           min_return: float | None = None) -> tuple[list[Episode], int]:
    """The episodes RFT trains on, in their played order, and how many groups had at least one
    success (:func:`passed`) before ``keep`` picked among them."""
    kept, with_success = set(), 0
    for group in by_group(episodes).values():
        ok = [passed(ep, min_return) for ep in group]
        with_success += any(ok)
        kept |= {id(ep) for ep, k in zip(group, keep_in_group(ok, [ep.ret for ep in group], keep)) if k}
    return [ep for ep in episodes if id(ep) in kept], with_success


@dataclass
class RFTConfig:
    """RFT's own settings (flags ``--rft.*``)."""

    min_group_size: ClassVar[int] = 1  # no group baseline: a task needs one episode

    keep: Literal["all", "best"] = "all"
    """which successful episodes of a group are trained on: every one, or only the one with the highest return"""
    min_return: float | None = None
    """count an episode as a success when its return is at least this, instead of the env's success flag (None: the flag)"""

    def validate(self) -> None:
        if self.keep not in KEEP_RULES:
            raise ConfigError(f"--rft.keep must be one of {', '.join(KEEP_RULES)}, got {self.keep!r}")
        if self.min_return is not None and not np.isfinite(self.min_return):
            raise ConfigError(f"--rft.min-return must be a finite number (or left out), got {self.min_return}")


class RFT(TrainerExtension):
    """The RFT extension; pass ``RFT(config.rft)`` to :func:`agentgym.train.loop.train`."""

    name = "rft"
    summed_metrics = frozenset({"rft/kept_episodes", "rft/groups_with_success", "rft/groups"})

    def __init__(self, cfg: RFTConfig | None = None):
        self.cfg = cfg or RFTConfig()
        self._metrics: dict[str, float] = {}

    def after_rollout(self, ctx: StepContext, episodes: list[Episode]) -> list[Episode]:
        """Keep the successful episodes (by ``keep``); the others leave the batch, so they give no
        sample and no loss token."""
        kept, with_success = select(episodes, self.cfg.keep, self.cfg.min_return)
        self._metrics = {"rft/kept_episodes": float(len(kept)),
                         "rft/kept_frac": len(kept) / len(episodes) if episodes else 0.0,
                         "rft/groups_with_success": float(with_success),
                         "rft/groups": float(len({ep.group for ep in episodes}))}
        return kept

    def transform_advantages(self, ctx, advantages: list[np.ndarray], episodes: Sequence[Episode]) -> list[np.ndarray]:
        """Advantage 1 on every turn of every kept episode, whatever its group's other returns."""
        return [np.ones(len(ep.turns)) for ep in episodes]

    def metrics(self) -> dict[str, float]:
        return dict(self._metrics)


@dataclass
class RFTTrainConfig(TrainConfig):
    rft: RFTConfig = field(default_factory=RFTConfig)


def rft_defaults() -> RFTTrainConfig:
    # no KL term: the update is the SFT gradient on the kept episodes (one epoch, one minibatch and
    # token-mean, the defaults of every trainer, keep it so)
    return RFTTrainConfig(optim=OptimConfig(loss=LossConfig(beta=0.0)), run=RunConfig(output_dir="runs/rft"))


RFT_METHOD = register(Method(
    name="rft", summary="RFT: the SFT loss on the policy's own successful episodes (expert iteration)",
    description="""RFT (rejection-sampling fine-tuning, expert iteration): the policy plays its groups, and is
fine-tuned with the SFT loss on the episodes that succeeded; the others are left out.

    python trainers/rft.py                                    # tiny model on ToolQA-v0, CPU, minutes
    python trainers/rft.py --model runs/sft/final --rft.keep best
    python trainers/rft.py --rft.min-return 0.8               # a return threshold instead of success

Every GRPO flag works here; RFT's own are --rft.* (--help lists them). It trains with one epoch
and one minibatch per step and no KL term, so the update is the SFT gradient on the kept episodes
(agentgym/train/methods/rft.py). The run prints one line per step and, at the end, held-out success
and PRS return before -> after training.
""",
    config=RFTTrainConfig, defaults=rft_defaults, extensions=lambda config: [RFT(config.rft)],
    extension=(RFT, RFTConfig), doc="docs/trainers.md#rft"))
