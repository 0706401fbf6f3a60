"""GCD: GRPO (or GiGPO) with the actor co-trained as a generative judge of its own steps, and a
"Common mistakes" list from its critiques put into later system prompts (SPEC §4.4).

    python trainers/gcd.py                                    # tiny model on ToolQA-v0, CPU, minutes
    python trainers/gcd.py --env-id ALFWorld-v0 --layout window --gcd.base gigpo
    python trainers/gcd.py --gcd.lam 0.5 --gcd.k 8 --gcd.judge-url http://127.0.0.1:8000/v1 --gcd.judge-model judge

Every GRPO flag works here; GCD's own are --gcd.* and, with --gcd.base gigpo, GiGPO's --gigpo.*
(--help lists them). The mistakes list is printed and written to OUTPUT_DIR/gcd_mistakes.jsonl
each time it changes.
"""

from dataclasses import dataclass, field

from agentgym.train.coldstart.settings import SFTConfig
from agentgym.train.config.cli import exit_on_config_error, parse
from agentgym.train.config.run import RunConfig
from agentgym.train.config.tree import TrainConfig
from agentgym.train.hooks import TrainerExtension
from agentgym.train.loop import TrainResult, train
from agentgym.train.methods import GCDConfig, GiGPOConfig, gcd_extensions


@dataclass
class GCDTrainConfig(TrainConfig):
    gcd: GCDConfig = field(default_factory=GCDConfig)
    gigpo: GiGPOConfig = field(default_factory=GiGPOConfig)
    """GiGPO's settings, used with --gcd.base gigpo"""


def defaults() -> GCDTrainConfig:
    # as the paper's cold start: judge samples mixed into the expert data
    return GCDTrainConfig(run=RunConfig(output_dir="runs/gcd"), cold_start=SFTConfig(judge_samples=64))


def extensions(config: GCDTrainConfig) -> list[TrainerExtension]:
    """What this method adds to the loop (the cold start asks them too: GCD's judge samples)."""
    return gcd_extensions(config)


def main(config: GCDTrainConfig) -> TrainResult:
    return train(config, extensions(config), name=f"gcd-{config.gcd.base}")


if __name__ == "__main__":
    with exit_on_config_error():
        main(parse(GCDTrainConfig, description=__doc__, default=defaults()))
