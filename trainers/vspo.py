"""VSPO: GRPO that replaces zero-advantage groups with tasks drawn by value, plus value-smoothing
clipping (SPEC §4.3).

    python trainers/vspo.py                                   # tiny model on ToolQA-v0, CPU, minutes
    python trainers/vspo.py --model runs/sft/final --vspo.eta 0.5
    python trainers/vspo.py --env-id ALFWorld-v0 --layout window --model /ckpt/Qwen2.5-1.5B-Instruct

Every GRPO flag works here; VSPO's own are --vspo.* (--help lists them). The run prints one line
per step and, at the end, held-out success and PRS return before -> after training.
"""

from dataclasses import dataclass, field

from agentgym.train.config.cli import exit_on_config_error, parse
from agentgym.train.config.run import RunConfig
from agentgym.train.config.tree import TrainConfig
from agentgym.train.hooks import TrainerExtension
from agentgym.train.loop import TrainResult, train
from agentgym.train.methods import VSPO, VSPOConfig


@dataclass
class VSPOTrainConfig(TrainConfig):
    vspo: VSPOConfig = field(default_factory=VSPOConfig)


def defaults() -> VSPOTrainConfig:
    return VSPOTrainConfig(run=RunConfig(output_dir="runs/vspo"))


def extensions(config: VSPOTrainConfig) -> list[TrainerExtension]:
    """What this method adds to the loop (the cold start asks them too)."""
    return [VSPO(config.vspo)]


def main(config: VSPOTrainConfig) -> TrainResult:
    return train(config, extensions(config), name="vspo")


if __name__ == "__main__":
    with exit_on_config_error():
        main(parse(VSPOTrainConfig, description=__doc__, default=defaults()))
