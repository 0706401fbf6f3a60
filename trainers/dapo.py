"""DAPO-style training: dynamic sampling (only groups whose returns differ, oversampled to fill
the batch) with clip-higher (eps_low 0.2, eps_high 0.28), token-mean loss and no KL term.

    python trainers/dapo.py
    python trainers/dapo.py --dapo.max-rounds 5 --eps-high 0.3

Every GRPO flag works here; DAPO's own are --dapo.* (--help lists them).
"""

from dataclasses import dataclass, field

from agentgym.train.config.cli import exit_on_config_error, parse
from agentgym.train.config.run import RunConfig
from agentgym.train.config.tree import TrainConfig
from agentgym.train.hooks import TrainerExtension
from agentgym.train.loop import TrainResult, train
from agentgym.train.methods import DAPO, DAPOConfig
from agentgym.train.methods.dapo import DAPO_EPS_HIGH, DAPO_EPS_LOW
from agentgym.train.optim.settings import LossConfig, OptimConfig


@dataclass
class DAPOTrainConfig(TrainConfig):
    dapo: DAPOConfig = field(default_factory=DAPOConfig)


def defaults() -> DAPOTrainConfig:
    return DAPOTrainConfig(optim=OptimConfig(loss=LossConfig(eps_low=DAPO_EPS_LOW, eps_high=DAPO_EPS_HIGH, beta=0.0,
                                                             aggregation="token-mean")),
                           run=RunConfig(output_dir="runs/dapo"))


def extensions(config: DAPOTrainConfig) -> list[TrainerExtension]:
    """What this method adds to the loop (the cold start asks them too)."""
    return [DAPO(config.dapo)]


def main(config: DAPOTrainConfig) -> TrainResult:
    return train(config, extensions(config), name="dapo")


if __name__ == "__main__":
    with exit_on_config_error():
        main(parse(DAPOTrainConfig, description=__doc__, default=defaults()))
