"""A trainer script's command line: parsed into its config tree and checked, a bad setting one line."""

from __future__ import annotations

import sys
from contextlib import contextmanager
from typing import Any, TypeVar

import tyro

from agentgym.envs.base import DataRefused
from agentgym.locks import DirectoryInUse
from agentgym.output_paths import OutputPathError, check_output_dir, disk_full
from agentgym.settings import checks_deferred
from agentgym.train.base.errors import ConfigError
from agentgym.train.base.flags import reject_former_flags, reject_unknown_flags
from agentgym.train.config.recipes import RECIPES, apply_recipe, recipe_from_argv

C = TypeVar("C")


def _bare_resume(argv: list[str]) -> list[str]:
    """``--resume`` with no value means ``--resume auto`` (as TRL's ``resume_from_checkpoint=True``)."""
    out = []
    for k, arg in enumerate(argv):
        out.append(arg)
        if arg == "--resume" and (k + 1 == len(argv) or argv[k + 1].startswith("--")):
            out.append("auto")
    return out


@contextmanager
def exit_on_config_error():
    """In a script: a :class:`ConfigError` exits with one line naming the problem (exit status 2,
    like argparse), also one found once the run is under way (a cold start left with no sample, a
    game file refused for its grammar: :mod:`agentgym.envs.grammar_expressions`); a
    disk that fills up during the run is one line too (exit status 1)."""
    try:
        yield
    except (ConfigError, DirectoryInUse, DataRefused) as e:  # also: a game file that asks to run code
        print(f"error: {e}", file=sys.stderr)
        raise SystemExit(2) from None
    except Exception as e:  # the disk filled up mid-run: libraries wrap the OS error in their own types
        if not disk_full(e):
            raise
        print("error: the disk is full (No space left on device) where the run writes (--output-dir): free some "
              "space, then run the command again (an RL run continues from its last checkpoint with --resume)",
              file=sys.stderr)
        raise SystemExit(1) from None


def parse(config_cls: type[C], argv: list[str] | None = None, description: str | None = None,
          default: C | None = None, prog: str | None = None) -> C:
    """Parse the command line into ``config_cls`` (starting from ``default``, or from ``--recipe
    NAME`` applied over it: :mod:`agentgym.train.config.recipes`) and validate it; a bad setting
    exits with one line naming the flag (exit status 2, like argparse), as does a former flag
    spelling (``--cold-start-steps``), naming the current one. ``prog`` names the command in
    ``--help`` (the script's file name when None)."""
    argv = _bare_resume(list(sys.argv[1:] if argv is None else argv))
    with exit_on_config_error():
        reject_former_flags(config_cls, argv)
        recipe, argv = recipe_from_argv(argv)
        reject_unknown_flags(config_cls, argv)
        if recipe is not None:
            default = apply_recipe(config_cls, default if default is not None else config_cls(), recipe)
    description = (f"{description or ''}\n\n--recipe NAME: start from a named run recipe ({', '.join(RECIPES)}; "
                   "docs/trainers.md), the other flags over it").strip()
    with checks_deferred():  # checked below, as a whole, so that an error names the flag
        config = tyro.cli(config_cls, args=argv, description=description, default=default, prog=prog)
    with exit_on_config_error():
        config.validate()
        _check_output_dir(config)
    return config


def _check_output_dir(config: Any) -> None:
    """A run's --output-dir must be writable before the run loads a model or plays an episode."""
    output_dir = getattr(getattr(config, "run", None), "output_dir", None)
    if output_dir is not None:
        try:
            check_output_dir(output_dir, "--output-dir")
        except OutputPathError as e:
            raise ConfigError(str(e)) from None
