"""Rooms for the ALFWorld-style game generator, built from the ALFRED scene layouts alfworld ships.

alfworld's wheel carries, for each of the 120 AI2-THOR floor plans (kitchens 1-30, living rooms
201-230, bedrooms 301-330, bathrooms 401-430), the object types present in the scene and the
receptacles with the pose an agent stands at to reach them. A :class:`Room` is that scene reduced
to what a text game needs: receptacles (id, type, the location an agent reaches them from) and
the object types that can appear. Receptacle types the scene lists but the layout gives no pose
for (stove burners, toasters, towel holders...) get a pose drawn from the scene's reachable floor.

Scene split: following ALFRED, floor plans 1-6 of each room kind (and so 201-206, 301-306,
401-406) are held out for the ``valid_unseen`` split; the rest serve ``train`` and ``valid_seen``.
"""

from __future__ import annotations

import json
import os
import random
from dataclasses import dataclass
from functools import cache

ROOM_KINDS = {"kitchen": range(1, 31), "living room": range(201, 231),
              "bedroom": range(301, 331), "bathroom": range(401, 431)}
UNSEEN_PER_KIND = 6
# Rooms keep at most this many receptacles (dropping spare cabinets, drawers, shelves first): the
# planner expert's optimal search grows steeply with the number of places to go.
MAX_RECEPTACLES = 12

# Receptacles that objects cannot be carried about in (movable ones like bowls are objects here).
MOVABLE_RECEPTACLES = {"Bowl", "Box", "Cup", "Mug", "Plate", "Pan", "Pot"}
OPENABLE = {"Fridge", "Cabinet", "Microwave", "Drawer", "Safe", "Box"}
# How many instances of a receptacle type to add when the layout has no pose for it.
EXTRA_INSTANCES = {"StoveBurner": (2, 4), "Drawer": (1, 3), "Shelf": (1, 3)}


@dataclass(frozen=True)
class Receptacle:
    id: str
    """ALFRED-style id, e.g. ``Cabinet|+00.68|+00.50|-02.20`` or ``Sink|-01.90|+00.97|-01.50|SinkBasin``."""
    type: str
    """Receptacle class, e.g. ``Cabinet``, ``SinkBasin``."""
    location: str
    """``loc|x|z|rotation|horizon`` in ALFRED's grid units: where the agent stands to reach it."""


@dataclass(frozen=True)
class Room:
    scene: int
    kind: str
    receptacles: tuple[Receptacle, ...]
    object_types: tuple[str, ...]
    """Pickupable object types the scene holds (receptacles and fixtures excluded)."""
    floor: tuple[tuple[float, float], ...]
    """Reachable floor points (metres), for placing the agent."""

    @property
    def receptacle_types(self) -> set[str]:
        return {r.type for r in self.receptacles}


def room_kind(scene: int) -> str:
    for kind, numbers in ROOM_KINDS.items():
        if scene in numbers:
            return kind
    raise ValueError(f"floor plan {scene} is not an ALFRED scene")


def scene_split(scene: int) -> str:
    """``unseen`` for the held-out floor plans, else ``seen``."""
    return "unseen" if scene % 100 <= UNSEEN_PER_KIND else "seen"


def scenes(kind: str | None = None, split: str | None = None) -> list[int]:
    """Floor plans with a layout in the installed alfworld, filtered by room kind and scene split."""
    out = []
    for k, numbers in ROOM_KINDS.items():
        if kind is not None and k != kind:
            continue
        out += [n for n in numbers if (split is None or scene_split(n) == split) and _layout_exists(n)]
    return out


def _layout_dir() -> str:
    import alfworld.gen

    return os.path.join(os.path.dirname(alfworld.gen.__file__), "layouts")


def _layout_exists(scene: int) -> bool:
    return os.path.exists(os.path.join(_layout_dir(), f"FloorPlan{scene}-openable.json"))


def location_of(x: float, z: float, rotation: float, horizon: float) -> str:
    # ALFRED's navigation grid: 0.25 m steps, rotation in quarter turns.
    return f"loc|{int(round(x / 0.25))}|{int(round(z / 0.25))}|{int(rotation) // 90 % 4}|{int(horizon)}"


def _receptacle_type(rid: str) -> str:
    parts = rid.split("|")
    return parts[4] if len(parts) > 4 else parts[0]


@cache
def load_room(scene: int) -> Room:
    """The room of one ALFRED floor plan. Deterministic: synthetic poses come from the scene number."""
    import alfworld.gen.constants as C
    import numpy as np

    base = os.path.join(_layout_dir(), f"FloorPlan{scene}")
    with open(base + "-objects.json") as f:
        types = json.load(f)
    with open(base + "-openable.json") as f:
        poses = json.load(f)
    floor = tuple(map(tuple, np.load(base + "-layout.npy").tolist()))
    rng = random.Random(scene)
    receptacles = []
    used_locations: set[str] = set()

    def add(rid: str, rtype: str, x: float, z: float, rot: float, hor: float) -> None:
        loc = location_of(x, z, rot, hor)
        # One receptacle per location keeps "go to X" unambiguous (ALFRED shares some, e.g. drawers).
        while loc in used_locations:
            rot = (rot + 90) % 360
            hor = rng.choice([0, 30, 45, 60, -30])
            loc = location_of(x, z, rot, hor)
            x += 0.25 * (rng.random() < 0.3)
        used_locations.add(loc)
        receptacles.append(Receptacle(rid, rtype, loc))

    for rid in sorted(poses):
        rtype = _receptacle_type(rid)
        if rtype not in C.VAL_RECEPTACLE_OBJECTS or rtype in MOVABLE_RECEPTACLES:
            continue
        add(rid, rtype, *poses[rid])
    present = {r.type for r in receptacles}
    for rtype in sorted(set(types)):
        if rtype in present or rtype not in C.VAL_RECEPTACLE_OBJECTS or rtype in MOVABLE_RECEPTACLES:
            continue
        lo, hi = EXTRA_INSTANCES.get(rtype, (1, 1))
        for _ in range(rng.randint(lo, hi)):
            x, z = rng.choice(floor)
            dx, y, dz = rng.uniform(-0.6, 0.6), rng.uniform(0.0, 1.6), rng.uniform(-0.6, 0.6)
            rid = f"{rtype}|{x + dx:+06.2f}|{y:+06.2f}|{z + dz:+06.2f}"
            add(rid, rtype, x, z, rng.choice([0, 90, 180, 270]), rng.choice([0, 30, 45, 60]))
    while len(receptacles) > MAX_RECEPTACLES:
        counts: dict[str, int] = {}
        for r in receptacles:
            counts[r.type] = counts.get(r.type, 0) + 1
        most = max(counts.values())
        if most == 1:
            break
        spare = [r for r in receptacles if counts[r.type] == most]
        receptacles.remove(rng.choice(spare))
    receivable = set().union(*(C.VAL_RECEPTACLE_OBJECTS[r.type] for r in receptacles))
    object_types = tuple(sorted(t for t in set(types)
                                if t in C.OBJECTS and t not in C.VAL_RECEPTACLE_OBJECTS.keys() - MOVABLE_RECEPTACLES
                                and (t in receivable or t in {"DeskLamp", "FloorLamp"})))
    return Room(scene, room_kind(scene), tuple(receptacles), object_types, floor)
