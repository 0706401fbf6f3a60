"""What a policy sees each turn: the engine's text as it is, or with the task, the recent history
and the admissible actions around it (``observation="history+admissible"``), and the admissible
actions numbered for a reply by number (``action_format="choice"``).

With ``observation="history+admissible"`` every observation stands on its own, as the prompt of
verl-agent's ALFWorld setting does: a policy prompted with only the latest observation still sees
the task, what it did last and what it may do now. ``observation="history"`` is the same without
the list, for a policy that is handed the actions apart (``scored_actions=True`` scores each one
whole, so a list of hundreds need not be read in every prompt). Nothing here changes the game: the env steps the
same engine and scores the same PRS terms; only the text around the engine's answer differs.

>>> view = ObservationView("history+admissible", history=1, choice=True)
>>> view.start("find the key", "You are in a hall.")
>>> view.record("go north", "You are in a kitchen.")
>>> print(view.render("You are in a kitchen.", ["go south", "take key"], turn=1, max_turns=10))
Task: find the key
<BLANKLINE>
Your last step:
[step 1] You are in a hall.
> go north
<BLANKLINE>
Now (step 2 of 10):
You are in a kitchen.
<BLANKLINE>
Admissible actions:
1. go south
2. take key
"""

from __future__ import annotations

from collections.abc import Sequence

from agentgym.envs.parsing import lists_numbers, preview

OBSERVATION_MODES = ("raw", "history", "history+admissible")
HISTORY_MODES = ("history", "history+admissible")
"""The modes whose observations state the task and the last steps themselves."""
ACTION_FORMATS = ("text", "choice")
DEFAULT_HISTORY = 2
"""Past steps an observation shows by default: the step that led here and the one before it,
enough to see what was just opened, taken or tried (and to notice going back and forth), while an
ALFWorld observation stays about 1,000 characters at most (mean 717, max 1,026 over ten expert
games, against 98 and 351 raw), which a small model's prompt can hold."""

CHOICE_NOTE = ("The observation numbers the admissible actions: you may reply with the number of one "
               "(e.g. <action>3</action>) or with its text.")
HISTORY_NOTE = ("Each observation restates the task, shows your last steps (the observation you acted "
                "on, then > your action) and lists the admissible actions.")
HISTORY_ONLY_NOTE = ("Each observation restates the task and shows your last steps (the observation you "
                     "acted on, then > your action).")


PLAYED_MARK = " (done)"
"""What ``mark_played=True`` appends to an admissible action already played this episode."""


def check_options(observation: str, history: int, action_format: str, mark_played: bool = False) -> None:
    """Raise a precise ValueError for an observation/action option the envs do not offer."""
    if not isinstance(mark_played, bool):
        raise ValueError(f"mark_played must be True or False, got {mark_played!r}")
    if observation not in OBSERVATION_MODES:
        raise ValueError(f"observation must be one of {OBSERVATION_MODES}, got {observation!r}")
    if action_format not in ACTION_FORMATS:
        raise ValueError(f"action_format must be one of {ACTION_FORMATS}, got {action_format!r}")
    if isinstance(history, bool) or not isinstance(history, int) or history < 0:
        raise ValueError(f"history must be an integer >= 0 (past steps shown), got {history!r}")


def normal_command(command: str) -> str:
    """A command as played-action marks compare it: lower case, single spaces, no final period."""
    return " ".join(command.lower().split()).rstrip(".")


def admissible_block(admissible: Sequence[str] | None, choice: bool, played: frozenset | set = frozenset()) -> str:
    """The "Admissible actions" section: numbered from 1 in choice format (the number of an action
    is its index in ``info["admissible_actions"]`` plus one), one per line otherwise. An action in
    ``played`` (as :func:`normal_command` writes it) ends with :data:`PLAYED_MARK`.

    >>> print(admissible_block(["go to desk 1", "go to bed 1"], True, {"go to bed 1"}))
    Admissible actions:
    1. go to desk 1
    2. go to bed 1 (done)
    """
    if admissible is None:
        return "Admissible actions: (this game lists none)"
    if not admissible:
        return "Admissible actions: (none)"
    marks = [PLAYED_MARK if played and normal_command(a) in played else "" for a in admissible]
    if choice and not lists_numbers(admissible):
        lines = [f"{k}. {a}{mark}" for k, (a, mark) in enumerate(zip(admissible, marks), 1)]
    else:
        lines = [f"- {a}{mark}" for a, mark in zip(admissible, marks)]
    return "Admissible actions:\n" + "\n".join(lines)


class ObservationView:
    """Turns an engine's text into the observation a policy gets, keeping the episode's history.

    ``start`` at reset, ``record`` after every turn (the action as the env understood it and the
    engine's answer), ``render`` for the observation to return.
    """

    def __init__(self, mode: str = "raw", history: int = DEFAULT_HISTORY, choice: bool = False,
                 mark_played: bool = False):
        check_options(mode, history, "choice" if choice else "text", mark_played)
        self.mode, self.history, self.choice, self.mark_played = mode, history, choice, mark_played
        self.played: set[str] = set()
        """Every command the engine ran this episode (:func:`normal_command`), for ``mark_played``."""
        self.task = ""
        self._seen: list[str] = []
        """Every engine observation so far, the reset one first."""
        self._acted: list[str] = []
        """What each turn sent, as the history shows it."""

    @property
    def active(self) -> bool:
        """Whether observations differ from the engine's text at all."""
        return self.mode != "raw" or self.choice or self.mark_played

    def start(self, task: str, observation: str) -> None:
        self.task = " ".join(task.split())
        self._seen, self._acted = [observation], []
        self.played = set()

    def ran(self, command: str) -> None:
        """Note a command the engine ran (an admissible one), which ``mark_played`` marks from now on."""
        self.played.add(normal_command(command))

    def record(self, action: str, observation: str) -> None:
        self._acted.append(action)
        self._seen.append(observation)
        # only the last `history` steps are ever shown (and the current observation)
        del self._acted[:max(0, len(self._acted) - self.history)]
        del self._seen[:max(0, len(self._seen) - self.history - 1)]

    def render(self, observation: str, admissible: Sequence[str] | None, turn: int, max_turns: int,
               done: bool = False) -> str:
        """The observation of turn ``turn`` (0 at reset), whose engine text is ``observation``.

        ``admissible`` is None when the engine lists no actions; ``done`` leaves the list out (the
        episode is over)."""
        played = self.played if self.mark_played else frozenset()
        if self.mode == "raw":
            if not (self.choice or self.mark_played) or done:
                return observation
            return f"{observation}\n\n{admissible_block(admissible, self.choice, played)}"
        parts = [f"Task: {self.task}"]
        past = list(zip(self._seen[:-1], self._acted))
        if past:
            first = turn - len(past) + 1
            head = "Your last step:" if len(past) == 1 else f"Your last {len(past)} steps:"
            lines = [head]
            for k, (seen, acted) in enumerate(past):
                lines += [f"[step {first + k}] {' '.join(seen.split())}", f"> {acted}"]
            parts.append("\n".join(lines))
        parts.append(f"Now (step {turn + 1} of {max_turns}):\n{observation}" if not done
                     else f"Now (the episode is over after {turn} steps):\n{observation}")
        if not done and self.mode == "history+admissible":
            parts.append(admissible_block(admissible, self.choice, played))
        return "\n\n".join(parts)


def history_entry(command: str | None, raw_action: str) -> str:
    """How the history shows a turn: the command the env ran (a choice number shown as the action
    it named), or a short excerpt of output that did not parse."""
    if command is not None:
        return command
    return f"(invalid output) {preview(raw_action, 60)!r}" if raw_action.strip() else "(empty output)"
