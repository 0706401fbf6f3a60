"""A tiny real AgentEnv for the vector tests: count up to a target drawn from the reset seed.

``inc`` adds one; the episode terminates when the count reaches the target (2..5, so episodes in a
batch end at different steps). The observation carries a random word drawn from the seed, so two
envs agree on observations only if they got the same seed. Fault hooks for the tests: ``!raise``
raises inside the env, ``!hang`` sleeps far past any step timeout, ``!slow`` sleeps 0.3 s; a
reset with ``task_id="hang"`` sleeps far past any reset timeout; ``build_delay`` seconds pass before
the env is built, as while an engine loads; ``engine_process=True`` starts a child process the way
an engine-backed env does.
"""

from __future__ import annotations

import subprocess
import time

from agentgym.envs.base import AgentEnv, Transition
from agentgym.envs.parsing import ParsedAction
from agentgym.rewards.prs import EMBODIED_PRS

WORDS = ["apple", "brick", "cloud", "delta", "ember", "fjord", "grove", "haze", "iris", "jade"]


class CountingEnv(AgentEnv):
    prs_base = EMBODIED_PRS
    format_hint = "Answer with inc."

    def __init__(self, max_turns: int = 8, step_delay: float = 0.0, engine_process: bool = False,
                 build_delay: float = 0.0, **kwargs):
        time.sleep(build_delay)
        super().__init__(max_turns=max_turns, **kwargs)
        self.step_delay = step_delay
        # Stands in for an engine process (a ScienceWorld JVM): a child the env starts and owns.
        self.engine = subprocess.Popen(["sleep", "3600"]) if engine_process else None
        self.target = 0
        self.count = 0
        self.word = ""

    @property
    def system_prompt(self) -> str:
        return "Count up to the target by sending inc."

    def _start(self, options):
        if options.get("task_id") == "hang":
            time.sleep(3600)
        if "task_id" in options:
            self.target = int(options["task_id"].split("-")[1])
        else:
            self.target = int(self.np_random.integers(2, 6))
        self.word = WORDS[int(self.np_random.integers(len(WORDS)))]
        self.count = 0
        task_id = f"count-{self.target}"
        obs = f"Count to {self.target}. Word: {self.word}. Count: 0. Stage: {self.prs_stage}."
        return obs, {"task_id": task_id, "instruction": f"count to {self.target}", "group_key": task_id}

    def _parse(self, action):
        text = action.strip()
        if text in ("inc", "noop", "!raise", "!hang", "!slow"):
            return ParsedAction("action", text=text)
        return ParsedAction(None, error=f"unknown action {text[:20]!r}")

    def _execute(self, parsed):
        if parsed.text == "!raise":
            raise RuntimeError("engine exploded")
        if parsed.text == "!hang":
            time.sleep(3600)
        if parsed.text == "!slow":
            time.sleep(0.3)
        if self.step_delay:
            time.sleep(self.step_delay)
        if parsed.text == "inc":
            self.count += 1
        done = self.count >= self.target
        obs = f"Count: {self.count}. Word: {self.word}."
        return Transition(obs, {"format": 1.0, "valid": 1.0, "progress": self.count / self.target,
                                "success": float(done)}, True, terminated=done, success=done)

    def close(self):
        if self.engine is not None:
            self.engine.kill()
            self.engine.wait()
            self.engine = None

    def _admissible_actions(self):
        return ["inc", "noop"]

    def _expert_action(self):
        return "inc"
