"""GiGPO: GRPO plus a step-level advantage from steps that start in the same state (SPEC §4.5).

    python trainers/gigpo.py --env-id ALFWorld-v0 --layout window
    python trainers/gigpo.py --gigpo.omega 0.5 --gigpo.anchor state

Every GRPO flag works here; GiGPO's own are --gigpo.* (--help lists them).
"""

from dataclasses import dataclass, field

from agentgym.train.config.cli import exit_on_config_error, parse
from agentgym.train.config.run import RunConfig
from agentgym.train.config.tree import TrainConfig
from agentgym.train.hooks import TrainerExtension
from agentgym.train.loop import TrainResult, train
from agentgym.train.methods import GiGPO, GiGPOConfig


@dataclass
class GiGPOTrainConfig(TrainConfig):
    gigpo: GiGPOConfig = field(default_factory=GiGPOConfig)


def defaults() -> GiGPOTrainConfig:
    return GiGPOTrainConfig(run=RunConfig(output_dir="runs/gigpo"))


def extensions(config: GiGPOTrainConfig) -> list[TrainerExtension]:
    """What this method adds to the loop (the cold start asks them too)."""
    return [GiGPO(config.gigpo)]


def main(config: GiGPOTrainConfig) -> TrainResult:
    return train(config, extensions(config), name="gigpo")


if __name__ == "__main__":
    with exit_on_config_error():
        main(parse(GiGPOTrainConfig, description=__doc__, default=defaults()))
