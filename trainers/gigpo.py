"""``agentgym train gigpo`` as a script: the same flags, ``--help`` and run (the method is declared in
agentgym/train/methods/gigpo.py; ``agentgym train --help`` lists them all).

    python trainers/gigpo.py --help
"""

from agentgym.train.command import trainer
from agentgym.train.methods.gigpo import GiGPOTrainConfig

TRAINER = trainer("gigpo")
defaults, extensions, main = TRAINER.defaults, TRAINER.extensions, TRAINER.main

__all__ = ["GiGPOTrainConfig", "defaults", "extensions", "main"]

if __name__ == "__main__":
    TRAINER.cli()
