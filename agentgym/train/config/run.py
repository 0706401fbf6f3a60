"""A run's basics (:class:`BaseRunConfig`), an RL run's length and resume (:class:`RunConfig`), and
its held-out evaluation (:class:`EvalConfig`)."""

from __future__ import annotations

import os
from dataclasses import dataclass

from agentgym.train.base.errors import ConfigError, at_least
from agentgym.train.base.trackers import check_installed, report_to_names


@dataclass
class BaseRunConfig:
    """What every run has: a seed, an output directory and its logging."""

    seed: int = 0
    """seed of weights-independent randomness: the task stream, sampling, SFT's batch order"""
    output_dir: str = "runs/grpo"
    """where metrics.jsonl, tensorboard/ and the model go (checkpoints/; SFT: final/)"""
    tensorboard: bool = True
    """also log to TensorBoard (`--no-tensorboard` leaves it out of `--report-to`)"""
    report_to: tuple[str, ...] = ("tensorboard",)
    """where the run reports besides metrics.jsonl: tensorboard, wandb, trackio, mlflow (several
    at once, space- or comma-separated), or none; each but TensorBoard is an extra
    (`agentgym[wandb]`; docs/trainers.md, "Run reports")"""
    progress: bool = True
    """show a progress bar"""
    quiet: bool = False
    """do not print the per-step lines"""

    def validate(self) -> None:
        self.report_to = report_to_names(self.report_to)
        check_installed(self.report_to)

    @property
    def trackers(self) -> tuple[str, ...]:
        """The trackers the run reports to: ``--report-to`` less TensorBoard under ``--no-tensorboard``."""
        return tuple(n for n in report_to_names(self.report_to) if self.tensorboard or n != "tensorboard")


@dataclass
class RunConfig(BaseRunConfig):
    """An RL run: the basics, its length and resume."""

    num_steps: int = 100
    """optimizer steps (one rollout batch each)"""
    max_episodes: int = 0
    """also stop once this many env episodes were played, extra rollouts (VSPO resampling, DAPO
    oversampling) included: an equal budget across methods (0: no limit)"""
    save_every: int = 10
    """checkpoint every this many steps (and at the end; 0: only at the end)"""
    resume: str | None = None
    """resume from a checkpoint: a path, or `auto` (also the bare flag) for OUTPUT_DIR's latest"""
    dry_run: bool = False
    """check the settings and print the memory estimate of one process (docs/trainers.md, "Memory"),
    then stop before any model is loaded"""
    log_episodes: int = 2
    """groups of each step kept in OUTPUT_DIR/episodes/ with every held-out evaluation's episodes,
    for `agentgym view` (0: none; docs/trainers.md, "Saved episodes")"""

    def validate(self) -> None:
        super().validate()
        at_least("num-steps", self.num_steps, 1)
        at_least("max-episodes", self.max_episodes, 0)
        at_least("save-every", self.save_every, 0)
        at_least("log-episodes", self.log_episodes, 0)
        if self.resume not in (None, "auto") and not os.path.exists(self.resume):
            raise ConfigError(f"--resume {self.resume!r} does not exist (give a checkpoint or run directory, or `auto`)")


@dataclass
class EvalConfig:
    """Held-out evaluation before and after training."""

    eval_episodes: int = 256
    """episodes evaluated before and after training on each `eval_split` (0: no evaluation)"""
    eval_split: str = "valid"
    """split for the before/after evaluation (held out: no training task comes from it); a
    comma-separated list (`L1,L0,L2`) evaluates each, the first being the run's headline"""
    eval_seed: int = 10_000
    """task seed of the first evaluation episode (the same tasks before and after)"""
    eval_every: int = 0
    """also evaluate every N steps, for a learning curve (`eval/success`, `eval/return`; 0: only
    before and after)"""

    def validate(self) -> None:
        at_least("eval-episodes", self.eval_episodes, 0)
        at_least("eval-every", self.eval_every, 0)
        splits = [s.strip() for s in self.eval_split.split(",")]
        if "" in splits[1:] or len(splits) > 1 and not splits[0] or len(set(splits)) < len(splits):
            raise ConfigError(f"--eval-split {self.eval_split!r}: give one split, or distinct splits separated "
                              f"by commas (e.g. L1,L0,L2)")

    @property
    def eval_splits(self) -> tuple[str, ...]:
        """The evaluated splits, the headline first.

        >>> EvalConfig(eval_split="L1, L0,L2").eval_splits
        ('L1', 'L0', 'L2')
        """
        return tuple(s.strip() for s in self.eval_split.split(","))
