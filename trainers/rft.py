"""``agentgym train rft`` as a script: the same flags, ``--help`` and run (the method is declared in
agentgym/train/methods/rft.py; ``agentgym train --help`` lists them all).

    python trainers/rft.py --help
"""

from agentgym.train.command import trainer
from agentgym.train.methods.rft import RFTTrainConfig

TRAINER = trainer("rft")
defaults, extensions, main = TRAINER.defaults, TRAINER.extensions, TRAINER.main

__all__ = ["RFTTrainConfig", "defaults", "extensions", "main"]

if __name__ == "__main__":
    TRAINER.cli()
