"""One ALFWorld-style game: a room filled with objects, a task, and the PDDL problem that encodes it.

The problem follows the conventions of ALFWorld's own ``initial_state.pddl`` files, so alfworld's
wrappers treat a generated game exactly like an official one: ALFRED-style ids mangled the way
ALFRED mangles them (``Apple|+01.20|+00.95|-00.45`` becomes ``Apple_bar__plus_01_dot_20_...``, which
``AlfredDemangler`` turns back into "apple 1"), ``loc|x|z|rotation|horizon`` locations, typed
``objectType``/``receptacleType`` facts, ``canContain`` between classes, and the goal from
alfworld's goal library.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, replace
from functools import lru_cache

from agentgym.envs.alfworld.room_size import DEFAULT_SIZE, RoomSize
from agentgym.envs.alfworld.scenes import OPENABLE, Receptacle, Room, location_of
from agentgym.envs.alfworld.tasks import APPLIANCE, LAMP_STANDS, LAMPS, TaskSpec, goal_pddl, is_movable_receptacle


@lru_cache(maxsize=1 << 16)  # receptacles and locations recur in every game of a room
def mangle(name: str) -> str:
    """ALFRED's PDDL-safe spelling of an id (the inverse of alfworld's Demangler)."""
    for old, new in (("-", "_minus_"), ("|", "_bar_"), ("+", "_plus_"), (".", "_dot_"), (",", "_comma_")):
        name = name.replace(old, new)
    return name


@dataclass
class PlacedObject:
    id: str
    type: str
    receptacle: Receptacle


@dataclass
class Scenario:
    """A room, its objects and a task, ready to be written as a PDDL problem."""

    room: Room
    task: TaskSpec
    objects: list[PlacedObject]
    agent_location: str


def _object_id(otype: str, receptacle: Receptacle, rng: random.Random, taken: set[str]) -> str:
    parts = receptacle.id.split("|")
    x, y, z = (float(p) for p in parts[1:4])
    while True:
        oid = (f"{otype}|{x + rng.uniform(-0.4, 0.4):+06.2f}|{y + rng.uniform(0.0, 0.2):+06.2f}"
               f"|{z + rng.uniform(-0.4, 0.4):+06.2f}")
        if oid not in taken:
            taken.add(oid)
            return oid


def _holders(room: Room, otype: str, exclude=frozenset()) -> list[Receptacle]:
    import alfworld.gen.constants as C

    return [r for r in room.receptacles if otype in C.VAL_RECEPTACLE_OBJECTS[r.type] and r.type not in exclude]


def _start_types_to_avoid(task: TaskSpec) -> set[str]:
    # Target instances start away from the goal receptacle and the task's appliance, so the goal is
    # not met at the start and "cool" means cooled by the agent, not found in the fridge.
    return {task.receptacle_type} | ({APPLIANCE[task.task_type][0]} if task.task_type in APPLIANCE else set())


def shrink_room(room: Room, task: TaskSpec, rng: random.Random, max_receptacles: int) -> Room:
    """The room with at most ``max_receptacles`` receptacles, keeping one of each kind the task needs.

    Needed: a goal receptacle, the task's appliance, a lamp stand (look tasks) and a receptacle the
    target can start in; the rest are the room's own, drawn at random, in the room's order."""
    import alfworld.gen.constants as C

    if len(room.receptacles) <= max_receptacles:
        return room
    keep: list[Receptacle] = []

    def need(candidates: list[Receptacle]) -> None:
        if candidates and not any(r in keep for r in candidates):
            keep.append(rng.choice(candidates))

    need([r for r in room.receptacles if r.type == task.receptacle_type])
    if task.task_type in APPLIANCE:
        need([r for r in room.receptacles if r.type == APPLIANCE[task.task_type][0]])
    if task.toggle_type:
        need([r for r in room.receptacles if r.type in LAMP_STANDS])
    need(_holders(room, task.object_type, _start_types_to_avoid(task)))
    rest = [r for r in room.receptacles if r not in keep]
    rng.shuffle(rest)
    kept = set(keep + rest[: max(max_receptacles - len(keep), 0)])
    receptacles = tuple(r for r in room.receptacles if r in kept)
    receivable = set().union(*(C.VAL_RECEPTACLE_OBJECTS[r.type] for r in receptacles))
    object_types = tuple(t for t in room.object_types if t in receivable or t in LAMPS)
    return replace(room, receptacles=receptacles, object_types=object_types)


def build_scenario(room: Room, task: TaskSpec, rng: random.Random, size: RoomSize = DEFAULT_SIZE,
                   distractors: tuple[int, int] = (4, 8)) -> Scenario:
    """Place the task's objects and a few distractor objects in the room's receptacles.

    ``size`` bounds the receptacles kept (:func:`shrink_room`) and the objects placed, targets and
    lamp included (see :mod:`agentgym.envs.alfworld.room_size`)."""
    if size.max_receptacles is not None:
        room = shrink_room(room, task, rng, size.max_receptacles)
    budget = size.max_objects if size.max_objects is not None else 10**9
    taken: set[str] = set()
    placed: list[PlacedObject] = []
    low = 2 if task.task_type == "pick_two_obj_and_place" else 1
    high = max(low, min(3, budget - bool(task.toggle_type)))
    for _ in range(rng.randint(low, high)):
        where = rng.choice(_holders(room, task.object_type, _start_types_to_avoid(task)))
        placed.append(PlacedObject(_object_id(task.object_type, where, rng, taken), task.object_type, where))
    if task.toggle_type:
        stands = [r for r in room.receptacles if r.type in LAMP_STANDS]
        where = rng.choice(stands)
        placed.append(PlacedObject(_object_id(task.toggle_type, where, rng, taken), task.toggle_type, where))
    holders = {t: _holders(room, t) for t in room.object_types if t != task.object_type and t not in LAMPS}
    others = [t for t in room.object_types if holders.get(t)]
    rng.shuffle(others)
    for otype in others[: rng.randint(*distractors)]:
        for _ in range(rng.choice((1, 1, 1, 2, 2, 3))):
            if len(placed) >= budget:
                break
            where = rng.choice(holders[otype])
            placed.append(PlacedObject(_object_id(otype, where, rng, taken), otype, where))
    used = {r.location for r in room.receptacles}
    while True:
        x, z = rng.choice(room.floor)
        start = location_of(x, z, rng.choice((0, 90, 180, 270)), 30)
        if start not in used:
            break
    return Scenario(room, task, placed, start)


def problem_pddl(s: Scenario, name: str) -> str:
    """The PDDL problem text of a scenario."""
    import alfworld.gen.constants as C

    otypes = sorted({o.type for o in s.objects})
    rtypes = sorted({r.type for r in s.room.receptacles})
    locations = sorted({r.location for r in s.room.receptacles} | {s.agent_location})
    declare = (["agent1 - agent"]
               + [f"{mangle(o.id)} - object" for o in sorted(s.objects, key=lambda o: o.id)]
               + [f"{mangle(r.id)} - receptacle" for r in s.room.receptacles]
               + [f"{mangle(loc)} - location" for loc in locations]
               + [f"{t}Type - otype" for t in otypes]
               + [f"{t}Type - rtype" for t in rtypes])
    init = ["(= (total-cost) 0)", f"(atLocation agent1 {mangle(s.agent_location)})"]
    for r in s.room.receptacles:
        rid = mangle(r.id)
        init += [f"(receptacleType {rid} {r.type}Type)", f"(receptacleAtLocation {rid} {mangle(r.location)})"]
        if r.type in OPENABLE:
            init.append(f"(openable {rid})")
    for o in s.objects:
        oid = mangle(o.id)
        init += [f"(objectType {oid} {o.type}Type)", f"(inReceptacle {oid} {mangle(o.receptacle.id)})",
                 f"(objectAtLocation {oid} {mangle(o.receptacle.location)})"]
        if o.type in LAMPS:
            init.append(f"(toggleable {oid})")
            continue
        init.append(f"(pickupable {oid})")
        for fact, cls in (("cleanable", "Cleanable"), ("heatable", "Heatable"), ("coolable", "Coolable")):
            if o.type in C.VAL_ACTION_OBJECTS[cls]:
                init.append(f"({fact} {oid})")
        if is_movable_receptacle(o.type):
            init.append(f"(isReceptacleObject {oid})")
    init += [f"(canContain {r}Type {o}Type)" for r in rtypes for o in otypes
             if o in C.VAL_RECEPTACLE_OBJECTS.get(r, ())]
    sep = "\n        "
    return (f"(define (problem {name})\n    (:domain alfred)\n"
            f"    (:objects{sep}{sep.join(declare)}\n    )\n"
            f"    (:init{sep}{sep.join(init)}\n    )\n"
            f"{goal_pddl(s.task)}\n")
