"""RFT (rejection-sampling fine-tuning, expert iteration): the policy plays its groups, and is
fine-tuned with the SFT loss on the episodes that succeeded; the others are left out.

    python trainers/rft.py                                    # tiny model on ToolQA-v0, CPU, minutes
    python trainers/rft.py --model runs/sft/final --rft.keep best
    python trainers/rft.py --rft.min-return 0.8               # a return threshold instead of success

Every GRPO flag works here; RFT's own are --rft.* (--help lists them). It trains with one epoch
and one minibatch per step and no KL term, so the update is the SFT gradient on the kept episodes
(agentgym/train/methods/rft.py). The run prints one line per step and, at the end, held-out success
and PRS return before -> after training.
"""

from dataclasses import dataclass, field

from agentgym.train.config.cli import exit_on_config_error, parse
from agentgym.train.config.run import RunConfig
from agentgym.train.config.tree import TrainConfig
from agentgym.train.hooks import TrainerExtension
from agentgym.train.loop import TrainResult, train
from agentgym.train.methods import RFT, RFTConfig
from agentgym.train.optim.settings import LossConfig, OptimConfig


@dataclass
class RFTTrainConfig(TrainConfig):
    rft: RFTConfig = field(default_factory=RFTConfig)


def defaults() -> RFTTrainConfig:
    # no KL term: the update is the SFT gradient on the kept episodes (one epoch, one minibatch and
    # token-mean, the defaults of every trainer, keep it so)
    return RFTTrainConfig(optim=OptimConfig(loss=LossConfig(beta=0.0)), run=RunConfig(output_dir="runs/rft"))


def extensions(config: RFTTrainConfig) -> list[TrainerExtension]:
    """What this method adds to the loop (the cold start asks them too)."""
    return [RFT(config.rft)]


def main(config: RFTTrainConfig) -> TrainResult:
    return train(config, extensions(config), name="rft")


if __name__ == "__main__":
    with exit_on_config_error():
        main(parse(RFTTrainConfig, description=__doc__, default=defaults()))
