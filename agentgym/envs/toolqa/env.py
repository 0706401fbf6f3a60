"""ToolQA-v0 and ToolQA-LongForm-v0: question answering with a search tool."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from agentgym.envs import arguments
from agentgym.envs.base import AgentEnv, Transition
from agentgym.envs.parsing import ParsedAction, echo, parse_tool_action
from agentgym.envs.task_refs import TaskRef
from agentgym.envs.toolqa.data import ToolQADataset, builtin_dataset, load_dataset
from agentgym.envs.toolqa.questions import PlanStep, Question
from agentgym.envs.toolqa.tools import ALL_TOOLS, MAX_TOP_K, SEARCH, ToolBox
from agentgym.rewards.bleu import length_aware_bleu
from agentgym.rewards.judges import make_judge
from agentgym.rewards.prs import TOOLQA_PRS
from agentgym.rewards.qa_metrics import clip_for_scoring, exact_match, token_f1

SHORT_KINDS = ("single_hop", "bridge", "comparison", "open_domain")


class ToolQAEnv(AgentEnv):
    """Answer questions about a knowledge base by searching it.

    ## Description
    Each episode is one question. The agent calls tools (``search`` over a BM25 index, ``open`` a
    passage by id, ``calculate`` arithmetic) and ends the episode with an answer. The built-in
    knowledge base is a generated fictional world (600 entities, 2,030 passages), so answers must be
    found, not remembered; ``dataset=`` and ``corpus=`` load real Search-R1 / FlashRAG data instead.

    ## Observation
    A string: the question at reset, then each tool's result wrapped in ``<tool_response>`` (or
    ``<information>`` with ``action_format="tags"``), or a message saying why an output was invalid.

    ## Action
    A string, the model's raw output: ``<tool_call>{"name": "search", "arguments": {"query": "..."}}
    </tool_call>`` or ``<answer>...</answer>``, optionally after one ``<think>...</think>``. With
    ``action_format="tags"``: ``<search>query</search>`` or ``<answer>...</answer>`` (Search-R1).
    Any string is accepted; one that does not parse costs the format term and a turn.

    ## Rewards
    Progressive reward shaping (``info["reward_terms"]``): ``format`` (the turn parsed), ``tool``
    (1 if the call surfaced a gold answer, 0.5 if it ran without, 0 if it failed or repeated),
    ``answer`` (length-aware BLEU against the gold aliases, or the judge's score for long-form).
    Episode return ``0.1*format + [format == 1] * (0.2*tool + 0.7*answer)``, paid out step by step
    as the change in that return. ``reward_mode="binary"`` pays 1 for an exact-match answer instead.

    ## Episode End
    Terminated when the agent answers; truncated after ``max_turns`` turns.

    ## Arguments
    - ``split``: ``train``, ``valid`` or ``test`` (default ``train``).
    - ``answer_form``: ``short`` (ToolQA-v0) or ``long`` (ToolQA-LongForm-v0).
    - ``question_kinds``: keep only these kinds (``single_hop``, ``bridge``, ``comparison``).
    - ``dataset``, ``corpus``: real QA file(s) and corpus JSONL instead of the built-in world
      (both, or neither).
    - ``action_format``: ``json`` (default) or ``tags``.
    - ``top_k``: default passages per search, 1 to 10 (3). ``max_turns``: turn limit (10).
    - ``judge``, ``judge_kwargs``: long-form judge, ``reference`` (default), ``openai`` or ``hf``.
    - ``success_threshold``: judge score counted as success for long-form (0.75).
    - ``search_latency``: seconds (a finite number >= 0, default 0.0) each ``search`` and ``open``
      call waits before it returns, in ``time.sleep``, as a web search API's round trip would
      (``open`` counts: fetching a passage from a remote index is a round trip too). ``calculate``,
      answers and invalid outputs never wait, and nothing but the time changes.
    - plus the shared ones: ``reward_mode``, ``prs_weights``, ``tau_fmt``, ``prs_stage``, ``expert``,
      ``render_mode``, ``system_prompt`` (replaces the built-in system prompt, e.g. a short one for
      a tiny model; it should still say how to act).
    - ``tasks``: a task set folder (``agentgym export-tasks``): play exactly its tasks, its keyword
      arguments under these (:mod:`agentgym.envs.task_sets`, docs/envs/arguments.md).

    ## Version History
    - v0: initial release. ``search_latency=`` added (default 0.0: unchanged).

    >>> import gymnasium as gym, agentgym
    >>> env = gym.make("ToolQA-v0", expert=True)
    >>> obs, info = env.reset(seed=0)
    >>> obs.startswith("Question:")
    True
    """

    prs_base = TOOLQA_PRS

    def __init__(self, split: str = "train", answer_form: str = "short", question_kinds=None,
                 dataset: str | Mapping[str, str] | None = None, corpus: str | None = None,
                 action_format: str = "json", top_k: int = 3, max_turns: int = 10,
                 judge: Any = "reference", judge_kwargs: Mapping[str, Any] | None = None,
                 success_threshold: float = 0.75, search_latency: float = 0.0, **kwargs):
        super().__init__(max_turns=max_turns, **kwargs)
        top_k = arguments.int_in_range("top_k", top_k, 1, MAX_TOP_K)
        self.search_latency = arguments.seconds("search_latency", search_latency)
        if corpus is not None and dataset is None:
            raise ValueError("corpus= needs dataset= too: the QA file(s) asked about that corpus "
                             "(without dataset= the env plays its built-in knowledge base)")
        if answer_form not in ("short", "long"):
            raise ValueError(f"answer_form must be 'short' or 'long', got {answer_form!r}")
        if action_format not in ("json", "tags"):
            raise ValueError(f"action_format must be 'json' or 'tags', got {action_format!r}")
        if dataset is not None and answer_form == "long":
            raise ValueError("real datasets are short-form; long-form questions come from the built-in world")
        self.data: ToolQADataset = builtin_dataset() if dataset is None else load_dataset(dataset, corpus)
        self.split = split
        self.answer_form = answer_form
        self.action_format = action_format
        kinds = ("long_form",) if answer_form == "long" else tuple(question_kinds or SHORT_KINDS)
        unknown = set(kinds) - set(SHORT_KINDS) - {"long_form"}
        if unknown:
            raise ValueError(f"unknown question kinds {sorted(unknown)}; known: {list(SHORT_KINDS)}")
        self.question_kinds = kinds
        self._pools: dict[str, list[Question]] = {}
        self.data.questions(split)  # fail now on an unknown split
        self.judge = make_judge(judge, **dict(judge_kwargs or {})) if answer_form == "long" else None
        self.success_threshold = success_threshold
        self.toolbox = ToolBox(self.data.retriever, default_top_k=top_k, search_latency=self.search_latency)
        self.format_hint = ("Reply with <search>query</search> or <answer>...</answer>." if action_format == "tags"
                            else 'Reply with <tool_call>{"name": ..., "arguments": {...}}</tool_call> or '
                                 "<answer>...</answer>.")
        self._question: Question | None = None
        self._answer: str | None = None
        self._plan_pos = 0

    # ----- prompts -------------------------------------------------------------------------
    @property
    def tools(self) -> list[dict]:
        return [SEARCH] if self.action_format == "tags" else ALL_TOOLS

    @property
    def default_system_prompt(self) -> str:
        answer_rule = ("Answer in a short paragraph that states every fact asked for." if self.answer_form == "long"
                       else "Answer with just the answer: a name, a number or a short phrase.")
        if self.action_format == "tags":
            how = ("To search, write <search>your query</search>; results come back inside "
                   "<information>...</information>. When you know the answer, write <answer>...</answer>.")
        else:
            schemas = "\n".join(json.dumps(t["function"]) for t in self.tools)
            how = ("You can call these tools:\n" + schemas + "\n\nTo call one, write exactly one "
                   '<tool_call>{"name": <tool name>, "arguments": {...}}</tool_call>; its result comes back '
                   "inside <tool_response>...</tool_response>. When you know the answer, write "
                   "<answer>...</answer>.")
        return ("You answer questions about a knowledge base you cannot see: search it. " + how +
                " You may think first inside <think>...</think>. Send exactly one tool call or one answer "
                f"per turn. {answer_rule}")

    # ----- dynamics -------------------------------------------------------------------------
    def _pool(self, split: str) -> list[Question]:
        if split not in self._pools:
            pool = [q for q in self.data.questions(split) if q.kind in self.question_kinds]
            if not pool:
                raise ValueError(f"no {self.question_kinds} questions in split {split!r}")
            self._pools[split] = pool
        return self._pools[split]

    def task_refs(self, split: str | None = None) -> list[TaskRef]:
        """Every question of ``split`` of the env's kinds; the task type is the question kind, or for
        real data the data set it comes from (``data_source``), so a board scores each on its own."""
        split = split or self.split
        return [TaskRef(q.id, q.source or q.kind, {"task_id": q.id, "split": split})
                for q in self.data.questions(split) if q.kind in self.question_kinds]

    def _split_task_ids(self, split: str | None) -> list[str]:
        return [q.id for q in self._pool(split or self.split)]  # refuses a split without such questions

    def _start(self, options: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        split = options.get("split", self.split)
        pool = self._pool(split)
        if "task_id" in options:
            matches = [q for q in self.data.questions(split) if q.id == options["task_id"]]
            if not matches:
                raise ValueError(f"no question with task_id {options['task_id']!r} in split {split!r}")
            question = matches[0]
        else:
            question = pool[int(self.np_random.integers(len(pool)))]
        self._question, self._answer, self._plan_pos = question, None, 0
        self.toolbox.reset(question.key_facts if question.long_form else question.answers)
        obs = f"Question: {question.question}"
        return obs, {"task_id": question.id, "instruction": question.question, "split": split,
                     "group_key": f"toolqa/{self.data.name}/{split}/{question.id}",
                     "question_kind": question.kind}

    def _parse(self, action: str) -> ParsedAction:
        return parse_tool_action(action, self.tools, self.action_format)

    def _wrap(self, text: str) -> str:
        tag = "information" if self.action_format == "tags" else "tool_response"
        return f"<{tag}>\n{text}\n</{tag}>"

    def _execute(self, parsed: ParsedAction) -> Transition:
        self._advance_expert(parsed)
        if parsed.kind == "answer":
            return self._finish(parsed.text)
        result = self.toolbox.run(parsed.name, parsed.arguments)
        return Transition(self._wrap(result.text), {"format": 1.0, "tool": result.term}, result.ok,
                          extra_info={"tool": parsed.name, **result.extra})

    def _finish(self, answer: str) -> Transition:
        q = self._question
        # Every metric and the judge see the answer cut to a bounded length (qa_metrics.MAX_SCORED_CHARS).
        answer = clip_for_scoring(answer, q.answers)
        self._answer = answer
        if q.long_form:
            verdict = self.judge.score(q.question, answer, q.answers[0], q.key_facts)
            score, success = verdict.score, verdict.score >= self.success_threshold
            extra = {"judge_rationale": verdict.rationale}
        else:
            score, success, extra = length_aware_bleu(answer, q.answers), exact_match(answer, q.answers) == 1.0, {}
        return Transition(f"Your answer: {echo(answer)}", {"format": 1.0, "answer": score}, True, terminated=True,
                          success=success, extra_info=extra)

    def _episode_metrics(self, success: bool) -> dict[str, float]:
        q, answer = self._question, self._answer or ""
        if q.long_form:
            return {"judge_score": self._tracker.episode_terms()["answer"], "f1": token_f1(answer, q.answers)}
        return {"em": exact_match(answer, q.answers), "f1": token_f1(answer, q.answers),
                "bleu": length_aware_bleu(answer, q.answers) if answer else 0.0}

    # ----- expert ---------------------------------------------------------------------------
    def _plan(self) -> list[PlanStep]:
        plan = self._question.plan
        if self.action_format == "tags":
            plan = [PlanStep("search", self.data.retriever.get(s.arg).title) if s.tool == "open" else s
                    for s in plan if s.tool != "calculate"]
        return plan

    def _render_step(self, step: PlanStep) -> str:
        if step.tool == "answer":
            return f"<answer>{step.arg}</answer>"
        if self.action_format == "tags":
            return f"<search>{step.arg}</search>"
        key = {"search": "query", "open": "doc_id", "calculate": "expression"}[step.tool]
        return f'<tool_call>{json.dumps({"name": step.tool, "arguments": {key: step.arg}})}</tool_call>'

    def _expert_action(self) -> str:
        plan = self._plan()
        return self._render_step(plan[min(self._plan_pos, len(plan) - 1)])

    def _advance_expert(self, parsed: ParsedAction) -> None:
        """Move along the oracle plan when the agent did what it suggested."""
        plan = self._plan()
        if self._plan_pos < len(plan):
            suggested = parse_tool_action(self._render_step(plan[self._plan_pos]), self.tools, self.action_format)
            if (parsed.kind, parsed.name, parsed.arguments) == (suggested.kind, suggested.name, suggested.arguments):
                self._plan_pos += 1
