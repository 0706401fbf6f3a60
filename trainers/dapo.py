"""``agentgym train dapo`` as a script: the same flags, ``--help`` and run (the method is declared in
agentgym/train/methods/dapo.py; ``agentgym train --help`` lists them all).

    python trainers/dapo.py --help
"""

from agentgym.train.command import trainer
from agentgym.train.methods.dapo import DAPOTrainConfig

TRAINER = trainer("dapo")
defaults, extensions, main = TRAINER.defaults, TRAINER.extensions, TRAINER.main

__all__ = ["DAPOTrainConfig", "defaults", "extensions", "main"]

if __name__ == "__main__":
    TRAINER.cli()
