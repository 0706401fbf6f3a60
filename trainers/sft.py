"""Cold start: supervised fine-tuning on an env's expert episodes (SPEC §5).

    python trainers/sft.py                                    # tiny model, ToolQA-v0 single-hop, CPU
    python trainers/sft.py --env-id ALFWorld-v0 --layout window --model /ckpt/Qwen2.5-1.5B-Instruct

Plays the env's expert on --num-episodes distinct training tasks, lays each episode out as the
chat transcript the RL trainers sample from, and trains on the assistant tokens only. Saves
OUTPUT_DIR/final, a model directory the RL trainers accept as --model; it records which tasks it
trained on, and RL started from it leaves those tasks out of its task stream.
"""

from agentgym.train.coldstart.sft import run_sft
from agentgym.train.config.cli import exit_on_config_error, parse
from agentgym.train.config.tree import SFTRunConfig
from agentgym.train.methods import GCD


def main(config: SFTRunConfig) -> str:
    # --judge-samples: GCD's judge samples (critique and verdict) mixed into the expert data
    return run_sft(config, [GCD()] if config.sft.judge_samples else [])


if __name__ == "__main__":
    with exit_on_config_error():
        main(parse(SFTRunConfig, description=__doc__))
