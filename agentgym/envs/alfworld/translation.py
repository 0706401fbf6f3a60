"""A game's translation: what textworld's ``PddlEnv`` derives from a game file before play, as data.

Loading a game, ``PddlEnv`` parses its text grammar with TatSu (the grammar holds the task sentence,
so it is per game) and translates the PDDL domain and problem into fast-downward's SAS format twice
(a plain task to play, an optimized one to replan on); every ``reset`` translates both again.
Playing, it parses each text template and each grammar query with TatSu on every use. All of it
depends on the game file alone, so :func:`translate` does it once and returns plain JSON-able data:

- ``task``: both SAS texts and the pieces of fast-downward's parsed task that ``PddlState`` reads
  (the action schemas' parameters, the types, the objects, the initial facts); the engine adds
  ``start_facts``, the facts of fast-downward's initial state, once it has loaded the SAS text;
- ``logic``: the grammar's actions and production rules, each right-hand side already parsed into
  symbols;
- ``starts``: the parsed form of every string the engine derives text from (``#intro#``, each
  action's command template and feedback rule);
- ``queries``: every grammar condition and ``{... | query}`` parsed into a textworld ``Rule``.

:mod:`agentgym.envs.alfworld.cached_pddl` plays from it; :mod:`agentgym.envs.alfworld.translation_cache`
keeps it on disk. Symbols are tuples: ``("T", text)``, ``("N", name)`` (a ``#name#`` to expand),
``("E", expression)`` (a ``{expression}`` evaluated over the context's variables),
``("C", symbol, query or None)`` (the symbol once per match of the query) and ``("L", symbol)``
(the matches as an English list).
"""

from __future__ import annotations

import sys
from typing import Any

INTRO = "#intro#"


def encode_symbols(symbols) -> list:
    """textworld's parsed grammar symbols as JSON-able lists (see the module docstring)."""
    from textworld.envs.pddl.textgen import ConditionalSymbol, EvalSymbol, ListSymbol, NonterminalSymbol, TerminalSymbol

    def encode(symbol):
        if isinstance(symbol, TerminalSymbol):
            return ["T", symbol.symbol]
        if isinstance(symbol, NonterminalSymbol):
            return ["N", symbol.symbol]
        if isinstance(symbol, EvalSymbol):
            return ["E", symbol.expression]
        if isinstance(symbol, ConditionalSymbol):
            return ["C", encode(symbol.expression), symbol.given or None]
        if isinstance(symbol, ListSymbol):
            return ["L", encode(symbol.symbol)]
        raise TypeError(f"unexpected grammar symbol {symbol!r}")

    return [encode(s) for s in symbols]


def decode_symbols(data, grammar: str | None = None) -> tuple:
    """The tuples the derivation plays from (lists from JSON become tuples). With ``grammar`` (the
    game file's grammar text), raise ``ValueError`` for an ``E`` expression that text does not hold:
    expressions are evaluated in play, and data read back from disk must add no code to the game's."""

    def decode(item):
        kind = item[0]
        if kind in ("T", "N", "E"):
            if not isinstance(item[1], str):
                raise ValueError(f"bad grammar symbol {item!r}")
            if kind == "E" and grammar is not None and item[1] not in grammar:
                raise ValueError(f"expression {item[1]!r} is not in the game's grammar")
            return (kind, item[1])
        if kind == "C":
            if item[2] is not None and not isinstance(item[2], str):
                raise ValueError(f"bad grammar symbol {item!r}")
            return ("C", decode(item[1]), item[2])
        if kind == "L":
            return ("L", decode(item[1]))
        raise ValueError(f"bad grammar symbol {item!r}")

    return tuple(decode(item) for item in data)


def symbol_parts(symbols, kind: str):
    """Every field of one kind inside symbols (tuples): the ``E`` expressions or the ``C`` queries."""
    for symbol in symbols:
        if symbol[0] == kind and kind == "E":
            yield symbol[1]
        if symbol[0] == "C":
            if kind == "C" and symbol[2]:
                yield symbol[2]
            yield from symbol_parts((symbol[1],), kind)
        elif symbol[0] == "L":
            yield from symbol_parts((symbol[1],), kind)


def translation_expressions(translation: dict) -> set[str]:
    """Every ``{expression}`` of a translation: in the grammar's productions and the strings derived."""
    symbols = [decode_symbols(rhs) for _, productions in translation["logic"]["rules"] for rhs, _, _ in productions]
    symbols += [decode_symbols(parsed) for parsed in translation["starts"].values()]
    return {e for s in symbols for e in symbol_parts(s, "E")}


def game_expressions(game_data: dict) -> set[str]:
    """Every ``{expression}`` a game file's grammar holds, read by parsing alone (nothing is evaluated)."""
    logic = translate_logic(game_data["grammar"])
    return translation_expressions({"logic": logic, "starts": {s: parse_start(s) for s in derived_strings(logic)}})


def derived_strings(logic: dict) -> list[str]:
    """The strings the engine derives text from: ``#intro#``, each action's template and feedback rule."""
    starts = {INTRO}
    for _, action in logic["actions"]:
        starts.update((action["template"], action["feedback_rule"]))
    return sorted(starts)


def parse_start(text: str) -> list:
    """Parse a string to derive from (TatSu, slow), encoded."""
    from textworld.envs.pddl.textgen import _parse_and_convert

    return encode_symbols(_parse_and_convert(text, rule_name="symbols"))


def parse_query(text: str) -> dict:
    """Parse a conjunctive query (TatSu, slow), as ``Rule.serialize()`` data."""
    from textworld.logic import Rule

    return Rule.parse_conjunctive_query(text).serialize()


def _fact(name: str, args, name2type: dict) -> list:
    return [name, [[arg, name2type[arg]] for arg in args]]


def translate_task(domain: str, problem: str) -> dict[str, Any]:
    """Both SAS translations and what ``PddlState`` reads off fast-downward's parsed task."""
    import fast_downward
    from fast_downward.translate.pddl.conditions import Atom
    from fast_downward.translate.pddl.f_expression import Assign
    from textworld.utils import check_flag

    verbose = check_flag("TW_PDDL_DEBUG")
    argv = sys.argv  # pddl2sas overwrites the process's sys.argv for fast-downward's option parser
    try:
        task, sas = fast_downward.pddl2sas(domain, problem, verbose=verbose)
        _, sas_replan = fast_downward.pddl2sas(domain, problem, verbose=verbose, optimize=True)
    finally:
        sys.argv = argv
    name2type = {o.name: o.type_name for o in task.objects}
    init = []
    for atom in task.init:  # the initial facts, kept and named as PddlState keeps them
        if isinstance(atom, Atom):
            if atom.predicate != "=":
                init.append(_fact(atom.predicate, atom.args, name2type))
        elif isinstance(atom, Assign) and atom.fluent.symbol != "total-cost":
            name = f"{atom.expression.value}"
            if not str.isdigit(name):  # distances are not facts
                init.append(_fact(name, atom.fluent.args, name2type))
    return {
        "sas": sas,
        "sas_replan": sas_replan,
        "actions": [[a.name, [[p.name, p.type_name] for p in a.parameters]] for a in task.actions],
        "types": [[t.name, list(t.supertype_names)] for t in task.types],
        "objects": [[o.name, o.type_name] for o in task.objects],
        "init": init,
    }


def translate_logic(grammar: str) -> dict[str, Any]:
    """The grammar's actions and production rules, parsed as ``GameLogic`` parses them."""
    from textworld.envs.pddl.logic import _parse_and_convert

    actions, rules = _parse_and_convert(grammar, rule_name="pddlStart")
    return {
        "actions": [[key, {"name": a.name, "template": a.template, "feedback_rule": a.feedback_rule,
                           "pddl": a.pddl, "grammar": a.grammar}] for key, a in actions.items()],
        "rules": [[lhs, [[encode_symbols(r.rhs), r.weight, r.condition or None] for r in productions]]
                  for lhs, productions in rules._rules.items()],
    }


def translate(game_data: dict) -> dict[str, Any]:
    """Everything a game needs before play (see the module docstring). Takes about a second."""
    logic = translate_logic(game_data["grammar"])
    parsed_starts = {s: parse_start(s) for s in derived_strings(logic)}
    symbols = [decode_symbols(rhs) for _, productions in logic["rules"] for rhs, _, _ in productions]
    symbols += [decode_symbols(parsed) for parsed in parsed_starts.values()]
    queries = {c for _, productions in logic["rules"] for _, _, c in productions if c}
    queries.update(q for s in symbols for q in symbol_parts(s, "C"))
    return {
        "task": translate_task(game_data["pddl_domain"], game_data["pddl_problem"]),
        "logic": logic,
        "starts": parsed_starts,
        "queries": {q: parse_query(q) for q in sorted(queries)},
    }
