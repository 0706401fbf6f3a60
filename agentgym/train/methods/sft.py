"""The cold start as a registered method: supervised fine-tuning on an env's expert episodes
(:mod:`agentgym.train.coldstart.sft`), with GCD's judge samples mixed in when asked for."""

from __future__ import annotations

from agentgym.train.config.tree import SFTRunConfig
from agentgym.train.hooks import TrainerExtension
from agentgym.train.methods.gcd.extension import GCD
from agentgym.train.methods.registry import Method, register


def sft_extensions(config: SFTRunConfig) -> list[TrainerExtension]:
    # --judge-samples: GCD's judge samples (critique and verdict) mixed into the expert data
    return [GCD()] if config.sft.judge_samples else []


SFT_METHOD = register(Method(
    name="sft", summary="the cold start: supervised fine-tuning on an env's expert episodes",
    description="""Cold start: supervised fine-tuning on an env's expert episodes (SPEC §5).

    python trainers/sft.py                                    # tiny model, ToolQA-v0 single-hop, CPU
    python trainers/sft.py --env-id ALFWorld-v0 --layout window --model /ckpt/Qwen2.5-1.5B-Instruct

Plays the env's expert on --num-episodes distinct training tasks, lays each episode out as the
chat transcript the RL trainers sample from, and trains on the assistant tokens only. Saves
OUTPUT_DIR/final, a model directory the RL trainers accept as --model; it records which tasks it
trained on, and RL started from it leaves those tasks out of its task stream.
""",
    config=SFTRunConfig, defaults=SFTRunConfig, extensions=sft_extensions, doc="docs/trainers.md#trainerssftpy",
    cold_start=True))
