"""``agentgym train vspo`` as a script: the same flags, ``--help`` and run (the method is declared in
agentgym/train/methods/vspo.py; ``agentgym train --help`` lists them all).

    python trainers/vspo.py --help
"""

from agentgym.train.command import trainer
from agentgym.train.methods.vspo import VSPOTrainConfig

TRAINER = trainer("vspo")
defaults, extensions, main = TRAINER.defaults, TRAINER.extensions, TRAINER.main

__all__ = ["VSPOTrainConfig", "defaults", "extensions", "main"]

if __name__ == "__main__":
    TRAINER.cli()
