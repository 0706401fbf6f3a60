"""The ``{expression}`` parts of a TextWorld PDDL game's text grammar, evaluated without ``eval``.

A ``.tw-pddl`` game file (every ALFWorld game, official or generated, and any PDDL game
``TextWorld-v0`` plays) carries its own text grammar, and the grammar writes text that depends on
the objects in play as Python expressions: ``"take {o.indefinite + ' ' + o.name}"``. textworld's
``textgen.EvalSymbol`` hands each one to Python's ``eval``, so a game file (from a task set, a
checkpoint, a download) could run any code at the first reset while the observation looked normal.
agentgym never evaluates an expression read from a file as Python: each is parsed with :mod:`ast`
and accepted only in the forms the grammar ALFWorld ships (``alfred.twl2``, which every ALFWorld
game carries with its goal sentence added) uses, then evaluated by :func:`evaluate` below:

- a variable the grammar bound (``o``, ``r``: an object's textworld ``EntityInfo``);
- one of that object's text fields (:data:`FIELDS`), e.g. ``o.name``, ``r.indefinite``;
- a string literal (``' '``);
- ``a + b`` and ``a or b`` over those.

Measured on ``alfred.twl2``: 18 distinct expressions, every one of these forms
(``tests/envs/test_grammar_expressions.py`` lists them and checks that a game plays step for step
as textworld's own evaluation played it). Any other form (a call, a subscript, a name that is not
a variable, a dunder field) is refused with a :class:`GrammarExpressionError`; the engines turn it
into one line naming the game file, before play (:func:`check_expressions`).

:func:`guard_textworld` puts the same evaluator in place of textworld's ``eval`` for games played
on textworld's own ``PddlEnv`` (``ALFWorld-v0`` with ``cache=False``, ``TextWorld-v0`` on a
``.tw-pddl`` file), so no path through the engine evaluates a file's expression as Python.

>>> class Info:
...     name, indefinite = "apple", "an"
>>> evaluate("o.indefinite + ' ' + o.name", {"o": Info()})
'an apple'
>>> evaluate("__import__('os').system('true')", {})
Traceback (most recent call last):
...
agentgym.envs.grammar_expressions.GrammarExpressionError: grammar expression "__import__('os').system('true')" is not a form agentgym evaluates (a call); allowed: variables, their fields (adj, definite, desc, id, indefinite, name, noun, room_type, synonyms, type), string literals, + and or
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable, Mapping
from functools import lru_cache
from typing import Any

from agentgym.envs.base import DataRefused

FIELDS = frozenset({"id", "type", "name", "noun", "adj", "definite", "indefinite", "synonyms", "desc",
                    "room_type"})
"""The fields of textworld's ``EntityInfo`` an expression may read (its public attributes; all data)."""

MAX_CHARS = 1000  # alfred.twl2's longest expression has 30 characters; longer text is refused unparsed
_ALLOWED = (f"variables, their fields ({', '.join(sorted(FIELDS))}), string literals, + and or")


class GrammarExpressionError(DataRefused):
    """A grammar expression in a form agentgym does not evaluate."""

    def __init__(self, expression: str, why: str, source: str | None = None):
        self.expression, self.why, self.source = expression, why, source
        shown = expression if len(expression) <= 120 else expression[:120] + "..."
        super().__init__(f"{source + ': ' if source else ''}grammar expression {shown!r} is not a form agentgym "
                         f"evaluates ({why}); allowed: {_ALLOWED}")


Compiled = Callable[[Mapping[str, Any]], Any]


@lru_cache(maxsize=4096)
def compile_expression(expression: str) -> Compiled:
    """``expression`` as a function of the variables, or a :class:`GrammarExpressionError`."""
    if not isinstance(expression, str):
        raise GrammarExpressionError(repr(expression), "not text")
    if len(expression) > MAX_CHARS:
        raise GrammarExpressionError(expression, f"over {MAX_CHARS} characters")
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as e:
        raise GrammarExpressionError(expression, f"not an expression: {type(e).__name__}") from None
    return _compile(tree.body, expression)


def _compile(node: ast.expr, expression: str) -> Compiled:
    if isinstance(node, ast.Name):
        name = node.id

        def variable(variables):
            try:
                return variables[name]
            except KeyError:
                raise NameError(f"name {name!r} is not defined") from None  # as eval says it
        return variable
    if isinstance(node, ast.Attribute):
        if not isinstance(node.value, ast.Name):
            raise GrammarExpressionError(expression, "a field of something other than a variable")
        if node.attr not in FIELDS:
            raise GrammarExpressionError(expression, f"the field {node.attr!r}")
        owner, field = _compile(node.value, expression), node.attr
        return lambda variables: getattr(owner(variables), field)
    if isinstance(node, ast.Constant):
        if not isinstance(node.value, str):
            raise GrammarExpressionError(expression, f"a {type(node.value).__name__} literal")
        value = node.value
        return lambda variables: value
    if isinstance(node, ast.BinOp):
        if not isinstance(node.op, ast.Add):
            raise GrammarExpressionError(expression, f"the operator {type(node.op).__name__}")
        left, right = _compile(node.left, expression), _compile(node.right, expression)
        return lambda variables: left(variables) + right(variables)
    if isinstance(node, ast.BoolOp):
        if not isinstance(node.op, ast.Or):
            raise GrammarExpressionError(expression, f"the operator {type(node.op).__name__}")
        parts = [_compile(v, expression) for v in node.values]

        def first_true(variables):
            value = None
            for part in parts:  # Python's `or`: the first true operand, else the last one
                value = part(variables)
                if value:
                    return value
            return value
        return first_true
    kind = {ast.Call: "a call", ast.Subscript: "a subscript", ast.Lambda: "a lambda"}.get(type(node))
    raise GrammarExpressionError(expression, kind or f"a {type(node).__name__} expression")


def evaluate(expression: str, variables: Mapping[str, Any]) -> Any:
    """What ``eval(expression)`` gives over ``variables``, for the allowed forms only."""
    return compile_expression(expression)(variables)


def check_expressions(expressions: Iterable[str], source: str) -> None:
    """Refuse, in one line naming ``source`` (a game file), the first expression not allowed."""
    for expression in sorted(set(expressions), key=str):
        try:
            compile_expression(expression)
        except GrammarExpressionError as e:
            raise GrammarExpressionError(e.expression, e.why, source) from None


def guard_textworld() -> None:
    """Make textworld's own ``textgen.EvalSymbol`` evaluate with :func:`evaluate` instead of ``eval``.

    Installed once per process when agentgym plays a PDDL game on textworld's ``PddlEnv``; every form
    ALFWorld's grammar uses gives what ``eval`` gave, and any other form raises instead of running."""
    from textworld.envs.pddl import textgen

    if getattr(textgen.EvalSymbol.derive, "agentgym_guard", False):
        return

    def derive(self, context=None):
        context = context or self.context
        return [textgen.TerminalSymbol(evaluate(self.expression, context["variables"]))]

    derive.agentgym_guard = True  # type: ignore[attr-defined]
    textgen.EvalSymbol.derive = derive
