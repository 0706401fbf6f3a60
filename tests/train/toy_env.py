"""A two-step lookup env used by the trainer tests: call ``lookup`` with the key, then answer.

Small and fast, with a real tool turn, so multi-turn masks can be checked without ToolQA.
"""

from __future__ import annotations

from agentgym.envs.base import AgentEnv, Transition
from agentgym.envs.parsing import ParsedAction, parse_tool_action
from agentgym.rewards.prs import TOOLQA_PRS

WORDS = {"red": "apple", "blue": "sky", "green": "grass", "white": "snow"}
TOOLS = [{"type": "function", "function": {
    "name": "lookup", "description": "look a key up",
    "parameters": {"type": "object", "properties": {"key": {"type": "string"}}, "required": ["key"]}}}]


class ToyLookupEnv(AgentEnv):
    prs_base = TOOLQA_PRS

    def __init__(self, max_turns: int = 3, **kwargs):
        super().__init__(max_turns=max_turns, **kwargs)
        self.key = "red"

    @property
    def system_prompt(self) -> str:
        return ('Call <tool_call>{"name": "lookup", "arguments": {"key": KEY}}</tool_call>, '
                "then reply <answer>VALUE</answer>.")

    @property
    def tools(self):
        return TOOLS

    def _start(self, options):
        keys = sorted(WORDS)
        self.key = keys[int(self.np_random.integers(len(keys)))]
        return f"Key: {self.key}", {"task_id": self.key, "instruction": f"find {self.key}", "group_key": self.key}

    def _parse(self, action: str) -> ParsedAction:
        return parse_tool_action(action, TOOLS)

    def _execute(self, parsed: ParsedAction) -> Transition:
        if parsed.kind == "tool_call":
            value = WORDS.get(parsed.arguments["key"])
            if value is None:
                return Transition("lookup result: nothing", {"format": 1.0, "tool": 0.5})
            return Transition(f"lookup result: {value}", {"format": 1.0, "tool": 1.0})
        good = parsed.text == WORDS[self.key]
        return Transition("done", {"format": 1.0, "answer": float(good)}, terminated=True, success=good)

    def _expert_action(self):
        if self._turn == 0:
            return '<tool_call>{"name": "lookup", "arguments": {"key": "%s"}}</tool_call>' % self.key  # noqa: UP031 (JSON's braces)
        return f"<answer>{WORDS[self.key]}</answer>"
