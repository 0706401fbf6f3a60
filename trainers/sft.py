"""``agentgym train sft`` as a script: the same flags, ``--help`` and run (the method is declared in
agentgym/train/methods/sft.py; ``agentgym train --help`` lists them all).

    python trainers/sft.py --help
"""

from agentgym.train.command import trainer
from agentgym.train.config.tree import SFTRunConfig

TRAINER = trainer("sft")
defaults, extensions, main = TRAINER.defaults, TRAINER.extensions, TRAINER.main

__all__ = ["SFTRunConfig", "defaults", "extensions", "main"]

if __name__ == "__main__":
    TRAINER.cli()
