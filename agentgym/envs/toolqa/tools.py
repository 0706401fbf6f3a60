"""ToolQA's tools: their OpenAI function schemas, what they do, and the PRS ``tool`` term of a call.

``tool`` term of one call (SPEC §4.1): 1.0 if what the call returned contains a gold answer (or,
for long-form questions, a key fact), 0.5 if it ran but returned none, 0.0 if it failed or repeated
an earlier call of the episode.

``search_latency``: each call that reads the knowledge base (``search``, and ``open``: fetching a
passage from a remote index is a round trip too) first waits that many seconds in ``time.sleep``,
which, like a socket read, releases the GIL; ``calculate`` runs locally and never waits. It stands
in for a web search API's network round trip, so asynchronous rollouts can be measured against one.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from agentgym.envs.parsing import echo
from agentgym.envs.toolqa.calculator import CalculatorError, calculate, format_number
from agentgym.envs.toolqa.retriever import BM25Retriever, Doc
from agentgym.rewards.qa_metrics import normalize_answer

MAX_TOP_K = 10


def _function(name: str, description: str, properties: dict, required: list[str]) -> dict:
    return {"type": "function", "function": {
        "name": name, "description": description,
        "parameters": {"type": "object", "properties": properties, "required": required,
                       "additionalProperties": False}}}


SEARCH = _function("search", "Search the knowledge base; returns the best-matching passages with their ids.",
                   {"query": {"type": "string", "description": "keywords or a question"},
                    "top_k": {"type": "integer", "minimum": 1, "maximum": MAX_TOP_K,
                              "description": "how many passages to return (default 3)"}},
                   ["query"])
OPEN = _function("open", "Open one passage by its id and read all of it.",
                 {"doc_id": {"type": "string", "description": "a passage id from search results"}}, ["doc_id"])
CALCULATE = _function("calculate", "Evaluate an arithmetic expression (+ - * / ^ % parentheses, abs, round, "
                      "min, max, sqrt).", {"expression": {"type": "string", "description": "e.g. 1999 - 1850"}},
                      ["expression"])
ALL_TOOLS = [SEARCH, OPEN, CALCULATE]
REMOTE_TOOLS = ("search", "open")
"""The tools that read the knowledge base: the ones ``search_latency`` delays."""


@dataclass
class ToolResult:
    text: str
    term: float
    ok: bool
    extra: dict = field(default_factory=dict)


def _contains_any(text: str, targets: Sequence[str]) -> bool:
    padded = f" {normalize_answer(text)} "
    return any(t and f" {t} " in padded for t in targets)


class ToolBox:
    """Runs tool calls for one episode, remembering earlier calls to spot repeats."""

    def __init__(self, retriever: BM25Retriever, default_top_k: int = 3, max_passage_chars: int = 1500,
                 search_latency: float = 0.0):
        self.retriever = retriever
        self.search_latency = search_latency
        self.default_top_k = default_top_k
        self.max_passage_chars = max_passage_chars
        self._targets: list[str] = []
        self._seen: set[tuple] = set()

    def reset(self, gold: Sequence[str]) -> None:
        """Start an episode whose useful findings are the strings in ``gold``."""
        self._targets = [normalize_answer(g) for g in gold]
        self._seen.clear()

    def _clip(self, text: str) -> str:
        return text if len(text) <= self.max_passage_chars else text[: self.max_passage_chars] + " ..."

    def _format_doc(self, rank: int | None, doc: Doc) -> str:
        head = f"[{rank}] " if rank is not None else ""
        title = f" {doc.title}" if doc.title else ""
        return f"{head}({doc.id}){title}\n{self._clip(doc.text)}"

    def run(self, name: str, arguments: dict) -> ToolResult:
        key = (name, normalize_answer(str(sorted(arguments.items()))))
        repeated = key in self._seen
        self._seen.add(key)
        if self.search_latency > 0 and name in REMOTE_TOOLS:
            # a remote index answers repeats and unknown ids too, so every such call waits
            time.sleep(self.search_latency)
        result = getattr(self, f"_{name}")(**arguments)
        if repeated and result.ok:
            result.term = 0.0
            result.text += "\n(You already made this exact call in this episode.)"
        result.extra["repeated"] = repeated
        return result

    def _search(self, query: str, top_k: int | None = None) -> ToolResult:
        hits = self.retriever.search(query, top_k or self.default_top_k)
        ids = [h.doc.id for h in hits]
        if not hits:
            return ToolResult(f"No passages match {echo(query)!r}.", 0.5, True, {"retrieved": ids})
        text = "\n\n".join(self._format_doc(i + 1, h.doc) for i, h in enumerate(hits))
        found = any(_contains_any(h.doc.contents, self._targets) for h in hits)
        return ToolResult(text, 1.0 if found else 0.5, True, {"retrieved": ids})

    def _open(self, doc_id: str) -> ToolResult:
        doc = self.retriever.get(doc_id.strip())
        if doc is None:
            return ToolResult(f"No passage has id {echo(doc_id, 80)!r}. Use an id shown in search results.", 0.0,
                              False, {"retrieved": []})
        found = _contains_any(doc.contents, self._targets)
        return ToolResult(self._format_doc(None, doc), 1.0 if found else 0.5, True, {"retrieved": [doc.id]})

    def _calculate(self, expression: str) -> ToolResult:
        try:
            value = format_number(calculate(expression))
        except CalculatorError as e:
            return ToolResult(f"Calculation error: {echo(str(e))}", 0.0, False)
        found = normalize_answer(value) in self._targets
        return ToolResult(value, 1.0 if found else 0.5, True)
