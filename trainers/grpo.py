"""Multi-turn GRPO on any registered agentgym env, with a Hugging Face causal LM (SPEC §4.2).

    python trainers/grpo.py                                   # tiny model: SFT cold start, then GRPO on ToolQA-v0
    python trainers/grpo.py --model runs/sft/final            # GRPO from your own cold start
    python trainers/grpo.py --env-id ALFWorld-v0 --layout window --model /ckpt/Qwen2.5-1.5B-Instruct

For each task, G episodes (a group); every model-written token of episode i gets the advantage
(R_i - mean R) / std R, env-written tokens are masked out, and the loss is token-level PPO-clip
with an optional k3 KL to the initial model. The loop (setup, rollout, advantages, update, log,
checkpoint, held-out evaluation) is agentgym.train.loop; every flag is in --help.
"""

from agentgym.train.config.cli import exit_on_config_error, parse
from agentgym.train.config.tree import TrainConfig
from agentgym.train.hooks import TrainerExtension
from agentgym.train.loop import TrainResult, train


def defaults() -> TrainConfig:
    return TrainConfig()


def extensions(config: TrainConfig) -> list[TrainerExtension]:
    """What this method adds to the loop (GRPO: nothing; the cold start asks them too)."""
    return []


def main(config: TrainConfig) -> TrainResult:
    return train(config, extensions(config), name="grpo")


if __name__ == "__main__":
    with exit_on_config_error():
        main(parse(TrainConfig, description=__doc__, default=defaults()))
