"""ALFWorld's ``progress`` PRS term: the fraction of a task's goal conditions met, read from the facts.

The goal of every ALFWorld game comes from alfworld's goal library, so its target classes can be
read off the problem's ``(:goal ...)``: ``(objectType ?o AppleType)``, ``(receptacleType ?r
CounterTopType)``, and for ``look_at_obj_in_light`` the lamp's ``(objectType ?ot DeskLampType)``.
The conditions counted per task type, each for the best-placed target object:

=============================  ====================================================================
pick_and_place_simple          picked up (or already placed), placed in a goal receptacle
pick_{clean,heat,cool}_...     picked up (or changed or placed), cleaned/heated/cooled, placed
                               changed in a goal receptacle
pick_two_obj_and_place         first picked up, first placed, second picked up, second placed
look_at_obj_in_light           object held, a lamp of the goal type turned on, agent at that lamp
=============================  ====================================================================

A won game scores 1.0. A goal of another shape (a custom game) scores 1.0 when won, else 0.0.
The facts are the engine's own state (``_facts``, which ``PddlEnv`` computes every step anyway),
so measuring progress costs one pass over them and no extra engine work.
"""

from __future__ import annotations

import re

STATE_PREDICATE = {"pick_clean_then_place_in_recep": "isclean",
                   "pick_heat_then_place_in_recep": "ishot",
                   "pick_cool_then_place_in_recep": "iscool"}
_TYPED = re.compile(r"\((objectType|receptacleType)\s+\?(\w+)\s+(\w+)\)", re.IGNORECASE)
_DYNAMIC = {"holds", "inreceptacle", "isclean", "ishot", "iscool", "istoggled", "atlocation"}


class GoalProgress:
    """Measures progress for one game; build it once per game from the problem and initial facts."""

    def __init__(self, task_type: str | None, pddl_problem: str, initial_facts):
        goal = pddl_problem[pddl_problem.lower().find("(:goal"):] if "(:goal" in pddl_problem.lower() else ""
        self.task_type = task_type
        self.object_class = self.receptacle_class = self.lamp_class = None
        for kind, var, cls in _TYPED.findall(goal):
            cls, var = cls.lower(), var.lower()
            if kind.lower() == "receptacletype":
                self.receptacle_class = cls
            elif var == "ot":
                self.lamp_class = cls
            else:
                self.object_class = cls
        self.type_of: dict[str, str] = {}
        self.location_of: dict[str, str] = {}
        for fact in initial_facts:
            if fact.name in ("objecttype", "receptacletype"):
                self.type_of[fact.arguments[0].name] = fact.arguments[1].name
            elif fact.name == "receptacleatlocation":
                self.location_of[fact.arguments[0].name] = fact.arguments[1].name
        self.targets = {o for o, t in self.type_of.items() if t == self.object_class}
        self.goal_receptacles = {r for r, t in self.type_of.items() if t == self.receptacle_class}
        self.lamps = {o for o, t in self.type_of.items() if t == self.lamp_class}
        self.known = task_type is not None and self.object_class is not None and (
            self.lamp_class is not None if task_type == "look_at_obj_in_light" else self.receptacle_class is not None)

    def __call__(self, facts, won: bool) -> float:
        if won:
            return 1.0
        if not self.known:
            return 0.0
        held, where, changed, toggled, agent_at = set(), {}, set(), set(), None
        state_pred = STATE_PREDICATE.get(self.task_type)
        for fact in facts:
            name = fact.name
            if name not in _DYNAMIC:
                continue
            args = fact.arguments
            if name == "holds":
                held.add(args[1].name)
            elif name == "inreceptacle":
                where[args[0].name] = args[1].name
            elif name == "atlocation":
                agent_at = args[1].name
            elif name == "istoggled":
                toggled.add(args[0].name)
            elif name == state_pred:
                changed.add(args[0].name)
        task = self.task_type
        if task == "look_at_obj_in_light":
            lit = [lamp for lamp in self.lamps if lamp in toggled]
            at_lit = any(self.location_of.get(where.get(lamp)) == agent_at for lamp in lit)
            return (bool(held & self.targets) + bool(lit) + at_lit) / 3
        placed = {o for o in self.targets if where.get(o) in self.goal_receptacles}
        if task == "pick_two_obj_and_place":
            per_receptacle: dict[str, int] = {}
            for o in placed:
                per_receptacle[where[o]] = per_receptacle.get(where[o], 0) + 1
            n = min(max(per_receptacle.values(), default=0), 2)
            return (2 * n + (1 if n < 2 and held & self.targets else 0)) / 4
        if state_pred is None:  # pick_and_place_simple
            return 1.0 if placed else (0.5 if held & self.targets else 0.0)
        best = 0
        for o in self.targets:
            score = (o in held or o in changed or o in placed) + (o in changed) + (o in changed and o in placed)
            best = max(best, score)
        return best / 3
