"""``agentgym train grpo`` as a script: the same flags, ``--help`` and run (the method is declared in
agentgym/train/methods/grpo.py; ``agentgym train --help`` lists them all).

    python trainers/grpo.py --help
"""

from agentgym.train.command import trainer
from agentgym.train.config.tree import TrainConfig

TRAINER = trainer("grpo")
defaults, extensions, main = TRAINER.defaults, TRAINER.extensions, TRAINER.main

__all__ = ["TrainConfig", "defaults", "extensions", "main"]

if __name__ == "__main__":
    TRAINER.cli()
