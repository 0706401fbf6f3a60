"""ALFWorld's searching expert: an expert that finds objects by looking, as a policy must.

ALFWorld's planner (``expert_policy="planner"``, the default) plans on the game's full state: it
walks straight to the receptacle that hides the object it needs. A policy sees only what it has
been shown, so imitating the planner teaches it to guess where things are, which it cannot learn
from the observations (a room's layout is drawn at random). ``expert_policy="search"`` plays an
expert that knows only what a policy can know: the task, the admissible actions and the commands
played so far this episode. It

1. takes an object of the task's class when one is in reach (an admissible ``take``),
2. heats, cools or cleans it at the appliance the task needs, or carries it to a receptacle of the
   goal's class (``look_at_obj_in_light``: to a lamp it can switch on),
3. and otherwise searches: opens the receptacle it stands at if it is closed and not yet opened,
   else goes to the first receptacle in the admissible list that it has not been to.

Every decision reads the latest admissible list and the episode's past commands, so with
``observation="history+admissible"`` and ``mark_played=True`` (which marks the receptacles already
gone to) a policy sees all it needs to make the same choice. Where the rules have no answer (an
unusual state after exploration moves, a lamp last seen at a receptacle already searched) the
planner's action is played, as ``expert=True`` gives without the option.

>>> goal = SearchGoal("pick_heat_then_place_in_recep", "cup", "cabinet")
>>> search_action(goal, ["go to cabinet 1", "go to microwave 1", "look"], [])
'go to cabinet 1'
>>> search_action(goal, ["go to microwave 1", "open cabinet 1", "look"], ["go to cabinet 1"])
'open cabinet 1'
>>> search_action(goal, ["go to cabinet 1", "take cup 2 from sinkbasin 1"], ["go to sinkbasin 1"])
'take cup 2 from sinkbasin 1'
>>> search_action(goal, ["go to cabinet 1", "go to microwave 1"], ["go to sinkbasin 1", "take cup 2 from sinkbasin 1"])
'go to microwave 1'
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

APPLIANCES = {"pick_heat_then_place_in_recep": ("heat", ("microwave",)),
              "pick_cool_then_place_in_recep": ("cool", ("fridge",)),
              "pick_clean_then_place_in_recep": ("clean", ("sinkbasin", "bathtubbasin"))}
"""The verb each state-changing task type needs and the receptacle classes it is done with."""


@dataclass(frozen=True)
class SearchGoal:
    """What the task asks, in the surface class names commands use (``cup``, ``cabinet``)."""

    task_type: str | None
    object_class: str | None
    receptacle_class: str | None = None
    lamp_class: str | None = None

    @classmethod
    def from_pddl_classes(cls, task_type, object_class, receptacle_class, lamp_class) -> SearchGoal:
        """From :class:`~agentgym.envs.alfworld.progress.GoalProgress`'s PDDL classes (``cuptype``)."""
        def surface(name):
            return name[:-len("type")] if name and name.endswith("type") else name
        return cls(task_type, surface(object_class), surface(receptacle_class), surface(lamp_class))


def class_of(name: str) -> str:
    """``"cup 2"`` -> ``"cup"``."""
    return name.rsplit(" ", 1)[0]


@dataclass
class _Walk:
    """What the commands played so far imply: where the agent is, what it holds, what it did."""

    at: str | None = None
    held: str | None = None
    visited: set = field(default_factory=set)
    opened: set = field(default_factory=set)
    changed: set = field(default_factory=set)
    placed: set = field(default_factory=set)

    @classmethod
    def of(cls, played: Sequence[str]) -> _Walk:
        walk = cls()
        for command in played:
            verb, _, rest = command.partition(" ")
            if command.startswith("go to "):
                walk.at = command[len("go to "):]
                walk.visited.add(walk.at)
            elif verb == "take":
                walk.held = rest.split(" from ", 1)[0]
            elif verb == "move":
                obj = rest.split(" to ", 1)[0]
                walk.placed.add(obj)
                walk.held = None if walk.held == obj else walk.held
            elif verb == "open":
                walk.opened.add(rest)
            elif verb in ("heat", "cool", "clean"):
                walk.changed.add(rest.split(" with ", 1)[0])
        return walk


def _first(admissible: Sequence[str], prefix: str, target_class: str | tuple | None = None,
           exclude=()) -> str | None:
    """The first admissible command ``prefix NAME ...`` whose NAME is of ``target_class``."""
    classes = (target_class,) if isinstance(target_class, str) or target_class is None else target_class
    for command in admissible:
        if not command.startswith(prefix):
            continue
        name = command[len(prefix):].split(" from ", 1)[0].split(" with ", 1)[0].split(" to ", 1)[0]
        if name in exclude:
            continue
        if target_class is None or class_of(name) in classes:
            return command
    return None


def _starting(admissible: Sequence[str], prefix: str) -> str | None:
    """The first admissible command that starts with ``prefix``."""
    return next((command for command in admissible if command.startswith(prefix)), None)


def search_action(goal: SearchGoal, admissible: Sequence[str], played: Sequence[str]) -> str | None:
    """The searching expert's next command, or None where its rules have no answer.

    ``played``: the commands the engine ran this episode, in order (each was admissible when played).
    """
    if goal.object_class is None:
        return None
    walk = _Walk.of(played)
    admissible = list(admissible)
    if walk.held is not None and class_of(walk.held) != goal.object_class:
        # an object the task does not need (taken while exploring): put it back where it is
        put_back = f"move {walk.held} to {walk.at}"
        return put_back if put_back in admissible else None
    if walk.held is not None:
        return _deliver(goal, walk, admissible)
    take = _first(admissible, "take ", goal.object_class, exclude=walk.placed)
    if take is not None:
        return take
    return _search(walk, admissible)


def _search(walk: _Walk, admissible: list[str]) -> str | None:
    """Open the closed receptacle the agent stands at, else go to the first one not yet visited."""
    if walk.at is not None and walk.at not in walk.opened and f"open {walk.at}" in admissible:
        return f"open {walk.at}"
    return _first(admissible, "go to ", exclude=walk.visited)


def _deliver(goal: SearchGoal, walk: _Walk, admissible: list[str]) -> str | None:
    held = walk.held
    if goal.task_type == "look_at_obj_in_light":
        use = _first(admissible, "use ", goal.lamp_class)
        return use if use is not None else _first(admissible, "go to ", exclude=walk.visited)
    if goal.task_type in APPLIANCES and held not in walk.changed:
        verb, appliances = APPLIANCES[goal.task_type]
        act = _starting(admissible, f"{verb} {held} with ")
        return act if act is not None else _first(admissible, "go to ", appliances)
    move = _starting(admissible, f"move {held} to ")
    if move is not None and class_of(move.split(" to ", 1)[1]) == goal.receptacle_class:
        return move
    if walk.at is not None and class_of(walk.at) == goal.receptacle_class and f"open {walk.at}" in admissible:
        return f"open {walk.at}"
    return _first(admissible, "go to ", goal.receptacle_class)
