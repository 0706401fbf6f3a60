"""textworld's own ``PddlEnv``, with a game file's grammar expressions checked as it loads.

``ALFWorld-v0`` with ``cache=False`` and ``TextWorld-v0`` on a ``.tw-pddl`` file play on textworld's
``PddlEnv`` unchanged but for two things (:mod:`agentgym.envs.grammar_expressions` says why): a game
whose grammar holds an expression in a form agentgym does not evaluate is refused at ``load``, in one
line naming the file, and textworld's ``eval`` of the others is replaced by agentgym's evaluator for
the whole process (:func:`~agentgym.envs.grammar_expressions.guard_textworld`). ``PddlEnv.load``
only parses the grammar (nothing is derived or evaluated until ``reset``), so the check reads the
expressions off what it parsed, and costs no second parse.
"""

from __future__ import annotations

from functools import lru_cache

from textworld.envs import PddlEnv

from agentgym.envs.alfworld.translation import INTRO, decode_symbols, encode_symbols, parse_start, symbol_parts
from agentgym.envs.grammar_expressions import check_expressions, guard_textworld


def loaded_expressions(logic) -> set[str]:
    """Every ``{expression}`` of a loaded game (its ``GameLogic``): in the grammar's productions and
    in the strings the engine derives text from (``#intro#``, each action's template and feedback)."""
    found = set()
    for productions in logic.grammar._rules.values():
        for production in productions:
            found.update(symbol_parts(decode_symbols(encode_symbols(production.rhs)), "E"))
    for text in {INTRO} | {a.template for a in logic.actions.values()} | {a.feedback_rule for a in logic.actions.values()}:
        found.update(_start_expressions(text))
    return found


@lru_cache(maxsize=4096)
def _start_expressions(text: str) -> frozenset[str]:
    """The expressions of one derived string (templates repeat from game to game: parsed once)."""
    return frozenset(symbol_parts(decode_symbols(parse_start(text)), "E"))


class CheckedPddlEnv(PddlEnv):
    """``PddlEnv`` that checks each game's grammar expressions as it loads it."""

    def __init__(self, *args, **kwargs):
        guard_textworld()
        super().__init__(*args, **kwargs)

    def load(self, filename_or_data) -> None:
        super().load(filename_or_data)  # parses; evaluates nothing
        check_expressions(loaded_expressions(self._logic), self._game_file or "the game's data")
