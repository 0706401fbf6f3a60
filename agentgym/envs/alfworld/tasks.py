"""The six ALFWorld task types: which rooms and objects suit each, and their goals in PDDL and words.

Goals and goal sentences come from alfworld's own goal library (``alfworld.gen.goal_library``), so a
generated game states its goal exactly as an official game of the same task does.

Held-out combinations: a fixed, hash-chosen seventh of the (task type, object, receptacle)
combinations is kept out of ``train`` and ``valid_seen`` and used by ``valid_unseen``, which also
plays only in held-out floor plans (see :mod:`agentgym.envs.alfworld.scenes`).
"""

from __future__ import annotations

import random
import zlib
from dataclasses import dataclass

from agentgym.envs.alfworld.scenes import MOVABLE_RECEPTACLES, Room

TASK_TYPES = (
    "pick_and_place_simple",
    "look_at_obj_in_light",
    "pick_clean_then_place_in_recep",
    "pick_heat_then_place_in_recep",
    "pick_cool_then_place_in_recep",
    "pick_two_obj_and_place",
)
"""In alfworld's numbering: TASK_TYPES[i - 1] is its task type ``i``."""

# Room kinds each task is set in, as in ALFRED.
TASK_ROOMS = {
    "pick_and_place_simple": ("kitchen", "living room", "bedroom", "bathroom"),
    "look_at_obj_in_light": ("living room", "bedroom"),
    "pick_clean_then_place_in_recep": ("kitchen", "bathroom"),
    "pick_heat_then_place_in_recep": ("kitchen",),
    "pick_cool_then_place_in_recep": ("kitchen",),
    "pick_two_obj_and_place": ("kitchen", "living room", "bedroom", "bathroom"),
}
# The appliance a state-change task needs, and the action-object class the target must be in.
APPLIANCE = {"pick_clean_then_place_in_recep": ("SinkBasin", "Cleanable"),
             "pick_heat_then_place_in_recep": ("Microwave", "Heatable"),
             "pick_cool_then_place_in_recep": ("Fridge", "Coolable")}
LAMPS = ("DeskLamp", "FloorLamp")
LAMP_STANDS = ("SideTable", "Desk", "Dresser", "DiningTable", "CoffeeTable", "Shelf", "TVStand", "CounterTop")
# Receptacles too narrow to be a goal ("put a clean bread in toaster" is not an ALFRED task).
NOT_GOALS = {"Toaster"}


@dataclass(frozen=True)
class TaskSpec:
    task_type: str
    object_type: str
    receptacle_type: str = ""
    """Goal receptacle (empty for look_at_obj_in_light)."""
    toggle_type: str = ""
    """Lamp type (look_at_obj_in_light only)."""

    @property
    def combo(self) -> str:
        return f"{self.task_type}|{self.object_type}|{self.receptacle_type or self.toggle_type}"

    @property
    def dir_name(self) -> str:
        """ALFRED's task folder name, less the scene number: ``task-Object-None-Receptacle``."""
        return f"{self.task_type}-{self.object_type}-None-{self.receptacle_type or self.toggle_type}"


def is_unseen_combo(spec: TaskSpec) -> bool:
    return zlib.crc32(spec.combo.encode()) % 7 == 0


def normalize_task_types(task_types) -> tuple[str, ...]:
    """Task names, alfworld's integer ids (1-6), or None for all six."""
    if task_types is None:
        return TASK_TYPES
    if isinstance(task_types, (str, int)):
        task_types = [task_types]
    out = []
    for t in task_types:
        if isinstance(t, int) or (isinstance(t, str) and t.isdigit()):
            i = int(t)
            if not 1 <= i <= len(TASK_TYPES):
                raise ValueError(f"task type id must be 1-6, got {t}")
            t = TASK_TYPES[i - 1]
        if t not in TASK_TYPES:
            raise ValueError(f"unknown task type {t!r}; known: {list(TASK_TYPES)} (or ids 1-6)")
        if t not in out:
            out.append(t)
    if not out:
        raise ValueError("task_types is empty")
    return tuple(out)


def candidate_tasks(room: Room, task_type: str) -> list[TaskSpec]:
    """Every task of this type the room supports, in a fixed order."""
    import alfworld.gen.constants as C

    rtypes = sorted(room.receptacle_types)
    objects = [t for t in room.object_types if t not in LAMPS]
    out = []
    if task_type == "look_at_obj_in_light":
        if not any(r in LAMP_STANDS for r in rtypes):
            return []
        for lamp in LAMPS:
            if lamp in room.object_types:
                out += [TaskSpec(task_type, o, "", lamp) for o in objects]
        return out
    appliance, action_class = APPLIANCE.get(task_type, (None, None))
    if appliance is not None and appliance not in rtypes:
        return []
    for o in objects:
        if action_class is not None and o not in C.VAL_ACTION_OBJECTS[action_class]:
            continue
        holders = [r for r in rtypes if o in C.VAL_RECEPTACLE_OBJECTS[r]]
        for r in holders:
            # The object must start somewhere else, so some other receptacle type must hold it.
            if r in NOT_GOALS or r == appliance or not [h for h in holders if h not in (r, appliance)]:
                continue
            out.append(TaskSpec(task_type, o, r))
    return out


def sample_task(room: Room, task_type: str, rng: random.Random, unseen: bool) -> TaskSpec | None:
    """A task for this room: a seen combination, or for ``unseen`` preferably a held-out one."""
    tasks = candidate_tasks(room, task_type)
    seen = [t for t in tasks if not is_unseen_combo(t)]
    held_out = [t for t in tasks if is_unseen_combo(t)]
    if unseen and held_out and (not seen or rng.random() < 0.7):
        return rng.choice(held_out)
    return rng.choice(seen) if seen else None


def goal_pddl(spec: TaskSpec) -> str:
    """The ``(:goal ...)`` block (closing the problem's ``define``), from alfworld's goal library."""
    import alfworld.gen.goal_library as glib

    text = glib.gdict[spec.task_type]["pddl"].format(obj=spec.object_type, recep=spec.receptacle_type,
                                                    toggle=spec.toggle_type, mrecep="")
    return text.replace("#", "-")


def goal_sentence(spec: TaskSpec, rng: random.Random) -> str:
    """The goal in words, as alfworld templates it (lower-cased class names, no final period)."""
    import alfworld.gen.goal_library as glib

    template = rng.choice(glib.gdict[spec.task_type]["templates"])
    return template.format(obj=spec.object_type.lower(), recep=spec.receptacle_type.lower(),
                           toggle=spec.toggle_type.lower(), mrecep="")


def is_movable_receptacle(object_type: str) -> bool:
    return object_type in MOVABLE_RECEPTACLES
