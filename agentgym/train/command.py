"""``agentgym train METHOD [flags]``: any registered method (:mod:`agentgym.train.methods.registry`)
from the installed package, and the thin ``trainers/METHOD.py`` scripts, which run the same code.

    agentgym train --help                 the registered methods, one line each
    agentgym train vspo --help            VSPO's flags
    agentgym train grpo --num-steps 10    a run
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

from agentgym.train.coldstart.sft import run_sft
from agentgym.train.config.cli import exit_on_config_error, parse
from agentgym.train.hooks import TrainerExtension
from agentgym.train.loop import train
from agentgym.train.methods import METHODS, Method, get_method
from agentgym.train.run.setup import dry_run


@dataclass(frozen=True)
class Trainer:
    """A registered method as a trainer script sees it: ``defaults()``, ``extensions(config)``,
    ``main(config)`` (what the learning-curves benchmark and the tests call), and ``cli(argv)``."""

    method: Method

    def defaults(self) -> Any:
        """The config a run with no flags starts from."""
        return self.method.defaults()

    def extensions(self, config: Any) -> list[TrainerExtension]:
        """What this method adds to the loop (the cold start asks them too)."""
        return self.method.extensions(config)

    def main(self, config: Any) -> Any:
        """Train with ``config``: the RL loop's ``TrainResult``, or the cold start's model directory."""
        if self.method.cold_start:
            return run_sft(config, self.extensions(config))
        if config.run.dry_run:
            return dry_run(config)
        return train(config, self.extensions(config), name=self.method.recorded_name(config))

    def cli(self, argv: list[str] | None = None, prog: str | None = None) -> Any:
        """Parse ``argv`` (the command line when None) into this method's config and train."""
        with exit_on_config_error():
            config = parse(self.method.config, argv, description=self.method.description, prog=prog,
                           default=None if self.method.cold_start else self.defaults())
            return self.main(config)


def trainer(name: str) -> Trainer:
    """The registered method ``name`` as a trainer (a ``ValueError`` naming the closest when unknown)."""
    return Trainer(get_method(name))


def usage() -> str:
    """``agentgym train --help``: the registered methods, one line each."""
    width = max(map(len, METHODS))
    lines = ["usage: agentgym train METHOD [flags]", "", "Train a model on an agentgym env with one of the "
             "registered methods.", "", "methods:"]
    lines += [f"  {m.name:<{width}}  {m.summary}" for m in METHODS.values()]
    lines += ["", "`agentgym train METHOD --help` lists a method's flags; docs/trainers.md describes them."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(usage())
        return 0 if argv else 2
    try:
        chosen = trainer(argv[0])
    except ValueError as e:
        print(f"agentgym train: {e}", file=sys.stderr)
        return 2
    chosen.cli(argv[1:], prog=f"agentgym train {chosen.method.name}")
    return 0
