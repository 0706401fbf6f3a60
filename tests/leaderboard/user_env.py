"""A user's own env, as a Gymnasium user writes one: a small AgentEnv that lists its tasks and
registers itself when its module is imported, so ``--envs user_env:Parity-v0`` (gymnasium's
``module:EnvId`` spelling) puts it on the board and ``agentgym export-tasks`` writes its tasks.

A task is a number; the agent answers ``even`` or ``odd`` (bare, or in ``<action>...</action>``).
Splits ``train`` (1-12) and ``test`` (13-20); task types by size, ``small`` and ``large``.
"""

from __future__ import annotations

import gymnasium as gym

from agentgym.envs.base import AgentEnv, Transition
from agentgym.envs.parsing import ParsedAction, parse_embodied_action
from agentgym.envs.task_refs import TaskRef
from agentgym.rewards.prs import EMBODIED_PRS

ENV_ID = "Parity-v0"
SPLITS = {"train": range(1, 13), "test": range(13, 21)}


class ParityEnv(AgentEnv):
    prs_base = EMBODIED_PRS
    format_hint = "Answer with even or odd."
    lists_admissible_actions = True

    def __init__(self, split: str = "train", max_turns: int = 3, **kwargs):
        if split not in SPLITS:
            raise ValueError(f"split must be one of {sorted(SPLITS)}, got {split!r}")
        super().__init__(max_turns=max_turns, **kwargs)
        self.split = split
        self.number = 0

    @property
    def system_prompt(self) -> str:
        return "Say whether the number is even or odd."

    def task_refs(self, split=None):
        split = split or self.split
        if split not in SPLITS:
            return []
        return [TaskRef(f"n{n}", "small" if n % 10 < 5 else "large", {"task_id": f"n{n}", "split": split})
                for n in SPLITS[split]]

    def _start(self, options):
        split = options.get("split", self.split)
        numbers = list(SPLITS[split])
        if "task_id" in options:
            self.number = int(str(options["task_id"]).removeprefix("n"))
        else:
            self.number = numbers[int(self.np_random.integers(len(numbers)))]
        task_id = f"n{self.number}"
        return (f"Is {self.number} even or odd?",
                {"task_id": task_id, "instruction": f"say whether {self.number} is even or odd", "group_key": task_id})

    def _parse(self, action):
        parsed = parse_embodied_action(action)  # <action>even</action>, or the bare line
        if parsed.kind is None or parsed.text.lower() in ("even", "odd"):
            return parsed
        return ParsedAction(None, error="answer with even or odd")

    def _execute(self, parsed):
        right = parsed.text.lower() == ("even" if self.number % 2 == 0 else "odd")
        return Transition("Right." if right else "Wrong.", {"format": 1.0, "valid": 1.0, "progress": float(right),
                                                            "success": float(right)},
                          True, terminated=True, success=right)

    def _admissible_actions(self):
        return ["even", "odd"]

    def _expert_action(self):
        return "even" if self.number % 2 == 0 else "odd"


if ENV_ID not in gym.registry:
    gym.register(ENV_ID, entry_point=f"{__name__}:ParityEnv")
