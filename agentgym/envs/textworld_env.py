"""``TextWorld-v0``: any TextWorld game (``.z8``/``.ulx``, e.g. made by ``tw-make``) as an agentgym env."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from typing import Any

from gymnasium.error import DependencyNotInstalled

from agentgym.envs.base import AgentEnv, EngineError, Transition
from agentgym.envs.grammar_expressions import GrammarExpressionError
from agentgym.envs.interpreter_commands import screen_command
from agentgym.envs.parsing import ParsedAction, parse_embodied_action
from agentgym.rewards.prs import EMBODIED_PRS

EXTRA = "agentgym[alfworld]"
# The interpreter's prompt and status line that end every TextWorld feedback.
_PROMPT_TAIL = re.compile(r"\n>[^\n]*\s*$")
_BANNER_LINE = re.compile(r"^[\s_|\\/$<>()\-]*$")

SYSTEM_PROMPT = """You are playing a text adventure game. Each turn, read the observation and reply
with exactly one command, either alone on one line or as <action>command</action> (an optional
<think>...</think> may come first). Typical commands: look, inventory, go north/south/east/west,
examine X, take X, take X from Y, drop X, put X on Y, insert X into Y, open X, close X,
unlock X with Y, eat X. Reach the objective stated at the start to win."""


def clean_feedback(text: str, first: bool = False) -> str:
    """The game's text without the interpreter's prompt/status tail (and at reset, the ASCII banner)."""
    text = _PROMPT_TAIL.sub("", text)
    lines = text.strip("\n").split("\n")
    if first:
        while lines and _BANNER_LINE.match(lines[0]):
            lines.pop(0)
    return "\n".join(lines).strip() or text.strip()


class TextWorldEnv(AgentEnv):
    """A TextWorld game (Côté et al., 2018), played on TextWorld's own engine.

    ## Description
    Any compiled TextWorld game: ``tw-make`` output (``.z8`` or ``.ulx`` with its ``.json``
    beside it, which gives admissible commands, the walkthrough and the score) or another
    Inform 7 game TextWorld can run. With several games, each reset picks one with
    ``self.np_random``.

    ## Observation
    The game's text, without the interpreter's prompt and status line; at reset the ASCII-art
    banner is dropped too. Output that is not one command gets "Invalid output: ..." instead.
    ``observation="history+admissible"`` adds the objective, the last ``history`` steps and the
    admissible commands around it.

    ## Action
    Any string. One command, bare on one line or in ``<action>...</action>``, optionally after a
    ``<think>`` block. Characters outside printable ASCII, and backslashes (frotz reads them as
    escapes), are replaced by spaces before the command reaches the interpreter (a NUL byte or
    some escapes crash it), and a final full stop is dropped. Only one command reaches the
    interpreter per turn: a chain (``look. take key``, ``look then take key``) and any command of a
    chain that is a meta-command (``quit``, ``restart``, ``save``, ``restore``, ``script``,
    ``undo``, ``superbrief``, TextWorld's ``print_state``...), matched by the first 9 Z-characters
    as the interpreter matches words (``transcriptx`` is ``transcript``), are answered by the env,
    not run, so no action restarts the game, changes its mode or touches files
    (see :mod:`agentgym.envs.interpreter_commands`).

    ## Rewards
    PRS terms per step (``info["reward_terms"]``): ``format`` (one command parsed), ``valid``
    (the command was among the game's admissible commands; 1 when the game gives none),
    ``progress`` (score / max_score) and ``success`` (the game is won).
    ``reward_mode="binary"`` pays 1 on success instead.

    ## Episode End
    Terminated when the game is won or lost; truncated after ``max_turns`` turns or when the
    engine fails (``info["error"]``).

    ## Arguments
    - ``game``: a path or a list of paths to ``.z8``/``.ulx`` games (required).
    - ``max_turns`` (50), ``expert`` (``info["expert_action"]``: the next step of TextWorld's
      walkthrough policy), ``reward_mode``, ``prs_weights``, ``tau_fmt``, ``prs_stage``,
      ``render_mode`` (``"ansi"``), ``system_prompt`` (replaces the built-in one): see ``AgentEnv``.
    - ``observation``, ``history``, ``action_format`` (``"choice"``: numbered admissible commands,
      replied by number or text): as on ALFWorld-v0 (docs/envs/alfworld.md).

    ``options={"task_id": ...}`` picks a game by index, path or file name.

    ## Version History
    - v0: initial version (textworld 1.7). ``observation=``, ``history=`` and ``action_format=``
      added (defaults unchanged).
    """

    prs_base = EMBODIED_PRS
    format_hint = "Reply with one command, e.g. <action>look</action>."
    lists_admissible_actions = True

    def __init__(self, game: str | Sequence[str] | None = None, max_turns: int = 50, expert: bool = False,
                 **kwargs: Any):
        try:
            import textworld
        except ImportError as e:
            raise DependencyNotInstalled(f"TextWorld-v0 needs textworld ({e}); `pip install {EXTRA}`.") from e
        super().__init__(max_turns=max_turns, expert=expert, **kwargs)
        if game is None:
            raise ValueError("TextWorld-v0 needs game=PATH (or a list of paths) to a .z8/.ulx game, e.g. from tw-make")
        paths = [game] if isinstance(game, (str, os.PathLike)) else list(game)
        if not paths:
            raise ValueError("TextWorld-v0: game is an empty list")
        self.games = [os.path.abspath(os.fspath(p)) for p in paths]
        for path in self.games:
            if not os.path.isfile(path):
                raise FileNotFoundError(f"TextWorld game not found: {path}")
        self._infos = textworld.EnvInfos(admissible_commands=True, won=True, lost=True, score=True,
                                         max_score=True, objective=True, policy_commands=self.expert)
        self._engine = None
        self._loaded: str | None = None
        self._state = None
        self._progress = 0.0

    @property
    def default_system_prompt(self) -> str:
        return SYSTEM_PROMPT

    def _pick(self, task_id) -> str:
        if task_id is None:
            return self.games[int(self.np_random.integers(len(self.games)))]
        if isinstance(task_id, int) and not isinstance(task_id, bool):
            if not 0 <= task_id < len(self.games):
                raise ValueError(f"task_id index {task_id} out of range for {len(self.games)} games")
            return self.games[task_id]
        for path in self.games:
            if task_id in (path, os.path.basename(path), os.path.splitext(os.path.basename(path))[0]):
                return path
        raise ValueError(f"unknown task_id {task_id!r}; games: {[os.path.basename(p) for p in self.games]}")

    def _start(self, options: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        import textworld

        path = self._pick(options.get("task_id"))
        try:
            if path != self._loaded or self._engine is None:
                self._close_engine()
                if path.endswith(".tw-pddl") and not re.search(r"\.z[1-8]", path):
                    # what textworld.start plays a PDDL game on, with its grammar checked
                    from agentgym.envs.alfworld.checked_pddl import CheckedPddlEnv

                    self._engine = CheckedPddlEnv(self._infos)
                    self._engine.load(path)
                else:
                    self._engine = textworld.start(path, self._infos)
                self._loaded = path
            self._state = self._engine.reset()
        except GrammarExpressionError:  # a game file that asks for code to run: its message names the file
            self._close_engine()
            raise
        except Exception as e:
            self._close_engine()
            raise RuntimeError(f"TextWorld failed to start {path}: {type(e).__name__}: {e}") from e
        self._progress = self._score_fraction()
        obs = clean_feedback(self._state.feedback, first=True)
        objective = self._state.get("objective") or obs
        name = os.path.splitext(os.path.basename(path))[0]
        return obs, {"task_id": name, "instruction": objective, "group_key": f"TextWorld-v0/{path}",
                     "game_file": path, "max_score": self._state.get("max_score")}

    def _score_fraction(self) -> float:
        max_score = self._state.get("max_score") or 0
        return min(max(float(self._state.get("score") or 0) / max_score, 0.0), 1.0) if max_score else 0.0

    def _parse(self, action: str) -> ParsedAction:
        return parse_embodied_action(action)

    def _execute(self, parsed: ParsedAction) -> Transition:
        command, refusal = screen_command(parsed.text)
        if refusal is not None:
            return Transition(refusal, {"format": 1.0, "valid": 0.0, "progress": self._progress, "success": 0.0},
                              action_valid=False)
        admissible = self._state.get("admissible_commands")
        valid = True if not admissible else command.lower() in admissible
        try:
            self._state, _, done = self._engine.step(command)
            won, lost = bool(self._state.get("won")), bool(self._state.get("lost"))
        except Exception as e:
            self._close_engine()
            raise EngineError(f"{type(e).__name__}: {e}") from e
        self._progress = 1.0 if won else self._score_fraction()
        return Transition(clean_feedback(self._state.feedback),
                          {"format": 1.0, "valid": float(valid), "progress": self._progress, "success": float(won)},
                          action_valid=valid, terminated=won or lost or bool(done), success=won)

    def _format_error_terms(self) -> dict[str, float]:
        return {"format": 0.0, "valid": 0.0, "progress": self._progress, "success": 0.0}

    def _admissible_actions(self) -> list[str] | None:
        if self._state is None or self._state.get("admissible_commands") is None:
            return None
        return list(self._state["admissible_commands"])

    def _expert_action(self) -> str | None:
        plan = self._state.get("policy_commands") if self._state is not None else None
        return plan[0] if plan else None

    def _episode_metrics(self, success: bool) -> dict[str, float]:
        return {"score": float(self._state.get("score") or 0), "progress": self._progress}

    def _close_engine(self) -> None:
        if self._engine is not None:
            try:
                self._engine.close()
            except Exception:  # an engine that already died cannot be closed twice
                pass
        self._engine, self._loaded = None, None

    def close(self) -> None:
        self._close_engine()
        super().close()
