"""``agentgym train gcd`` as a script: the same flags, ``--help`` and run (the method is declared in
agentgym/train/methods/gcd/extension.py; ``agentgym train --help`` lists them all).

    python trainers/gcd.py --help
"""

from agentgym.train.command import trainer
from agentgym.train.methods.gcd.extension import GCDTrainConfig

TRAINER = trainer("gcd")
defaults, extensions, main = TRAINER.defaults, TRAINER.extensions, TRAINER.main

__all__ = ["GCDTrainConfig", "defaults", "extensions", "main"]

if __name__ == "__main__":
    TRAINER.cli()
