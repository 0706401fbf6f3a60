"""textworld's ``PddlEnv``, playing from a game's translation instead of redoing it.

:class:`CachedPddlEnv` is ``textworld.envs.PddlEnv`` (same fast-downward library, same facts, same
grammar, same infos) with the work that does not change during play done once per game file and
kept (:mod:`agentgym.envs.alfworld.translation`, on disk by
:mod:`agentgym.envs.alfworld.translation_cache`):

- ``load`` reads the game's translation instead of parsing its grammar and translating its PDDL
  twice; ``reset`` reloads the kept SAS texts into fast-downward instead of translating again.
- Text is derived by :class:`FastGrammar`: the same derivation as textworld's
  ``ContextSensitiveGrammar`` over pre-parsed symbols and queries, with contexts shared rather than
  deep-copied (no step of a derivation changes a context; new matches make new ones).

Everything else is textworld's own code. A test plays hundreds of games through this engine and
through ``PddlEnv`` and checks that they agree on every observation, admissible list, plan and win.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from textworld.core import GameState
from textworld.envs import PddlEnv
from textworld.envs.pddl import logic as pddl_logic
from textworld.envs.pddl import textgen
from textworld.logic import Proposition, Rule, Type, TypeHierarchy, Variable

from agentgym.envs.alfworld.translation import (
    INTRO,
    decode_symbols,
    parse_query,
    parse_start,
    translate,
    translation_expressions,
)
from agentgym.envs.alfworld.translation_cache import TranslationCache
from agentgym.envs.grammar_expressions import check_expressions, evaluate, guard_textworld

# Strings parsed in this process that no translation held (TatSu is slow; the results never change).
_EXTRA_STARTS: dict[str, tuple] = {}
_EXTRA_QUERIES: dict[str, Rule] = {}


class FastGrammar:
    """A game's text grammar: derives a string the way textworld's ``ContextSensitiveGrammar`` does."""

    def __init__(self, rules: Mapping[str, list], starts: Mapping[str, tuple], queries: Mapping[str, Rule]):
        self._rules = rules  # name -> [(rhs symbols, condition Rule or None)], in the grammar's order
        self._starts = starts
        self._queries = queries

    def _parsed(self, start: str) -> tuple:
        symbols = self._starts.get(start)
        if symbols is None:
            symbols = _EXTRA_STARTS.get(start)
            if symbols is None:
                symbols = _EXTRA_STARTS[start] = decode_symbols(parse_start(start))
        return symbols

    def _query(self, text: str) -> Rule:
        rule = self._queries.get(text)
        if rule is None:
            rule = _EXTRA_QUERIES.get(text)
            if rule is None:
                rule = _EXTRA_QUERIES[text] = Rule.deserialize(parse_query(text))
        return rule

    def derive(self, start: str, context: dict) -> str:
        stack = [(symbol, context) for symbol in reversed(self._parsed(start))]
        out = []
        while stack:
            symbol, ctx = stack.pop()
            kind = symbol[0]
            if kind == "T":
                out.append(str(symbol[1]))
            elif kind == "N":
                stack.extend((s, ctx) for s in reversed(self._replace(symbol[1], ctx)))
            else:
                stack.extend(reversed(self._expand(symbol, ctx)))
        return "".join(out)

    def _replace(self, name: str, ctx: dict) -> tuple:
        """The right-hand side of the first production of ``name`` whose condition holds."""
        productions = self._rules.get(name)
        if not productions:
            raise textgen.CSGUnknownSymbolError(name)
        for rhs, condition in productions:
            if condition is None or _any(ctx["state"].all_assignments(condition, ctx["mapping"])):
                return rhs
        raise IndexError(f"no production of #{name}# applies")  # textworld fails here too (rules[0])

    def _expand(self, symbol: tuple, ctx: dict) -> list:
        """What an ``E``, ``C`` or ``L`` symbol stands for: (symbol, context) pairs."""
        kind = symbol[0]
        if kind == "E":
            # What textgen's EvalSymbol gives, for the forms a grammar may use (never Python's eval).
            return [(("T", evaluate(symbol[1], ctx["variables"])), ctx)]
        if kind == "C":
            if not ctx:
                raise ValueError("Empty context")
            if not symbol[2]:
                return [(symbol[1], ctx)]
            return [(symbol[1], c) for c in self._matches(symbol[2], ctx)]
        if kind == "L":
            items = self._expand(symbol[1], ctx)
            if not items:
                return [(("N", "list_empty"), ctx)]
            separated = []
            for i, item in enumerate(items):
                if i:
                    separated.append((("N", "list_last_separator" if i == len(items) - 1 else "list_separator"), ctx))
                separated.append(item)
            return separated
        raise TypeError(f"cannot derive grammar symbol {symbol!r}")

    def _matches(self, query: str, ctx: dict) -> list[dict]:
        """One new context per match of the query, its variables bound (textgen's ``query``)."""
        infos = ctx["entity_infos"]
        contexts = []
        for mapping in ctx["state"].all_assignments(self._query(query), ctx["mapping"]):
            bound = {ph.name: infos[v.name] for ph, v in mapping.items()}
            contexts.append({**ctx, "variables": {**ctx["variables"], **bound}, "mapping": {**ctx["mapping"], **mapping}})
        return contexts


def _any(matches) -> bool:
    return next(iter(matches), None) is not None


@dataclass(frozen=True)
class _Parameter:
    name: str
    type_name: str


@dataclass(frozen=True)
class _Schema:
    name: str
    parameters: tuple


class TranslatedGame:
    """A translation turned into the objects play needs; built once per ``load``."""

    def __init__(self, translation: dict, grammar: str | None = None):
        """``grammar``: the game file's grammar text, to check the translation's expressions against
        (see :func:`~agentgym.envs.alfworld.translation.decode_symbols`); any malformed part raises."""
        task, logic = translation["task"], translation["logic"]
        self.sas = task["sas"].encode("utf-8")
        self.sas_replan = task["sas_replan"].encode("utf-8")
        self.sas_text, self.sas_replan_text = task["sas"], task["sas_replan"]
        self.schemas = {name: _Schema(name, tuple(_Parameter(p, t) for p, t in params))
                        for name, params in task["actions"]}
        self.types = [(name, tuple(parents)) for name, parents in task["types"]]
        self.name2type = {name: type_name for name, type_name in task["objects"]}
        self.init = [(name, tuple((arg, t) for arg, t in args)) for name, args in task["init"]]
        # fast-downward's initial state as facts, once read off the library (a function of the SAS)
        self.start_facts = task.get("start_facts")
        self.actions = {key: pddl_logic.Action(**fields) for key, fields in logic["actions"]}
        queries = {text: Rule.deserialize(data) for text, data in translation["queries"].items()}
        rules = {}
        for lhs, productions in logic["rules"]:
            rules[lhs] = [(decode_symbols(rhs, grammar), queries[c] if c else None) for rhs, _, c in productions]
        starts = {text: decode_symbols(parsed, grammar) for text, parsed in translation["starts"].items()}
        self.grammar = FastGrammar(rules, starts, queries)
        self.command_templates = sorted(set(action.template for action in self.actions.values()))
        self.initial = None  # the initial state's facts, once a state has been made

    def logic(self, domain: str) -> pddl_logic.GameLogic:
        """A fresh ``GameLogic`` (its type hierarchy fills up as states are made, as textworld's does)."""
        logic = pddl_logic.GameLogic.__new__(pddl_logic.GameLogic)
        logic.domain = domain
        logic.grammar = self.grammar
        logic.actions = dict(self.actions)
        logic.types = TypeHierarchy()
        return logic


class CachedPddlState(pddl_logic.PddlState):
    """``PddlState`` made from a translation: what its constructor does, less the two translations.

    The facts of the initial state are worked out for the first state of a game and copied for the
    next ones (fast-downward's initial state is a function of the SAS text)."""

    def __init__(self, downward_lib, pddl_problem: str, logic, game: TranslatedGame):
        self._logic = logic
        self.downward_lib = downward_lib
        self.pddl_problem = pddl_problem
        self.task = None  # fast-downward's parsed task is not kept; _actions holds what play reads of it
        self.sas, self.sas_replan = game.sas_text, game.sas_replan_text
        self._actions = game.schemas
        for name, parents in game.types:
            try:
                self._logic.types.add(Type(name, parents))
            except ValueError:
                pass
        self.downward_lib.load_sas(game.sas)
        self.downward_lib.load_sas_replan(game.sas_replan)
        self.name2type = game.name2type
        if game.initial is None:
            self._facts = defaultdict(set)
            self._vars_by_name = {}
            self._vars_by_type = defaultdict(set)
            self._var_counts = Counter()
            self.add_facts(_propositions(game.init))
            if game.start_facts is None:
                atoms = (pddl_logic.Atom * self.downward_lib.get_state_size())()
                self.downward_lib.get_state(atoms)
                facts = [atom.get_fact(self.name2type) for atom in atoms]
                game.start_facts = [[f.name, [[v.name, v.type] for v in f.arguments]]
                                    for f in facts if not f.is_negation]
            self.add_facts(_propositions(game.start_facts))
            game.initial = _containers(self)
        else:
            self._facts, self._vars_by_name, self._vars_by_type, self._var_counts = _containers(game.initial)


def _propositions(facts) -> list[Proposition]:
    return [Proposition(name, [Variable(arg, t) for arg, t in args]) for name, args in facts]


def _containers(state) -> tuple:
    """Copies of a state's fact and variable containers (what ``State.copy`` copies)."""
    if isinstance(state, tuple):
        facts, by_name, by_type, counts = state
    else:
        facts, by_name, by_type, counts = state._facts, state._vars_by_name, state._vars_by_type, state._var_counts
    return (defaultdict(set, {k: v.copy() for k, v in facts.items()}), by_name.copy(),
            defaultdict(set, {k: v.copy() for k, v in by_type.items()}), counts.copy())


class CachedPddlEnv(PddlEnv):
    """``textworld.envs.PddlEnv`` that translates each game file once (see the module docstring).

    ``cache``: where translations are kept (a :class:`TranslationCache`); None translates at every
    ``load`` (a reset of the loaded game still reuses its translation)."""

    def __init__(self, infos=None, cache: TranslationCache | None = None):
        guard_textworld()  # nothing here reaches textgen's eval; anything of textworld's that might, cannot
        super().__init__(infos)
        self.cache = cache
        self._game: TranslatedGame | None = None
        self._unplayed = False

    def load(self, filename_or_data) -> None:
        try:  # as PddlEnv.load: a file name, or the game's data itself
            with open(filename_or_data) as f:
                data = json.load(f)
            self._game_file = filename_or_data
        except TypeError:
            data = filename_or_data
            self._game_file = None
        self._game_data = data
        self.walkthrough = data.get("walkthrough", None)
        source = self._game_file or "the game's data"
        kept = self.cache.get(data) if self.cache is not None else None
        if kept is not None:
            try:
                check_expressions(translation_expressions(kept), source)
                self._start_game(TranslatedGame(kept, data["grammar"]))
            except Exception:  # an entry that does not fit this game: translate it again
                self.cache.reject()
                kept = None
        if kept is None:
            translation = translate(data)
            check_expressions(translation_expressions(translation), source)  # before any text is derived
            self._start_game(TranslatedGame(translation))
            if self.cache is not None:
                translation["task"]["start_facts"] = self._game.start_facts
                self.cache.put(data, translation)

    def _start_game(self, game: TranslatedGame) -> None:
        self._game = game
        self._logic = game.logic(self._game_data["pddl_domain"])
        self._pddl_state = self._new_state()
        self._unplayed = True  # the first reset may keep this state: nothing has changed it
        self._entity_infos = self._get_entity_infos()

    def _new_state(self) -> CachedPddlState:
        return CachedPddlState(self.downward_lib, self._game_data["pddl_problem"], self._logic, self._game)

    def reset(self) -> GameState:
        # PddlEnv.reset, with the kept translation in place of a new one.
        if not self._unplayed:
            self._pddl_state = self._new_state()
        self._unplayed = False
        self.prev_state = None
        self.state = GameState()
        self._last_action = None
        self._moves = 0
        context = {"state": self._pddl_state, "facts": list(self._pddl_state.facts), "variables": {},
                   "mapping": {}, "entity_infos": self._entity_infos}
        self.state.feedback = self._logic.grammar.derive(INTRO, context)
        self.state.raw = self.state.feedback
        self._gather_infos()
        if "walkthrough" in self.request_infos.extras:
            self.state["extra.walkthrough"] = self.walkthrough or self._pddl_state.replan(self._entity_infos)
        return self.state

    def _gather_infos(self) -> None:
        # PddlEnv._gather_infos, listing the facts once per call rather than once per action.
        state, pddl_state = self.state, self._pddl_state
        state["command_templates"] = list(self._game.command_templates)
        state["won"] = pddl_state.check_goal()
        state["lost"] = False
        state["_entity_infos"] = dict(self._entity_infos)
        facts = list(pddl_state.facts)
        state["_facts"] = facts
        if self.request_infos.facts:
            state["facts"] = list(map(self._get_human_readable_fact, facts))
        state["last_action"] = None
        state["_last_action"] = self._last_action
        state["_valid_actions"] = list(pddl_state.all_applicable_actions())
        names = {k: info.name for k, info in self._entity_infos.items()}
        grammar, infos = self._logic.grammar, self._entity_infos
        commands = []
        for action in state["_valid_actions"]:
            context: dict[str, Any] = {
                "state": pddl_state, "facts": facts,
                "variables": {ph.name: infos[var.name] for ph, var in action.mapping.items()},
                "mapping": action.mapping, "entity_infos": infos}
            action.command_template = grammar.derive(action.command_template, context)
            commands.append(action.format_command(names))
        state["_valid_commands"] = commands
        state["admissible_commands"] = sorted(set(commands))
        if self.request_infos.moves:
            state["moves"] = self._moves
        if self.request_infos.policy_commands:
            state["policy_commands"] = pddl_state.replan(self._entity_infos)
