"""ScienceWorld-v0: the 30 ScienceWorld science tasks on the real engine, one JVM per env."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from agentgym.envs.base import AgentEnv, EngineError, Transition
from agentgym.envs.parsing import ParsedAction, parse_embodied_action
from agentgym.envs.scienceworld.engine import EngineFailure, ScienceWorldEngine, _import_scienceworld, find_java
from agentgym.envs.scienceworld.levels import drawable_tasks
from agentgym.envs.scienceworld.tasks import (
    TASK_NAMES,
    canonical_split,
    canonical_task,
    num_variations,
    split_variations,
)
from agentgym.envs.task_refs import TaskRef
from agentgym.rewards.prs import EMBODIED_PRS

# The engine's answers to input it could not turn into an action. Everything else, including an
# action that failed in the world ("The door is not open.") or an ambiguity prompt, was understood.
INVALID_RESPONSES = ("No known action matches that input.", "Unknown action.")
AMBIGUOUS_PREFIX = "Ambiguous request"
_CHOICE = re.compile(r"^(\d+):", re.MULTILINE)
SIMPLIFICATIONS = ("easy", "teleportAction", "selfWateringFlowerPots", "openContainers", "openDoors",
                   "noElectricalAction")

# Makes every object's identity hash the same, so the engine's hash sets iterate in insertion
# order: without it the order objects are listed in ("a seed jar (containing X, Y)") and the
# gold path (which flower pot) change from one load to the next. Costs no measurable step time.
DETERMINISTIC_JAVA_OPTIONS = ("-XX:+UnlockExperimentalVMOptions", "-XX:hashCode=2")

SYSTEM_PROMPT = """You are an agent in ScienceWorld, a text-based simulation of a house with a kitchen, a workshop, a greenhouse, an outside area and more, where you carry out elementary-school science tasks (boiling, measuring, building circuits, growing plants, mixing paints, genetics...).

Each turn, reply with exactly one command, either as <action>COMMAND</action> or as a single bare line. You may think first inside <think>...</think>.

Commands (OBJ and LOC are things and places you can see):
  look around | look at OBJ | look in OBJ | inventory | task (repeat the task)
  go to LOC | teleport to LOC | open OBJ | close OBJ
  pick up OBJ | put down OBJ | move OBJ to OBJ | pour OBJ in OBJ | dunk OBJ in OBJ | mix OBJ
  activate OBJ | deactivate OBJ | use OBJ | use OBJ on OBJ
  connect OBJ to OBJ | disconnect OBJ
  read OBJ | eat OBJ | flush OBJ | wait | wait1
  focus on OBJ  (marks the object the task is about; focusing on the wrong object fails the task)
When the game answers "Ambiguous request" with a numbered list, reply with the number of the action you meant.
Example: <action>open door to kitchen</action>"""


class ScienceWorldEnv(AgentEnv):
    """ScienceWorld's 30 science tasks, played through the real ``scienceworld`` engine.

    ## Description

    ScienceWorld (Wang et al., 2022) is a text world of a house, its garden and a greenhouse with
    working thermodynamics, electricity, chemistry, biology and genetics. Its 30 tasks (boil water,
    find a living thing, build a circuit, mix a tertiary colour, determine which pea trait is
    dominant...) each have many variations (7207 in all) split by the engine into train, dev and
    test blocks. ``reset`` draws a task (unless ``task`` is fixed) and a variation of the chosen
    split with ``self.np_random``, loads it into the env's own JVM and returns the task and a look
    around the start room. With ``simplifications="easy"`` (the default) doors and containers start
    open, teleporting is allowed, flower pots water themselves and electrical actions are kept.

    ## Observation

    A ``str``: at reset the task description and the first room; after a step the engine's answer
    (or, for output that did not parse, what was wrong with it). With
    ``observation="history+admissible"`` the task, the last ``history`` steps and the admissible
    actions come with it (``info["raw_observation"]`` keeps the engine's answer).

    ## Action

    A ``str``: one command in ``<action>...</action>`` or a bare single line (optionally after
    ``<think>...</think>``), e.g. ``<action>go to kitchen</action>``. Any string is accepted; bad
    output costs the ``format`` term and the turn. With ``action_format="choice"`` the admissible
    actions are numbered in the observation and a reply may be the number.

    ## Rewards

    Progressive reward shaping (SPEC §4.1) over four terms in [0, 1]:
    ``format`` (the turn parsed into one command), ``valid`` (the engine understood the command:
    it did not answer "No known action matches that input." or "Unknown action."),
    ``progress`` (the engine's score / 100, clipped to [0, 1]) and ``success`` (the task was
    completed). Each step pays the change of the PRS return, so an episode's rewards sum to
    ``0.1 * format + gate(format == 1) * (0.1 * valid + 0.3 * progress + 0.5 * success)``.
    ``reward_mode="binary"`` pays 1 on success at the end and 0 otherwise. ``info["score"]`` is the
    engine's score after each step (-100 to 100: -100 when the task failed). At the end,
    ``info["metrics"]["score"]`` is the episode's score as ScienceWorld results give it, 0 to 100 (a
    failed task counts 0), and ``info["metrics"]["engine_score"]`` the engine's final one.

    ## Episode End

    Terminated when the engine marks the task completed (success) or its score turns negative
    (the task failed, e.g. focusing on the wrong object; success is False). Truncated after
    ``max_turns`` turns, or when the JVM dies mid-episode (``info["error"]`` says why; the next
    ``reset`` starts a fresh JVM).

    ## Arguments

    - ``task``: an engine task name (``"boil"``), a task number (``"1-1"``), a list of them, or
      None for all 30 (the task is then drawn by seed, uniformly).
    - ``split``: ``"train"``, ``"dev"`` (alias ``"valid"``) or ``"test"``; the evaluation levels
      ``"L0"``, ``"L1"``, ``"L2"``; or ``"train_all"``. With ``task=None`` the draw on ``"train"``
      skips the L2 tasks (the last task of each topic, see
      :mod:`agentgym.envs.scienceworld.levels`); ``"train_all"`` keeps them.
    - ``simplifications``: the engine's simplification string, ``"easy"`` or e.g.
      ``"teleportAction,openDoors"``; ``""`` for none.
    - ``max_turns``: turn limit (default 100; a few gold paths are longer, up to ~180 steps).
    - ``expert``: put ``info["expert_action"]``, the next step of the engine's gold path, in every
      info. The expert follows the gold path while the agent does: it advances when the agent
      sends the expert's action, stays put when the agent's command was not understood (the world
      did not change), and gives ``None`` for the rest of the episode once the agent sends any
      other understood command, because the gold path no longer applies to the changed world.
      With ``scored_actions=True`` it gives each step in the words of the listed action that does
      it (:func:`listed_form`) and passes over steps the list does not offer (docs/envs/scienceworld.md).
    - ``admissible_actions``: put the engine's valid actions in ``info["admissible_actions"]``
      (default True). It is most of a step's cost; set False when the agent does not use them.
      After an "Ambiguous request" it lists the choice numbers the engine is waiting for.
    - ``deterministic``: run the JVM with identity hashes fixed (``-XX:hashCode=2``) so that
      the same seed gives the same observations and gold path (default True).
    - ``java_options``: JVM options (default ``engine.DEFAULT_JAVA_OPTIONS``: ``-Xmx512m
      -XX:+UseSerialGC`` and friends); ``java_path``: the java executable.
    - ``engine_timeout``: seconds one engine call may take before the episode is truncated.
    - ``observation`` (``"raw"`` or ``"history+admissible"``, with ``history`` past steps, default
      2) and ``action_format`` (``"text"`` or ``"choice"``): see docs/envs/scienceworld.md; they
      need ``admissible_actions=True`` (the lists are long: hundreds of actions).
    - ``reward_mode``, ``prs_weights``, ``tau_fmt``, ``prs_stage``, ``render_mode``, ``system_prompt``
      (replaces the built-in one): see
      :class:`agentgym.envs.base.AgentEnv`.
    - ``tasks``: a task set folder (``agentgym export-tasks``): play exactly its tasks, its keyword
      arguments under these (:mod:`agentgym.envs.task_sets`, docs/envs/arguments.md).

    ``reset(options=...)`` accepts ``task_id`` (``"boil"`` or ``"boil/12"``, task/variation),
    ``variation`` (an explicit index, any split), ``split`` and ``prs_stage``.

    ## Version History

    - v0: first version, on scienceworld 1.2. ``split="train"`` draws no L2 task; levels
      ``L0``/``L1``/``L2`` and ``train_all`` added. ``observation=``, ``history=`` and
      ``action_format=`` added (defaults unchanged). ``info["metrics"]["score"]`` counts a failed task
      0 (it was the engine's -100), ``info["metrics"]["engine_score"]`` added; rewards unchanged.
    """

    prs_base = EMBODIED_PRS
    format_hint = "Reply with one command, e.g. <action>look around</action>."
    lists_admissible_actions = True

    def __init__(self, task: str | Sequence[str] | None = None, split: str = "train",
                 simplifications: str = "easy", max_turns: int = 100, expert: bool = False,
                 admissible_actions: bool = True, deterministic: bool = True,
                 java_options: Sequence[str] | None = None, java_path: str | None = None,
                 engine_timeout: float | None = 120.0, **kwargs: Any):
        _import_scienceworld()  # DependencyNotInstalled now, not at the first reset
        self._java = find_java(java_path)
        super().__init__(max_turns=max_turns, expert=expert, **kwargs)
        # Tasks named by the user are played on any split; a draw over all tasks skips L2 on train.
        self.explicit_tasks = task is not None
        if task is None:
            self.tasks = TASK_NAMES
        elif isinstance(task, str):
            self.tasks = (canonical_task(task),)
        else:
            self.tasks = tuple(canonical_task(t) for t in task)
            if not self.tasks:
                raise ValueError("task must be a task name, a non-empty list of them, or None")
        self.split = canonical_split(split)
        drawable_tasks(self.tasks, self.split, self.explicit_tasks)  # fail now if the split has none
        self.simplifications = _check_simplifications(str(simplifications), self.tasks)
        self.admissible = bool(admissible_actions)
        if not self.admissible and (self.observation_mode != "raw" or self.action_format != "text"):
            raise ValueError(f"observation={self.observation_mode!r} / action_format={self.action_format!r} show "
                             "the admissible actions, which admissible_actions=False turns off")
        self.deterministic = bool(deterministic)
        self.java_options = list(java_options) if java_options is not None else None
        self.engine_timeout = engine_timeout
        self._engine: ScienceWorldEngine | None = None
        self.task = self.variation = None
        self._score = 0
        self._last_response = ""
        self._valid_cache: tuple[int, list[str]] | None = None
        self._gold: list[str] = []
        self._gold_index: int | None = None
        self._gold_listed: tuple[int, str] | None = None

    @property
    def default_system_prompt(self) -> str:
        return SYSTEM_PROMPT

    # ----- the engine ----------------------------------------------------------------------
    @property
    def engine(self) -> ScienceWorldEngine:
        """This env's JVM, started on first use and restarted if it died."""
        if self._engine is None or not self._engine.alive:
            if self._engine is not None:
                self._engine.close()
            options = self.java_options
            if options is None:
                from agentgym.envs.scienceworld.engine import DEFAULT_JAVA_OPTIONS
                options = list(DEFAULT_JAVA_OPTIONS)
            if self.deterministic:
                options = [*DETERMINISTIC_JAVA_OPTIONS, *options]
            self._engine = ScienceWorldEngine(options, self._java, self.engine_timeout)
        return self._engine

    def close(self) -> None:
        if self._engine is not None:
            self._engine.close()
            self._engine = None
        super().close()

    # ----- episode start ---------------------------------------------------------------------
    def task_refs(self, split: str | None = None) -> list[TaskRef]:
        """Every variation of ``split`` of each task a reset draws from (no held-out L2 task on a
        training split), from the task tables: no JVM is started to list them. The task type is the task."""
        split = canonical_split(split or self.split)
        return [TaskRef(f"{task}/{v}", task, {"task_id": f"{task}/{v}", "split": split})
                for task in drawable_tasks(self.tasks, split, self.explicit_tasks) for v in split_variations(task, split)]

    def _choose(self, options: dict[str, Any]) -> tuple[str, int, str]:
        split = canonical_split(options.get("split", self.split))
        task, variation = None, options.get("variation")
        task_id = options.get("task_id")
        if task_id is not None:
            name, _, var = str(task_id).partition("/")
            task = canonical_task(name)
            if var:
                variation = int(var)
        if task is None:
            pool = drawable_tasks(self.tasks, split, self.explicit_tasks)
            task = pool[int(self.np_random.integers(len(pool)))]
        if variation is None:
            pool = split_variations(task, split)
            variation = pool[int(self.np_random.integers(len(pool)))]
        variation = int(variation)
        if not 0 <= variation < num_variations(task):
            raise ValueError(f"variation {variation} out of range for task {task!r} "
                             f"(0..{num_variations(task) - 1})")
        return task, variation, split

    def _start(self, options: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        task, variation, split = self._choose(options)
        try:
            look, description = self._load(task, variation)
        except EngineFailure:
            # A JVM that died or wedged between episodes: one fresh start, then give up loudly.
            if self._engine is not None:
                self._engine.close()
            look, description = self._load(task, variation)
        self.task, self.variation = task, variation
        self._score = 0
        self._last_response = look
        self._valid_cache = None
        task_id = f"{task}/{variation}"
        obs = f"{description}\n\n{look}"
        info = {"task_id": task_id, "instruction": description, "group_key": f"scienceworld/{task_id}",
                "task": task, "variation": variation, "split": split,
                "simplifications": self.simplifications}
        return obs, info

    def _load(self, task: str, variation: int) -> tuple[str, str]:
        engine = self.engine
        engine.load(task, variation, self.simplifications, self.expert)
        # Same first move as scienceworld's own reset(), so gold paths replay exactly.
        look = engine.step("look around")
        description = engine.task_description()
        self._gold = engine.gold_actions() if self.expert else []
        self._gold_index = 0
        self._gold_listed = None
        return look, description

    # ----- a turn ----------------------------------------------------------------------------
    def _parse(self, action: str) -> ParsedAction:
        return parse_embodied_action(action)

    def _execute(self, parsed: ParsedAction) -> Transition:
        command = parsed.text
        engine = self._engine
        try:
            if engine is None or not engine.alive:
                raise EngineFailure("the ScienceWorld JVM is not running" if engine is None else engine.status())
            response = engine.step(command)
            raw_score = engine.score()
            completed = engine.completed()
        except EngineFailure as e:
            raise EngineError(str(e)) from e
        score = int(round(100 * raw_score))  # what scienceworld reports
        valid = not response.startswith(INVALID_RESPONSES)
        failed = score < 0
        success = bool(completed and not failed and score >= 100)
        self._score = score
        self._last_response = response
        self._valid_cache = None
        self._track_expert(command, valid)
        terms = {"format": 1.0, "valid": float(valid), "progress": min(max(score / 100.0, 0.0), 1.0),
                 "success": float(success)}
        return Transition(response, terms, action_valid=valid, terminated=bool(completed or failed),
                          success=success, extra_info={"score": score})

    def _track_expert(self, command: str, valid: bool) -> None:
        if not self.expert or self._gold_index is None:
            return
        if self._gold_index < len(self._gold) and _norm(command) in self._gold_forms():
            self._gold_index += 1
        elif valid:
            self._gold_index = None  # off the gold path for good

    def _gold_forms(self) -> set[str]:
        """The next gold step as the engine wrote it and, with ``scored_actions``, in the list's words."""
        forms = {_norm(self._gold[self._gold_index])}
        if self._gold_listed is not None and self._gold_listed[0] == self._gold_index:
            forms.add(_norm(self._gold_listed[1]))
        return forms

    def _expert_action(self) -> str | None:
        if self._gold_index is None or self._gold_index >= len(self._gold):
            return None
        if not self.scored_actions:
            return self._gold[self._gold_index]
        # A scoring policy can play only what the list offers: the gold path's own words name objects
        # by their full referent ("move flower pot 6 containing apple tree and soil in inventory to red
        # box") where the list says "move flower pot to red box", and its "open door" steps are
        # no-ops the list leaves out when doors start open. So the expert gives the next gold step the
        # list offers, in the list's words, and passes over the others.
        while self._gold_index < len(self._gold):
            listed = self._listed_gold_step()
            if listed is not None:
                self._gold_listed = (self._gold_index, listed)
                return listed
            self._gold_index += 1
        return None

    def _listed_gold_step(self) -> str | None:
        step = self._gold[self._gold_index]
        if step in (self._admissible_actions() or ()):
            return step
        try:
            if self._engine is None:
                return None
            return listed_form(step, self._engine.valid_action_entries(), self._engine.object_referents())
        except EngineFailure:
            return None

    def _admissible_actions(self) -> list[str] | None:
        if not self.admissible:
            return None
        if self._last_response.startswith(AMBIGUOUS_PREFIX):
            return _CHOICE.findall(self._last_response)
        if self._valid_cache is None or self._valid_cache[0] != self._turn:
            try:
                if self._engine is None:
                    raise EngineFailure("not running")
                actions = self._engine.valid_actions()
            except EngineFailure:
                actions = []  # the next step reports the failure
            self._valid_cache = (self._turn, actions)
        return list(self._valid_cache[1])

    def _episode_metrics(self, success: bool) -> dict[str, float]:
        # a failed task's -100 is a failure flag, not a measure: averaged in, it would pull a mean score
        # below any episode's progress
        return {"score": float(max(self._score, 0)), "engine_score": float(self._score)}


def _norm(command: str) -> str:
    return " ".join(command.lower().split())


def listed_form(command: str, entries: Sequence[dict], referents: dict[int, list[str]]) -> str | None:
    """The valid action that does what ``command`` does, in the list's words; None when no valid
    action does, or when the one that does is ambiguous (its words name another valid action too).

    ``entries`` are the engine's valid actions with their objects (``valid_action_entries``) and
    ``referents`` every object's names (``object_referents``). ``command`` matches an entry when it
    is the entry's action with each object named by any of its names, optionally followed by where
    it is (``... in inventory``), as the engine's parser takes it:

    >>> entries = [{"action": "move flower pot to red box", "obj_ids": [6, 9]},
    ...            {"action": "move flower pot to table", "obj_ids": [6, 2]}]
    >>> names = {6: ["flower pot", "flower pot 6 containing apple tree and soil"], 9: ["red box"], 2: ["table"]}
    >>> listed_form("move flower pot 6 containing apple tree and soil in inventory to red box", entries, names)
    'move flower pot to red box'
    >>> listed_form("open door to kitchen", entries, names) is None
    True
    """
    wanted = _norm(command)
    verb = wanted.split(" ", 1)[0]
    matches: set[str] = set()
    counts: dict[str, int] = {}
    for entry in entries:
        action = str(entry["action"])
        counts[action] = counts.get(action, 0) + 1
        if action.split(" ", 1)[0] != verb:
            continue
        names = [referents.get(int(i), []) for i in entry.get("obj_ids", [])]
        if not all(any(n in wanted for n in ns) for ns in names):
            continue
        pattern = _entry_pattern(action, names)
        if pattern is not None and pattern.fullmatch(wanted):
            matches.add(action)
    if len(matches) != 1:
        return None
    (action,) = matches
    return action if counts[action] == 1 else None


def _entry_pattern(action: str, names: Sequence[Sequence[str]]) -> re.Pattern | None:
    """A regex for ``action`` with each object's words (in order) replaced by any of its names."""
    pos, parts = 0, []
    for ns in names:
        longest = sorted(ns, key=len, reverse=True)
        # the earliest name found from here, the longest of those found there
        found = [(start, -len(n)) for n in longest if (start := action.find(n, pos)) >= 0]
        if not found:
            return None
        start, minus_length = min(found)
        parts += [re.escape(action[pos:start]), "(?:" + "|".join(map(re.escape, longest)) + ")(?: in [^,]+?)?"]
        pos = start - minus_length
    parts.append(re.escape(action[pos:]))
    return re.compile("".join(parts))


def _check_simplifications(simplifications: str, tasks: Sequence[str]) -> str:
    parts = [p.strip() for p in simplifications.split(",") if p.strip()]
    unknown = [p for p in parts if p not in SIMPLIFICATIONS]
    if unknown:
        raise ValueError(f"unknown ScienceWorld simplifications {unknown}; expected a comma-separated "
                         f"subset of {SIMPLIFICATIONS}")
    electrical = [t for t in tasks if "power-component" in t or "conductivity" in t]
    if "noElectricalAction" in parts and electrical:
        raise ValueError(f"noElectricalAction removes the actions tasks {electrical} need")
    return ",".join(parts)
