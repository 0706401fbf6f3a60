"""Room size, a curriculum knob: how many receptacles and objects a generated game's room keeps.

A full ALFRED room here has up to 12 receptacles and 6-25 objects. Every receptacle is a
``go to`` command and every object at hand a ``take`` command, so a small room gives a policy
fewer admissible actions to choose from and fewer places to search, and gives the engine and the
planner expert a smaller problem. It is the same task in the same floor plan with less furniture:
a small room keeps what the task needs (a goal receptacle, the appliance of a clean/heat/cool
task, a lamp stand for a look task, and a receptacle the target starts in) and fills the rest of
its receptacles with the room's own, drawn at random.

Presets (``--room-size``; ``--max-receptacles``/``--max-objects`` override either number):

========  ===============  ============
preset    receptacles      objects
========  ===============  ============
full      the room's (≤12)  6-25
small     6                 8
tiny      4                 4
========  ===============  ============
"""

from __future__ import annotations

from dataclasses import dataclass

MIN_RECEPTACLES = 3
"""Goal receptacle, appliance and the receptacle the target starts in."""
MIN_OBJECTS = 2
"""Two targets (pick_two_obj_and_place), or a target and a lamp (look_at_obj_in_light)."""


@dataclass(frozen=True)
class RoomSize:
    max_receptacles: int | None = None
    """Receptacles kept per room (None: the room's own, at most 12)."""
    max_objects: int | None = None
    """Objects placed per game, targets and lamp included (None: targets plus 4-8 distractor types)."""

    def as_dict(self) -> dict:
        return {"max_receptacles": self.max_receptacles, "max_objects": self.max_objects}


DEFAULT_SIZE = RoomSize()
"""The rooms as generated: every receptacle and object type the room has."""

ROOM_SIZES = {"full": DEFAULT_SIZE, "small": RoomSize(6, 8), "tiny": RoomSize(4, 4)}


def room_size(name: str | None = None, max_receptacles: int | None = None, max_objects: int | None = None) -> RoomSize:
    """A preset (``full``/``small``/``tiny``; None is ``full``), with either bound overridden."""
    if isinstance(name, RoomSize):
        base = name
    elif name is None or name in ROOM_SIZES:
        base = ROOM_SIZES[name or "full"]
    else:
        raise ValueError(f"unknown room size {name!r}; use one of {list(ROOM_SIZES)}")
    size = RoomSize(base.max_receptacles if max_receptacles is None else max_receptacles,
                    base.max_objects if max_objects is None else max_objects)
    for field, low in (("max_receptacles", MIN_RECEPTACLES), ("max_objects", MIN_OBJECTS)):
        value = getattr(size, field)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < low):
            raise ValueError(f"{field} must be an integer >= {low} (what every task type needs), got {value!r}")
    return size


def room_size_name(size: RoomSize) -> str:
    """The preset's name, or ``r<receptacles>o<objects>`` for other bounds (``-`` for no bound)."""
    for name, preset in ROOM_SIZES.items():
        if preset == size:
            return name
    return f"r{size.max_receptacles or '-'}o{size.max_objects or '-'}"
