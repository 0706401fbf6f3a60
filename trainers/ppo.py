"""PPO with a value head: a critic on the policy's last hidden state, GAE over turns (SPEC §4.5).

    python trainers/ppo.py                                    # tiny model on ToolQA-v0, CPU, minutes
    python trainers/ppo.py --model runs/sft/final --ppo.gae-lambda 0.9 --ppo.value-clip 0.2
    python trainers/ppo.py --env-id ALFWorld-v0 --layout window --model /ckpt/Qwen2.5-1.5B-Instruct

Each step plays one episode on each of 32 tasks (no groups: the value head is the baseline), scores
every turn's prompt with the value head, and trains on GAE advantages over the turns with the
same token-level PPO-clip loss as GRPO, plus a value loss that trains the head and the policy
together. Every GRPO flag works here; PPO's own are --ppo.* (--help lists them).
"""

from dataclasses import dataclass, field

from agentgym.train.base.errors import ConfigError
from agentgym.train.config.cli import exit_on_config_error, parse
from agentgym.train.config.run import RunConfig
from agentgym.train.config.tree import TrainConfig
from agentgym.train.hooks import TrainerExtension
from agentgym.train.loop import TrainResult, train
from agentgym.train.methods import PPO, PPOConfig
from agentgym.train.rollout.settings import RolloutConfig


@dataclass
class PPOTrainConfig(TrainConfig):
    ppo: PPOConfig = field(default_factory=PPOConfig)

    def validate(self) -> None:
        super().validate()
        if self.model.fsdp:
            raise ConfigError("--fsdp does not shard the value head yet: run PPO without --fsdp (torchrun without it "
                              "still trains data-parallel)")


def defaults() -> PPOTrainConfig:
    # GRPO's 4 tasks x 8 episodes, as 32 tasks x 1: the same episodes per step, no group needed
    return PPOTrainConfig(run=RunConfig(output_dir="runs/ppo"), rollout=RolloutConfig(num_groups=32, group_size=1))


def extensions(config: PPOTrainConfig) -> list[TrainerExtension]:
    """What this method adds to the loop (the cold start asks them too)."""
    return [PPO(config.ppo)]


def main(config: PPOTrainConfig) -> TrainResult:
    return train(config, extensions(config), name="ppo")


if __name__ == "__main__":
    with exit_on_config_error():
        main(parse(PPOTrainConfig, description=__doc__, default=defaults()))
