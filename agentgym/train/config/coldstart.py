"""The cold start's settings (:class:`SFTConfig`) and each env's recipe for those left unset."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from agentgym.settings import SettingError, check_on_init
from agentgym.train.base.errors import is_int, is_number

# The env's SFT recipe: what an SFTConfig setting left None takes (env's entry, else "*"'s).
# ToolQA's: enough distinct expert episodes and steps that the tiny-wide model learns to copy a
# name into its query and a value from the passage into its answer on tasks it never saw (about
# 6 minutes on 2 CPU cores), from a teacher that says 60% of its answers as a sentence: the habit
# RL then removes (docs/trainers.md, "Learning that shows").
DEFAULT_COLD_START = {
    "*": {"num_steps": 100, "num_episodes": 128, "batch_size": 16, "chatty_answers": 0.0},
    "ToolQA-v0": {"num_steps": 3600, "num_episodes": 2048, "batch_size": 8, "chatty_answers": 0.6},
}


@dataclass
class SFTConfig:
    """Supervised fine-tuning on expert episodes: ``trainers/sft.py``, and the RL trainers' cold
    start (``--cold-start.*``). A setting left None takes the env's recipe (``DEFAULT_COLD_START``),
    in both: ``trainers/sft.py`` on its defaults makes the same model as an RL run's cold start."""

    num_episodes: int | None = None
    """expert episodes to collect (distinct tasks; RL never trains on a cold start's; None: the env's
    recipe, 2048 on ToolQA-v0, else 128)"""
    num_steps: int | None = None
    """optimizer steps (a cold start's 0: none; None: the env's recipe, 3600 on ToolQA-v0, else 100)"""
    batch_size: int | None = None
    """sequences per optimizer step (None: the env's recipe, 8 on ToolQA-v0, else 16)"""
    micro_batch_size: int | None = None
    """sequences per forward pass (None: the batch size)"""
    learning_rate: float = 3e-3
    """AdamW peak learning rate"""
    lr_schedule: Literal["cosine", "constant"] = "cosine"
    """after the warmup: cosine decay to a tenth of the peak at the last step, or constant"""
    warmup_steps: int = 10
    """linear warmup steps"""
    max_grad_norm: float = 1.0
    """gradient clipping (0: off)"""
    log_every: int | None = None
    """print a summary line every this many steps (None: a tenth of the steps, at least 10)"""
    judge_samples: int = 0
    """GCD cold start: judge samples (critique + verdict from step labels) mixed into the expert data (0: none)"""
    chatty_answers: float | None = None
    """fraction of expert episodes whose final answer is said as a sentence (`<answer>The answer is
    X.</answer>`), as a chatty teacher writes it (envs whose episodes end in `<answer>`; None: the
    env's recipe, 0.6 on ToolQA-v0, else 0)"""
    expert_split: str | None = None
    """split the expert's episodes are played on (None: the run's `--split`); e.g. `train` for an RL
    run on a pool of its games (`--split L0`), so the cold start plays other games of the same kind"""
    explore: float = 0.0
    """share of turns on which the expert episode plays a random admissible action instead (never
    trained on), so the data holds states off the expert's path, each labelled with the expert's next
    action from there (DAgger's mixture; envs with admissible actions and a planning expert, e.g. ALFWorld)"""
    scored_negatives: int = 0
    """replies scored among listed actions (an env's `scored_actions=True`): the expert's action is raised against this many other listed actions, drawn uniformly each step (a sampled softmax; 0: against every listed action)"""
    prompt_loss_weight: float = 0.0
    """weight of a next-token loss on the tokens the policy does not write (system prompt,
    observations), beside the reply loss (0: replies only). A model built from scratch (the tiny
    ones) then also learns to read the env's text, which its few reply tokens teach slowly"""

    def __post_init__(self) -> None:
        check_on_init(self)

    def resolved(self, env_id: str) -> SFTConfig:
        """This config with every None filled in: from ``env_id``'s recipe, the micro-batch from
        the batch, the log interval from the steps.

        >>> SFTConfig(num_steps=5).resolved("ToolQA-v0").num_steps
        5
        >>> cfg = SFTConfig().resolved("ALFWorld-v0")
        >>> cfg.num_episodes, cfg.micro_batch_size, cfg.log_every
        (128, 16, 10)
        """
        table = {**DEFAULT_COLD_START["*"], **DEFAULT_COLD_START.get(env_id, {})}
        out = replace(self, **{k: v for k, v in table.items() if getattr(self, k) is None})
        return replace(out, micro_batch_size=out.micro_batch_size or out.batch_size,
                       log_every=out.log_every or max(10, out.num_steps // 10))

    def check(self) -> None:
        for name, least in (("num_episodes", 1), ("num_steps", 0), ("batch_size", 1), ("micro_batch_size", 1),
                            ("log_every", 1)):
            value = getattr(self, name)
            if value is not None and (not is_int(value) or value < least):
                raise SettingError(name, f"must be an integer >= {least}, got {value!r}")
        if not (is_number(self.learning_rate) and self.learning_rate > 0):
            raise SettingError("learning_rate", f"must be a finite number > 0, got {self.learning_rate!r}")
        if self.lr_schedule not in ("cosine", "constant"):
            raise SettingError("lr_schedule", f"must be cosine or constant, got {self.lr_schedule!r}")
        if not is_int(self.warmup_steps) or self.warmup_steps < 0:
            raise SettingError("warmup_steps", f"must be an integer >= 0, got {self.warmup_steps!r}")
        if not (is_number(self.max_grad_norm) and self.max_grad_norm >= 0):
            raise SettingError("max_grad_norm", f"must be a finite number >= 0, got {self.max_grad_norm!r}")
        if not is_int(self.scored_negatives) or self.scored_negatives < 0:
            raise SettingError("scored_negatives", f"must be an integer >= 0, got {self.scored_negatives!r}")
        if not is_int(self.judge_samples) or self.judge_samples < 0:
            raise SettingError("judge_samples", f"must be an integer >= 0, got {self.judge_samples!r}")
        if self.chatty_answers is not None and not (is_number(self.chatty_answers) and 0 <= self.chatty_answers <= 1):
            raise SettingError("chatty_answers", f"is a fraction in [0, 1], got {self.chatty_answers!r}")
        if not (is_number(self.prompt_loss_weight) and self.prompt_loss_weight >= 0):
            raise SettingError("prompt_loss_weight", f"must be a finite number >= 0, got {self.prompt_loss_weight!r}")
        if self.expert_split is not None and (not isinstance(self.expert_split, str) or not self.expert_split):
            raise SettingError("expert_split", f"must be a split name or None, got {self.expert_split!r}")
        if not (is_number(self.explore) and 0 <= self.explore <= 1):
            raise SettingError("explore", f"is a fraction in [0, 1], got {self.explore!r}")
