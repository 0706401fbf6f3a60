"""The settings groups composed into the one tree the command line and :func:`~agentgym.train.base.flags.build` see.

:class:`TrainConfig` (the RL trainers) is the groups env, model, rollout (which holds the sampling
settings, one :class:`~agentgym.agents.SamplingConfig`), optim (which holds the policy's
:class:`~agentgym.train.config.optim.LossConfig`), run and eval, whose flags carry no prefix
(``--env-id``, ``--temperature``, ``--eps-low``), and the cold start, an
:class:`~agentgym.train.config.coldstart.SFTConfig` whose flags carry its name
(``--cold-start.num-steps``). :class:`SFTRunConfig` (``trainers/sft.py``) is env, model, the same
SFT settings, the token layout and the run basics. A method adds one group of its own
(``vspo: VSPOConfig``), whose flags carry its prefix (``--vspo.eta``). How names are given and kept
unique is :mod:`agentgym.train.base.flags`.

Each group (all in this package but a method's own, which lives in its module) checks its own values
(``check()``); a tree's ``validate()`` runs those checks, naming the flag, then what needs several
groups, the file system or the env, once.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields
from typing import Annotated, Any

from agentgym.settings import SettingError
from agentgym.train.base.errors import ConfigError, at_least
from agentgym.train.base.flags import ConfigTree, Flat, Grouped, groups
from agentgym.train.base.world import launched_world_size
from agentgym.train.config.coldstart import SFTConfig
from agentgym.train.config.env import EnvConfig, check_history_layout
from agentgym.train.config.lora import LoraConfig
from agentgym.train.config.model import ModelConfig
from agentgym.train.config.optim import OptimConfig
from agentgym.train.config.rollout import LayoutConfig, RolloutConfig
from agentgym.train.config.run import BaseRunConfig, EvalConfig, RunConfig


def check_groups(config: Any) -> None:
    """Check the values of every group of a config that checks its own (``check()``), the error
    naming the flag of the bad setting (``--top-p``, ``--cold-start.num-steps``)."""
    for group, prefix in groups(config):
        if hasattr(group, "check"):
            try:
                group.check()
            except SettingError as e:
                raise ConfigError(f"--{prefix}{e.name.replace('_', '-')} {e.problem}") from None


@dataclass
class TrainConfig(ConfigTree):
    """An RL run: GRPO, and every method built on the same loop."""

    env: Annotated[EnvConfig, Flat] = field(default_factory=EnvConfig)
    model: Annotated[ModelConfig, Flat] = field(default_factory=ModelConfig)
    rollout: Annotated[RolloutConfig, Flat] = field(default_factory=RolloutConfig)
    optim: Annotated[OptimConfig, Flat] = field(default_factory=OptimConfig)
    run: Annotated[RunConfig, Flat] = field(default_factory=RunConfig)
    eval: Annotated[EvalConfig, Flat] = field(default_factory=EvalConfig)
    cold_start: Annotated[SFTConfig, Grouped] = field(default_factory=SFTConfig)
    """SFT on expert episodes before RL, with a built-in `--model tiny*` (`--cold-start.num-steps 0`: none)"""
    lora: Annotated[LoraConfig, Grouped] = field(default_factory=LoraConfig)
    """train LoRA adapters instead of every weight (`--lora.r 8`; the cold start trains in full)"""

    def validate(self) -> None:
        """Check every group (and a method's own, which defines ``validate``)."""
        check_groups(self)
        for f in fields(self):
            group = getattr(self, f.name)
            if hasattr(group, "validate"):
                group.validate()
        # group advantages compare a task's episodes; a method group whose advantages need no group
        # (PPO's value head) says so with a class attribute ``min_group_size = 1``
        least = min(getattr(getattr(self, f.name), "min_group_size", 2) for f in fields(self))
        at_least("group-size", self.rollout.group_size, least, "group advantages compare episodes of one task")
        if self.rollout.async_steps > 0 and self.model.fsdp:
            raise ConfigError("--async-steps does not run with --fsdp yet (the rollout thread would need the "
                              "sharded weights gathered); use --async-steps 0")
        try:
            kwargs = self.env.resolve(self.model.model)[1]
        except ValueError:
            kwargs = {}  # a model directory's record that cannot be read: check_env says so below
        if kwargs.get("constrained_choice") and self.rollout.generator != "hf":
            raise ConfigError(f"constrained_choice=True needs --generator hf: the {self.rollout.generator} generator "
                              "cannot keep its samples to the env's allowed replies yet")
        if kwargs.get("scored_actions") and self.rollout.generator != "hf":
            raise ConfigError(f"scored_actions=True needs --generator hf: the {self.rollout.generator} generator "
                              "cannot score the env's listed actions yet")
        self.env.check_env(self.model.model, self.eval.eval_splits if self.eval.eval_episodes > 0 else (),
                           {"--cold-start.expert-split": self.cold_start.expert_split})
        check_history_layout(self.env, self.model.model, self.rollout.layout)

    def cold_start_config(self) -> SFTRunConfig:
        """The SFT run of this run's cold start: this run's env, model, token layout and seed, the
        cold-start settings with the env's recipe filled in, under OUTPUT_DIR/sft."""
        return SFTRunConfig(env=self.env, model=self.model, sft=self.cold_start.resolved(self.env.env_id),
                            chat=LayoutConfig(**_base_fields(self.rollout, LayoutConfig)),
                            run=BaseRunConfig(**{**_base_fields(self.run, BaseRunConfig),
                                                 "output_dir": os.path.join(self.run.output_dir, "sft")}))


def _base_fields(config: Any, base: type) -> dict[str, Any]:
    """The settings ``config`` (of a subclass of ``base``) inherits from ``base``."""
    return {f.name: getattr(config, f.name) for f in fields(base)}


@dataclass
class SFTRunConfig(ConfigTree):
    """A cold-start SFT run (trainers/sft.py)."""

    env: Annotated[EnvConfig, Flat] = field(default_factory=EnvConfig)
    model: Annotated[ModelConfig, Flat] = field(default_factory=ModelConfig)
    sft: Annotated[SFTConfig, Flat] = field(default_factory=SFTConfig)
    """the SFT settings; those left None take the env's recipe, the RL trainers' cold start (so
    `python trainers/sft.py` on ToolQA-v0 is the main job's cold start)"""
    chat: Annotated[LayoutConfig, Flat] = field(default_factory=LayoutConfig)
    """the token layout, as in the RL trainers"""
    run: Annotated[BaseRunConfig, Flat] = field(default_factory=lambda: BaseRunConfig(output_dir="runs/sft"))
    lora: Annotated[LoraConfig, Grouped] = field(default_factory=LoraConfig)
    """train LoRA adapters instead of every weight (`--lora.r 8`): OUTPUT_DIR/final is then an adapter directory"""

    def validate(self) -> None:
        if self.model.fsdp:
            raise ConfigError("--fsdp is for the RL trainers; trainers/sft.py trains in one process")
        if launched_world_size() > 1:
            raise ConfigError("trainers/sft.py trains in one process: run it with python, not torchrun "
                              "(an RL run under torchrun makes its cold start on rank 0)")
        check_groups(self)
        self.env.validate()
        self.model.validate()
        self.lora.validate()
        self.run.validate()
        if self.sft.num_steps is not None:
            at_least("num-steps", self.sft.num_steps, 1)
        self.env.check_env(self.model.model, more_splits={"--expert-split": self.sft.expert_split})
        check_history_layout(self.env, self.model.model, self.chat.layout)
