"""textworld's own ``PddlEnv``, with a game file's grammar expressions checked before it loads.

``ALFWorld-v0`` with ``cache=False`` and ``TextWorld-v0`` on a ``.tw-pddl`` file play on textworld's
``PddlEnv`` unchanged but for two things (:mod:`agentgym.envs.grammar_expressions` says why):
a game whose grammar holds an expression in a form agentgym does not evaluate is refused at
``load`` in one line naming the file, and textworld's ``eval`` of the others is replaced by
agentgym's evaluator for the whole process (:func:`~agentgym.envs.grammar_expressions.guard_textworld`).
"""

from __future__ import annotations

import json
import os
from typing import Any

from textworld.envs import PddlEnv

from agentgym.envs.alfworld.translation import game_expressions
from agentgym.envs.grammar_expressions import check_expressions, guard_textworld


def check_game_file(filename_or_data: str | os.PathLike | dict[str, Any]) -> None:
    """Refuse a ``.tw-pddl`` game (a path or its data) whose grammar holds an expression not allowed.

    Raises :class:`~agentgym.envs.grammar_expressions.GrammarExpressionError` naming the file."""
    if isinstance(filename_or_data, (str, os.PathLike)):
        source = os.fspath(filename_or_data)
        with open(source, encoding="utf-8") as f:
            data = json.load(f)
    else:
        source, data = "the game's data", filename_or_data
    if not isinstance(data, dict) or not isinstance(data.get("grammar"), str):
        raise ValueError(f"{source}: not a TextWorld PDDL game (a JSON object with a 'grammar' string)")
    check_expressions(game_expressions(data), source)


class CheckedPddlEnv(PddlEnv):
    """``PddlEnv`` that checks each game file's grammar expressions before loading it."""

    def __init__(self, *args, **kwargs):
        guard_textworld()
        super().__init__(*args, **kwargs)

    def load(self, filename_or_data) -> None:
        check_game_file(filename_or_data)
        super().load(filename_or_data)
