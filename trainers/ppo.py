"""``agentgym train ppo`` as a script: the same flags, ``--help`` and run (the method is declared in
agentgym/train/methods/ppo.py; ``agentgym train --help`` lists them all).

    python trainers/ppo.py --help
"""

from agentgym.train.command import trainer
from agentgym.train.methods.ppo import PPOTrainConfig

TRAINER = trainer("ppo")
defaults, extensions, main = TRAINER.defaults, TRAINER.extensions, TRAINER.main

__all__ = ["PPOTrainConfig", "defaults", "extensions", "main"]

if __name__ == "__main__":
    TRAINER.cli()
