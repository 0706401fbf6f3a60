"""``ALFWorld-v0``: ALFWorld's household tasks on the real TextWorld PDDL engine."""

from __future__ import annotations

import re
from typing import Any

from agentgym.envs.alfworld.data import canonical_split, find_games, resolve_data_root
from agentgym.envs.alfworld.engine import expert_plan, has_traj_data, make_engine, require_engine
from agentgym.envs.alfworld.levels import L0_EVERY, select_games, source_splits
from agentgym.envs.alfworld.progress import GoalProgress
from agentgym.envs.alfworld.search_expert import SearchGoal, search_action
from agentgym.envs.alfworld.tasks import normalize_task_types
from agentgym.envs.base import AgentEnv, EngineError, Transition
from agentgym.envs.grammar_expressions import GrammarExpressionError
from agentgym.envs.parsing import ParsedAction, parse_embodied_action
from agentgym.envs.task_refs import TaskRef
from agentgym.rewards.prs import EMBODIED_PRS

_TASK_LINE = re.compile(r"Your task is to: (.*?)\.?\s*$", re.MULTILINE)
NOTHING_HAPPENS = "Nothing happens."
EXPERT_POLICIES = ("planner", "search")

SYSTEM_PROMPT = """You are an agent in a household, solving a task by acting in a text world.
Each turn, read the observation and reply with exactly one command, either alone on one line or as
<action>command</action> (an optional <think>...</think> may come first).

Commands:
  look                              look around your current location
  inventory                         check what you are carrying
  go to (receptacle)                move to a receptacle, e.g. go to countertop 1
  open (receptacle) / close (receptacle)
  take (object) from (receptacle)   e.g. take apple 1 from fridge 1
  move (object) to (receptacle)     put the object you carry in or on a receptacle
  examine (something)               examine a receptacle or an object
  use (object)                      turn a lamp on or off
  heat (object) with (receptacle)   with a microwave
  clean (object) with (receptacle)  with a sink basin
  cool (object) with (receptacle)   with a fridge

You carry one object at a time. Commands that do not apply answer "Nothing happens."."""


class ALFWorldEnv(AgentEnv):
    """ALFWorld (Shridhar et al., 2021): household tasks in text, on textworld's PDDL engine.

    ## Description
    Each episode is one ALFWorld game: a room (kitchen, living room, bedroom or bathroom) with
    receptacles and objects, and a task of one of six types: ``pick_and_place_simple``,
    ``look_at_obj_in_light``, ``pick_clean_then_place_in_recep``, ``pick_heat_then_place_in_recep``,
    ``pick_cool_then_place_in_recep``, ``pick_two_obj_and_place``. Games play on textworld's
    ``PddlEnv`` with alfworld's ``AlfredDemangler``/``AlfredInfos`` wrappers (and its planner
    ``AlfredExpert`` with ``expert=True``), one engine per env. Games come from official ALFWorld
    data (``data_path`` or ``$ALFWORLD_DATA``) or from agentgym's offline generator.

    ## Observation
    The engine's text, as ALFWorld gives it: at reset the welcome line, the room and "Your task
    is to: ...", then the feedback of each command ("You arrive at fridge 1. The fridge 1 is
    closed."). A command that is not admissible gets ALFWorld's "Nothing happens."; output that is
    not one command gets "Invalid output: ..." with the reason. With
    ``observation="history+admissible"`` each observation states the task, the last ``history``
    steps, that text and the admissible actions (``info["raw_observation"]`` keeps the engine's
    text; :mod:`agentgym.envs.observations`).

    ## Action
    Any string. One command, bare on one line or in ``<action>...</action>``, optionally after a
    ``<think>`` block. Matching is lenient in case, whitespace and a final period;
    ``info["admissible_actions"]`` lists the commands the engine accepts now. With
    ``action_format="choice"`` the observation numbers them and a reply may be the number instead
    (out of range: ``format`` 1, ``valid`` 0).

    ## Rewards
    Progressive reward shaping (SPEC §4.1), terms per step in ``info["reward_terms"]``:
    ``format`` (the output parsed as one command), ``valid`` (the command was admissible),
    ``progress`` (fraction of the task's goal conditions met, read from the engine's facts, see
    :mod:`agentgym.envs.alfworld.progress`) and ``success`` (the game is won). The step reward is
    the change in the PRS return; ``reward_mode="binary"`` pays 1 on success instead.

    ## Episode End
    Terminated when the task is solved; truncated after ``max_turns`` turns, or when the engine
    fails (``info["error"]``).

    ## Arguments
    - ``data_path``: a data root in the official layout (``<root>/json_2.1.1/<split>/...``, or the
      ``json_2.1.1`` folder itself); ``"generated"`` for the generated default set
      (``"generated:N"`` for a generated set of N games, ``"generated:N:small"`` or ``":tiny"`` with
      smaller rooms, docs/envs/alfworld.md); None for
      ``$ALFWORLD_DATA`` when it holds the split, else the generated default set (written to
      ``$AGENTGYM_CACHE/alfworld`` or ``~/.cache/agentgym/alfworld`` on first use).
    - ``split``: ``train``, ``valid_seen`` or ``valid_unseen`` (aliases ``valid``/``dev`` for
      ``valid_seen``, ``test`` for ``valid_unseen``); the evaluation levels ``L0``, ``L1``, ``L2``;
      or ``train_all``. ``train`` leaves out the L2 task types (``pick_cool_then_place_in_recep``,
      ``pick_two_obj_and_place``), ``train_all`` keeps all six (see
      :mod:`agentgym.envs.alfworld.levels`). ``reset(options={"split": ...})`` overrides it.
    - ``task_types``: task type names or alfworld's ids 1-6 to keep (default all six).
    - ``l0_every``: level ``L0`` keeps every ``l0_every``-th ``train`` game of each seen type
      (default 10). A larger stride makes a smaller pool for a run that trains on ``split="L0"``
      and measures what it learnt there (e.g. 67 on ``generated:16000:tiny``: 128 games).
    - ``cache``: translate each game file once and keep the translation on disk (default True;
      ``$AGENTGYM_CACHE/alfworld/translations`` or ``~/.cache/agentgym/alfworld/translations``, or
      the folder given as a string); the game plays exactly the same, and a warm reset and a step
      cost tens of times less. False plays on textworld's ``PddlEnv`` unchanged.
    - ``expert_policy``: which expert ``expert=True`` plays: ``"planner"`` (default: alfworld's
      planner, which knows where everything is) or ``"search"`` (finds objects by looking, from
      what a policy sees; :mod:`agentgym.envs.alfworld.search_expert`).
    - ``max_turns`` (50), ``expert`` (``info["expert_action"]`` from the planner), ``reward_mode``,
      ``prs_weights``, ``tau_fmt``, ``prs_stage``, ``render_mode`` (``"ansi"``), ``system_prompt``
      (replaces the built-in one): see ``AgentEnv``.
    - ``tasks``: a task set folder (``agentgym export-tasks``): play exactly its tasks, its keyword
      arguments under these (:mod:`agentgym.envs.task_sets`, docs/envs/arguments.md).
    - ``observation`` (``"raw"``, or ``"history+admissible"`` with ``history`` past steps, default 2),
      ``action_format`` (``"text"`` or ``"choice"``) and ``mark_played`` (admissible actions
      already played this episode end with " (done)", e.g. the receptacles gone to): what a policy
      sees and may reply, see docs/envs/alfworld.md.

    ``reset(seed=s)`` picks the game with ``self.np_random`` (same seed, same game and
    observations); ``options={"task_id": ...}`` picks one by id (``<task folder>/<trial>``) or index.

    ## Version History
    - v0: initial version (textworld 1.7, alfworld 0.4.2). ``split="train"`` leaves out the L2
      task types; levels ``L0``/``L1``/``L2`` and ``train_all`` added. ``observation=``,
      ``history=`` and ``action_format=`` added (defaults unchanged); ``cache`` added (on by
      default: same games, faster resets and steps); ``data_path="generated:N[:ROOM]"``;
      ``expert_policy`` and ``mark_played`` added (defaults unchanged); ``l0_every`` added
      (default 10, the level as before).
    """

    prs_base = EMBODIED_PRS
    format_hint = "Reply with one command, e.g. <action>go to countertop 1</action>."
    lists_admissible_actions = True

    def __init__(self, data_path: str | None = None, split: str = "train", task_types=None, max_turns: int = 50,
                 expert: bool = False, cache: bool | str = True, expert_policy: str = "planner",
                 l0_every: int = L0_EVERY, **kwargs: Any):
        require_engine()
        super().__init__(max_turns=max_turns, expert=expert, **kwargs)
        if expert_policy not in EXPERT_POLICIES:
            raise ValueError(f"expert_policy must be one of {EXPERT_POLICIES}, got {expert_policy!r}")
        if isinstance(l0_every, bool) or not isinstance(l0_every, int) or l0_every < 1:
            raise ValueError(f"l0_every must be an integer >= 1, got {l0_every!r}")
        self.l0_every = l0_every
        self.expert_policy = expert_policy
        self._played: list[str] = []
        """The commands the engine ran this episode (what the searching expert reads)."""
        self.split = canonical_split(split)
        self.task_types = normalize_task_types(task_types)
        self.data_path = data_path
        self._games: dict[str, list] = {}
        self.games_in(self.split)  # fail at construction, not at the first reset, if there are no games
        self.cache = cache
        self._raw_engine, self._expert_engine = make_engine(self.expert, cache=cache)
        self._engine = self._raw_engine
        self._loaded: str | None = None
        self._loaded_once = False
        self._state = None
        self._goal: GoalProgress | None = None
        self._search_goal: SearchGoal | None = None
        """The task as the searching expert reads it, built with ``_goal``."""
        self._goal_file: str | None = None
        self._progress = 0.0

    # ----- games ---------------------------------------------------------------------------
    def games_in(self, split: str) -> list:
        """The playable games of a split (``GameRecord``: path, task_id, task_type)."""
        split = canonical_split(split)
        if split not in self._games:
            roots = {s: resolve_data_root(self.data_path, s) for s in source_splits(split)}
            games = select_games(split, {s: find_games(root, s, self.task_types) for s, root in roots.items()},
                                 self.l0_every)
            if not games:
                where = ", ".join(f"{root!r} ({s})" for s, root in roots.items())
                raise ValueError(f"no ALFWorld games of types {list(self.task_types)} in split {split!r} under "
                                 f"{where}; expected <root>/json_2.1.1/<split>/<task>/<trial>/game.tw-pddl")
            self._games[split] = games
        return self._games[split]

    @property
    def games(self) -> list:
        return self.games_in(self.split)

    def task_refs(self, split: str | None = None) -> list[TaskRef]:
        """Every playable game of ``split``, its task type ALFWorld's."""
        split = canonical_split(split or self.split)
        return [TaskRef(g.task_id, g.task_type, {"task_id": g.task_id, "split": split}) for g in self.games_in(split)]

    def _pick(self, games: list, task_id) -> int:
        if task_id is None:
            return int(self.np_random.integers(len(games)))
        if isinstance(task_id, int) and not isinstance(task_id, bool):
            if not 0 <= task_id < len(games):
                raise ValueError(f"task_id index {task_id} out of range for {len(games)} games")
            return task_id
        for i, game in enumerate(games):
            if task_id in (game.task_id, game.path) or game.task_id.endswith("/" + str(task_id)):
                return i
        raise ValueError(f"unknown task_id {task_id!r}; e.g. {games[0].task_id!r}")

    # ----- AgentEnv hooks --------------------------------------------------------------------
    @property
    def default_system_prompt(self) -> str:
        return SYSTEM_PROMPT

    def _start(self, options: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        split = canonical_split(options.get("split", self.split))
        games = self.games_in(split)
        game = games[self._pick(games, options.get("task_id"))]
        try:
            if game.path != self._loaded:
                self._loaded = None
                self._engine = self._raw_engine
                if self._expert_engine is not None and has_traj_data(game.path):
                    self._engine = self._expert_engine
                self._engine.load(game.path)
                self._loaded, self._loaded_once = game.path, True
            self._state = self._engine.reset()
        except GrammarExpressionError:  # a game file that asks for code to run: its message names the file
            self._loaded = None
            raise
        except Exception as e:  # a broken game file or engine: say which game
            self._loaded = None
            raise RuntimeError(f"ALFWorld engine failed to start {game.path}: {type(e).__name__}: {e}") from e
        if self._goal is None or self._goal_file != game.path:
            problem = self._engine.unwrapped._game_data["pddl_problem"]
            self._goal, self._goal_file = GoalProgress(game.task_type, problem, self._state["_facts"]), game.path
            self._search_goal = SearchGoal.from_pddl_classes(self._goal.task_type, self._goal.object_class,
                                                             self._goal.receptacle_class, self._goal.lamp_class)
        self._progress = self._goal(self._state["_facts"], False)
        self._played = []
        obs = self._state.feedback
        match = _TASK_LINE.search(obs)
        info = {"task_id": game.task_id, "instruction": match.group(1) if match else obs,
                "group_key": f"ALFWorld-v0/{split}/{game.task_id}", "task_type": game.task_type,
                "split": split, "game_file": game.path}
        return obs, info

    def _parse(self, action: str) -> ParsedAction:
        return parse_embodied_action(action)

    def _match(self, command: str) -> str | None:
        admissible = self._state["admissible_commands"]
        if command in admissible:
            return command
        command = command.lower().rstrip(".").strip()
        return command if command in admissible else None

    def _execute(self, parsed: ParsedAction) -> Transition:
        command = self._match(parsed.text)
        if command is None:
            # The engine would answer exactly this and change nothing; skip its costly recompute.
            return Transition(NOTHING_HAPPENS, {"format": 1.0, "valid": 0.0, "progress": self._progress,
                                                "success": 0.0}, action_valid=False)
        try:
            self._state, _, _ = self._engine.step(command)
            self._played.append(command)
            won = bool(self._state["won"])
            self._progress = self._goal(self._state["_facts"], won)
        except Exception as e:
            self._loaded = None
            raise EngineError(f"{type(e).__name__}: {e}") from e
        return Transition(self._state.feedback, {"format": 1.0, "valid": 1.0, "progress": self._progress,
                                                 "success": float(won)},
                          terminated=won, success=won)

    def _format_error_terms(self) -> dict[str, float]:
        return {"format": 0.0, "valid": 0.0, "progress": self._progress, "success": 0.0}

    def _admissible_actions(self) -> list[str] | None:
        return list(self._state["admissible_commands"]) if self._state is not None else None

    def _expert_action(self) -> str | None:
        if self._state is None:
            return None
        if self.expert_policy == "search":
            action = search_action(self._search_goal, self._state["admissible_commands"], self._played)
            if action is not None:
                return action
        plan = expert_plan(self._state)
        return plan[0] if plan else None

    def _episode_metrics(self, success: bool) -> dict[str, float]:
        return {"progress": self._progress}

    def close(self) -> None:
        if getattr(self, "_raw_engine", None) is not None:
            try:
                self._raw_engine.close()
                if self._loaded_once:
                    # Free the planning task the engine's private fast-downward library holds (the
                    # library itself stays mapped: unloading it crashes the interpreter at exit).
                    self._raw_engine.unwrapped.downward_lib.cleanup()
            except Exception:  # closing a dead engine must not raise
                pass
            self._raw_engine = self._expert_engine = self._engine = self._state = None
            self._loaded = None
        super().close()
