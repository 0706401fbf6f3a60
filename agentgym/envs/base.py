"""The base class every agentgym env shares: the env contract of SPEC §3 in one place.

A subclass supplies the dynamics in four small methods and gets the rest (turn limit, PRS
bookkeeping, ``reward_mode``, PRS stage, bad-input handling, engine faults, the transcript, the
expert hook and every ``info`` key of the contract) from here:

- ``_start(options) -> (observation, info)``: pick a task with ``self.np_random`` and start it.
  ``info`` must hold ``task_id``, ``instruction`` and ``group_key``.
- ``_parse(action) -> ParsedAction``: turn raw text into an action or a reason it is not one.
- ``_execute(parsed) -> Transition``: run a parsed action.
- ``_format_error_terms()``: the PRS terms of a turn that did not parse.

plus ``default_system_prompt``, ``tools`` and optionally ``_expert_action``, ``_episode_metrics`` and
``task_refs`` (every task of a split, which :meth:`AgentEnv.task_ids` and the leaderboard list).

An env whose engine lists admissible actions (``_admissible_actions``, with
``lists_admissible_actions = True``) also gets the ``observation="history+admissible"`` /
``history=k`` and ``action_format="choice"`` options from here (:mod:`agentgym.envs.observations`).
Every env takes ``tasks=`` (a task set folder: it plays exactly those tasks; :mod:`agentgym.envs.task_sets`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym

from agentgym.envs import arguments
from agentgym.envs.observations import CHOICE_NOTE, HISTORY_NOTE, HISTORY_ONLY_NOTE, PLAYED_MARK, history_entry
from agentgym.envs.parsing import ParsedAction, choice_replies, resolve_choice, sanitize
from agentgym.envs.parts import ChoiceSettings, RewardSettings, TextLimits, keywords, take
from agentgym.envs.task_refs import TaskRef
from agentgym.envs.task_sets import TakesTaskSet, TaskDraws, set_task_ids
from agentgym.envs.time_limit import time_limit_around
from agentgym.rewards.components import reward_components
from agentgym.rewards.prs import PRSSpec, PRSTracker

_TOO_DEEP = "the output is nested too deeply to read"


class EngineError(RuntimeError):
    """The engine behind an env failed (process died, timed out). Ends the episode as truncated."""


class DataRefused(ValueError):
    """What the env was asked to load is refused (a game file whose grammar asks to run code): not an
    engine fault, so the vector layer raises it at once instead of retrying on a new worker."""


@dataclass
class Transition:
    """What one executed action did."""

    observation: str
    terms: dict[str, float]
    """PRS terms measured at this step (only those this step measures)."""
    action_valid: bool = True
    terminated: bool = False
    success: bool = False
    extra_info: dict[str, Any] = field(default_factory=dict)


class AgentEnv(gym.Env[str, str], metaclass=TakesTaskSet):
    """Shared machinery of agentgym's text envs. See the module docstring for what to override."""

    metadata = {"render_modes": ["ansi"], "render_fps": 1}
    prs_base: PRSSpec
    format_hint: str = ""
    lists_admissible_actions: bool = False
    """Whether the engine lists admissible actions, which ``observation="history+admissible"`` and
    ``action_format="choice"`` need."""

    def __init__(self, *, max_turns: int, expert: bool = False, render_mode: str | None = None,
                 system_prompt: str | None = None, tasks: Any = None, **parts: Any):
        """``max_turns`` and the keywords of the env's parts (:mod:`agentgym.envs.parts`): its
        rewards (``reward_mode``, ``prs_weights``, ``tau_fmt``, ``prs_stage``), its limits
        (``max_action_chars``, ``max_observation_chars``) and, where the engine lists admissible
        actions, how they are shown (``observation``, ``history``, ``action_format``,
        ``mark_played``, ``constrained_choice``, ``scored_actions``); ``expert`` puts the expert's action in ``info``,
        ``system_prompt`` replaces the env's own, ``tasks`` is a task set folder."""
        parts = dict(parts)
        rewards, limits = take(RewardSettings, parts), take(TextLimits, parts, max_turns=max_turns)
        choices = take(ChoiceSettings, parts)
        if parts:  # named here, with the keywords the env does take, rather than by Python's TypeError
            raise arguments.unknown_keywords_error(type(self), parts)
        if choices.asked and not self.lists_admissible_actions:
            raise ValueError(f"{type(self).__name__} lists no admissible actions, which {' and '.join(choices.asked)} "
                             "shows; these options are for ALFWorld, ScienceWorld and TextWorld")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be None or 'ansi', got {render_mode!r}")
        if system_prompt is not None and (not isinstance(system_prompt, str) or not system_prompt.strip()):
            raise ValueError(f"system_prompt must be a non-empty string or None, got {system_prompt!r}")
        self.rewards, self.limits, self.choices = rewards, limits, choices
        # each part's settings, also as the attributes they have always been
        self.reward_mode, self.prs_stage = rewards.reward_mode, rewards.prs_stage
        self.prs_spec = rewards.spec(self.prs_base)
        self.max_turns, self.max_action_chars = limits.max_turns, limits.max_action_chars
        self._turn_limit = self.max_turns  # this episode's: lower under a TimeLimit wrapper (time_limit.py)
        self.observation_space, self.action_space = limits.spaces()
        self.observation_mode, self.history, self.action_format = choices.observation, choices.history, choices.action_format
        self.mark_played, self.constrained_choice = choices.mark_played, choices.constrained_choice
        self.scored_actions = choices.scored_actions
        self._view = choices.view()
        self._choices: list[str] | None = None
        """The admissible actions the latest observation shows: what a choice number counts in."""
        self._system_prompt = system_prompt
        self.expert = bool(expert)
        self.render_mode = render_mode
        self._tracker = PRSTracker(self.prs_spec)
        self._transcript: list[tuple[str, str]] = []
        self._turn = 0
        self._done = True
        self._last_obs = ""
        self._task_info: dict[str, Any] = {}
        self.task_set = tasks
        """The task set resets draw from (``tasks=``, loaded by :class:`TakesTaskSet`), or None."""
        self._task_draws = TaskDraws(tasks) if tasks is not None else None

    @classmethod
    def part_keywords(cls) -> tuple[str, ...]:
        """The keywords the env's parts take besides ``max_turns`` (:mod:`agentgym.envs.parts`). An env
        whose engine lists no admissible actions takes how they are shown at their defaults only."""
        return tuple(name for part in (RewardSettings, TextLimits, ChoiceSettings) for name in keywords(part)
                     if name != "max_turns")

    # ----- what subclasses provide ---------------------------------------------------------
    @property
    def default_system_prompt(self) -> str:
        """How to act in this env: the action syntax, the tools and their schemas."""
        raise NotImplementedError

    @property
    def system_prompt(self) -> str:
        """The ``system_prompt`` the env was made with (e.g. a one-line prompt for a tiny model),
        else :attr:`default_system_prompt`, with a line on the observation and choice options in use."""
        if self._system_prompt is not None:
            return self._system_prompt
        notes = {"raw": [], "history": [HISTORY_ONLY_NOTE]}.get(self.observation_mode, [HISTORY_NOTE])
        notes += [CHOICE_NOTE] if self._view.choice else []
        return "\n".join([self.default_system_prompt, *notes])

    @property
    def tools(self) -> list[dict]:
        """OpenAI function schemas of the env's tools (none by default)."""
        return []

    def _start(self, options: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        raise NotImplementedError

    def _parse(self, action: str) -> ParsedAction:
        raise NotImplementedError

    def _execute(self, parsed: ParsedAction) -> Transition:
        raise NotImplementedError

    def _format_error_terms(self) -> dict[str, float]:
        return {"format": 0.0}

    def _expert_action(self) -> str | None:
        return None

    def _episode_metrics(self, success: bool) -> dict[str, float]:
        return {}

    def _admissible_actions(self) -> list[str] | None:
        return None

    def task_refs(self, split: str | None = None) -> list[TaskRef] | None:
        """Every task of ``split`` (default: the env's own) as a :class:`~agentgym.envs.task_refs.TaskRef`:
        its ``task_id``, its ``task_type`` (what results are grouped by) and the reset options that
        start exactly it, in a fixed order; None when the env cannot list them. These are the env's
        own tasks, with or without ``tasks=``."""
        return None

    def _split_task_ids(self, split: str | None) -> list[str] | None:
        """What :meth:`task_ids` lists without a task set: ``split``'s tasks (None: the env's split)."""
        refs = self.task_refs(split)
        return None if refs is None else [ref.task_id for ref in refs]

    # ----- the contract ------------------------------------------------------------------
    @property
    def spec(self):
        return self.__dict__.get("_spec")

    @spec.setter
    def spec(self, spec) -> None:
        # gym.make sets the spec right after making the env: the one moment the id it was made as is known
        task_set = self.__dict__.get("task_set")
        if spec is not None and task_set is not None and spec.id != task_set.env_id:
            raise ValueError(f"the task set at {task_set.where} holds {task_set.env_id} tasks, not {spec.id} ones: "
                             f"make it with gym.make({task_set.env_id!r}, tasks=...)")
        self.__dict__["_spec"] = spec

    def task_ids(self, split: str | None = None) -> list[str] | None:
        """Every task of ``split`` (default: the env's own) as the ``task_id`` that
        ``reset(options={"task_id": ...})`` starts, in a fixed order; None when the env cannot
        list them. Trainers use it to keep cold-start and RL tasks apart. An env made with
        ``tasks=`` lists the set's tasks (those of ``split``, when one is named)."""
        if self.task_set is None:
            return self._split_task_ids(split)
        return set_task_ids(self.task_set, split, self._split_task_ids)

    def set_prs_stage(self, stage: float | None) -> None:
        """Set the PRS stage for the next episodes (None: the final stage, full reward)."""
        self.prs_stage = arguments.prs_stage(stage)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        options = dict(options or {})
        if self._task_draws is not None:
            options = self._task_draws.options(seed, options)
        if "prs_stage" in options:
            self.prs_stage = arguments.prs_stage(options.pop("prs_stage"), 'options["prs_stage"]')
        self._tracker = PRSTracker(self.prs_spec, self.prs_stage)
        self._turn_limit = min(self.max_turns, time_limit_around(self) or self.max_turns)
        self._turn = 0
        self._done = False
        obs, info = self._start(options)
        for key in ("task_id", "instruction", "group_key"):
            if key not in info:
                raise KeyError(f"{type(self).__name__}._start must put {key!r} in info")
        self._task_info = {k: info[k] for k in ("task_id", "group_key")}
        info["system_prompt"] = self.system_prompt
        info["tools"] = self.tools
        info["max_turns"] = self._turn_limit
        admissible = self._choices = self._next_turn_info(info)
        if self._view.active:
            self._view.start(str(info["instruction"]), obs)
            info.update(raw_observation=obs, observation_mode=self.observation_mode, action_format=self.action_format)
            obs = self._view.render(obs, admissible, 0, self._turn_limit)
        self._transcript = [("system", self.system_prompt), ("observation", obs)]
        self._last_obs = obs
        return obs, info

    def step(self, action: str):
        if self._done:
            return self._step_after_end()
        original_length = len(action) if isinstance(action, (str, bytes)) else 0
        action = sanitize(action, self.max_action_chars)
        self._turn += 1
        info: dict[str, Any] = {**self._task_info}
        parsed, choice_error = self._parse_turn(action, original_length, info)
        parsed, tr, truncated_by_error = self._run_turn(parsed, choice_error, info)
        if self.mark_played and tr.action_valid and parsed.error is None and parsed.text:
            self._view.ran(parsed.text)
        step_reward = self._tracker.add(tr.terms)
        terminated = tr.terminated
        truncated = truncated_by_error or (not terminated and self._turn >= self._turn_limit)
        admissible = self._turn_info(info, tr, parsed, done=terminated or truncated)
        if self.reward_mode == "binary":
            reward = 1.0 if (terminated and tr.success) else 0.0
        else:
            reward = float(step_reward)
        observation = self._shown(tr.observation, action, parsed, admissible, info, done=terminated or truncated)
        return observation, reward, bool(terminated), bool(truncated), info

    def _step_after_end(self):
        """A step once the episode is over: nothing runs; the last observation again, no reward."""
        info = {**self._task_info, "reward_terms": {}, "action_valid": False,
                "parse_error": "the episode is over; call reset()", "success": False,
                "episode_terms": self._tracker.episode_terms(), "metrics": {}}
        return self._last_obs, 0.0, True, False, info

    def _parse_turn(self, action: str, original_length: int, info: dict[str, Any]) -> tuple[ParsedAction, str | None]:
        """The reply parsed (or why it is not an action), a choice number turned into the admissible
        action it names (with the reason when it names none) and a played mark dropped."""
        if original_length > self.max_action_chars:
            parsed = ParsedAction(None, error=f"output is {original_length} characters long; "
                                              f"the limit is {self.max_action_chars}")
        else:
            try:
                parsed = self._parse(action)
            except RecursionError:
                parsed = ParsedAction(None, error=_TOO_DEEP)
        choice_error = None
        if parsed.error is None and self._view.choice and parsed.kind == "action":
            reply = parsed.text
            parsed.text, choice_error = resolve_choice(reply, self._choices)
            if parsed.text != reply:
                info["chosen_action"] = parsed.text  # the admissible action the number named
        if parsed.error is None and self.mark_played and parsed.kind == "action":
            # a command copied from the list with its mark is that command
            if parsed.text.rstrip().lower().endswith(PLAYED_MARK):
                parsed.text = parsed.text.rstrip()[:-len(PLAYED_MARK)]
        return parsed, choice_error

    def _run_turn(self, parsed: ParsedAction, choice_error: str | None,
                  info: dict[str, Any]) -> tuple[ParsedAction, Transition, bool]:
        """What the turn did: the engine's transition, or an invalid turn's; and whether an engine
        fault ends the episode (truncated). ``parsed`` comes back as it ends up."""
        if parsed.error is not None:
            hint = f"\n{self.format_hint}" if self.format_hint else ""
            if hint and self._view.choice:
                hint += " A number names one of the admissible actions."
            return parsed, Transition(f"Invalid output: {parsed.error}.{hint}", self._format_error_terms(), False), False
        if choice_error is not None:
            # One action, parsed (format 1), that names none of the listed actions (valid 0).
            terms = {**self._format_error_terms(), "format": 1.0, "valid": 0.0}
            return parsed, Transition(f"Invalid choice: {choice_error}.", terms, False), False
        try:
            return parsed, self._execute(parsed), False
        except EngineError as e:
            info["error"] = str(e)
            return parsed, Transition(f"The environment failed and this episode ends: {e}", {"format": 1.0}, False), True
        except RecursionError:
            # Parsers and tools bound their own depth; this is the backstop that keeps a
            # pathological action an invalid turn rather than an exception out of step().
            parsed = ParsedAction(None, error=_TOO_DEEP)
            return parsed, Transition(f"Invalid output: {_TOO_DEEP}.", self._format_error_terms(), False), False

    def _turn_info(self, info: dict[str, Any], tr: Transition, parsed: ParsedAction, done: bool) -> list[str] | None:
        """The turn's ``info`` keys; returns the admissible actions of the next turn (None once the
        episode is over, or when the env lists none)."""
        info.update(tr.extra_info)
        info["reward_terms"] = dict(tr.terms)
        info["action_valid"] = bool(tr.action_valid and parsed.error is None)
        info["parse_error"] = parsed.error
        info["turn"] = self._turn
        if done:
            self._end_episode(info, bool(tr.success))
            return None
        return self._next_turn_info(info)

    def _next_turn_info(self, info: dict[str, Any]) -> list[str] | None:
        """What the next turn may play, into ``info`` (the admissible actions, the replies a
        constrained policy may give, the expert's action); returns the admissible actions."""
        admissible = self._admissible_actions()
        if admissible is not None:
            info["admissible_actions"] = admissible
        if self.constrained_choice:
            info["allowed_replies"] = choice_replies(admissible)
        if self.scored_actions:
            info["scored_replies"] = list(admissible) if admissible else None
        if self.expert:
            info["expert_action"] = self._expert_action()
        return admissible

    def _end_episode(self, info: dict[str, Any], success: bool) -> None:
        """The episode's closing ``info`` keys: success, its PRS terms and return, its metrics."""
        self._done = True
        info["success"] = success
        info["episode_terms"] = self._tracker.episode_terms()
        info["episode_return"] = self._tracker.episode_return
        info["reward_components"] = reward_components(self.prs_spec, info["episode_terms"], self._tracker.stage)
        info["metrics"] = {"success": float(success), "prs_return": self._tracker.episode_return,
                           "turns": float(self._turn), **self._episode_metrics(success)}

    def _shown(self, observation: str, action: str, parsed: ParsedAction, admissible: list[str] | None,
               info: dict[str, Any], done: bool) -> str:
        """What the agent sees after the turn (rendered by the observation view when one is on),
        recorded in the transcript."""
        if self._view.active:
            self._choices = admissible
            self._view.record(history_entry(parsed.text if parsed.error is None else None, action), observation)
            info["raw_observation"] = observation
            observation = self._view.render(observation, admissible, self._turn, self._turn_limit, done=done)
        self._transcript += [("action", action), ("observation", observation)]
        self._last_obs = observation
        return observation

    def render(self) -> str | None:
        if self.render_mode != "ansi":
            return None
        blocks = []
        for role, text in self._transcript:
            blocks.append(f"[{role}]\n{text}")
        return "\n\n".join(blocks) + "\n"

    @property
    def transcript(self) -> list[tuple[str, str]]:
        """(role, text) pairs of the episode so far: system, observation, action, observation..."""
        return list(self._transcript)
