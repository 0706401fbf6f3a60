"""An external LLM judge on any OpenAI-compatible ``/v1/chat/completions`` endpoint (SPEC §4.4).

Rule labels give few good steps (one per successful episode); a stronger model can label more, as
the paper does with a large hosted model. :class:`ExternalJudge` asks it the same question the
actor answers (:func:`~agentgym.train.methods.gcd.judge.judge_prompt`) and reads the reply with the same
strict parser, and can also write the "Common mistakes" summary.

Each call is bounded (:mod:`agentgym.http_request`): every attempt gets at most ``timeout`` seconds
in all (connecting, sending, a server that trickles its answer byte by byte), and the whole call,
backoff sleeps included, ends within ``timeout * (retries + 1)`` plus a little slack. An endpoint that stays down or keeps
failing raises :class:`JudgeUnavailable` (the same class the answer judges of
:mod:`agentgym.rewards.judges` raise); what to do then, log and skip say, is the trainer's call.

>>> judge = ExternalJudge("http://127.0.0.1:8000/v1/", "judge-model", timeout=5.0, retries=1)
>>> judge.url, judge.deadline_s
('http://127.0.0.1:8000/v1/chat/completions', 10.0)
"""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import Sequence
from dataclasses import dataclass

from agentgym import http_request
from agentgym.http_request import RETRY_STATUS
from agentgym.rewards.judges import JudgeUnavailable
from agentgym.train.methods.gcd.correction import mistakes_summary_prompt, parse_mistakes
from agentgym.train.methods.gcd.judge import critique_of, judge_prompt, parse_verdict

__all__ = ["ExternalJudge", "JudgeUnavailable", "RETRY_STATUS", "StepJudgment"]

MAX_RESPONSE_BYTES = 4 * 1024 * 1024
"""A chat reply is a few KB; a body beyond this is a misbehaving server, not a verdict."""


@dataclass
class StepJudgment:
    """What the external judge said about one step."""

    verdict: str | None
    """``"good"``, ``"bad"``, or None when the reply had no single well-formed verdict."""
    critique: str
    """The reply's text before the verdict (:func:`~agentgym.train.methods.gcd.judge.critique_of`)."""
    text: str
    """The whole reply."""


class ExternalJudge:
    """Labels steps and summarizes mistakes with a model behind an OpenAI-compatible endpoint.

    Args:
        base_url: server root including ``/v1``, e.g. ``http://127.0.0.1:8000/v1``.
        model: the served model name.
        timeout: seconds for one attempt, all of it.
        retries: attempts after the first, on connection errors, timeouts, garbled bodies and the
            statuses in :data:`~agentgym.http_request.RETRY_STATUS`.
        api_key: sent as a bearer token when given.
        backoff: first pause between attempts in seconds, doubled each time; pauses count against
            the call's deadline.
        temperature: sampling temperature of the judge (0 makes its labels repeatable).
        max_tokens: reply length limit; a critique and a verdict need little.
    """

    def __init__(self, base_url: str, model: str, timeout: float = 30.0, retries: int = 2,
                 api_key: str | None = None, backoff: float = 0.5, temperature: float = 0.0,
                 max_tokens: int = 512):
        if timeout <= 0:
            raise ValueError(f"timeout must be positive, got {timeout}")
        if retries < 0:
            raise ValueError(f"retries must be >= 0, got {retries}")
        if backoff < 0:
            raise ValueError(f"backoff must be >= 0, got {backoff}")
        self.url = base_url.rstrip("/") + "/chat/completions"
        parts = urllib.parse.urlsplit(self.url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"base_url must be an http(s) URL, got {base_url!r}")
        self.model, self.api_key = model, api_key
        self.timeout, self.retries, self.backoff = float(timeout), int(retries), float(backoff)
        self.temperature, self.max_tokens = float(temperature), int(max_tokens)

    @property
    def deadline_s(self) -> float:
        """The longest one call may take, backoff included (plus thread-scheduling slack)."""
        return self.timeout * (self.retries + 1)

    def judge_step(self, task: str, observation: str, action: str, mistakes: Sequence[str] = ()) -> StepJudgment:
        """The judge's verdict and critique on one step. A reply without exactly one verdict
        gives ``verdict=None`` (leave the step unlabelled); it is not retried, since asking the
        same model the same thing at temperature 0 gets the same reply."""
        text = self.complete(judge_prompt(task, observation, action, mistakes))
        return StepJudgment(parse_verdict(text), critique_of(text), text)

    def label_step(self, task: str, observation: str, action: str, mistakes: Sequence[str] = ()) -> str | None:
        """``"good"``, ``"bad"`` or None for one step; see :meth:`judge_step`."""
        return self.judge_step(task, observation, action, mistakes).verdict

    def summarize_mistakes(self, critiques: Sequence[str], max_items: int = 5) -> list[str]:
        """The judge's "Common mistakes" list for these critiques; ``[]`` when its reply holds no
        list (fall back to :func:`~agentgym.train.methods.gcd.correction.summarize_mistakes` then)."""
        return parse_mistakes(self.complete(mistakes_summary_prompt(critiques, max_items)), max_items)

    def complete(self, messages: list[dict[str, str]]) -> str:
        """The text of one chat completion, within :attr:`deadline_s`; raises
        :class:`JudgeUnavailable` when every attempt failed or an error will not go away."""
        body = json.dumps({"model": self.model, "messages": list(messages), "temperature": self.temperature,
                           "max_tokens": self.max_tokens, "n": 1}).encode("utf-8")
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        try:
            return http_request.request(self.url, body, headers=headers, timeout=self.timeout,
                                        retries=self.retries, backoff=self.backoff, deadline=self.deadline_s,
                                        max_bytes=MAX_RESPONSE_BYTES, parse=_reply_text)
        except http_request.RequestFailed as e:
            raise JudgeUnavailable(f"judge endpoint failed after {e.attempts} attempt(s) in {e.elapsed:.1f}s: "
                                   f"{e.reason}") from None


def _reply_text(data: bytes) -> str:
    try:
        payload = json.loads(data.decode("utf-8"))
        content = payload["choices"][0]["message"].get("content")
    except (ValueError, KeyError, IndexError, TypeError, AttributeError):
        raise ValueError(f"response has no choices[0].message: {data[:300].decode('utf-8', 'replace')}") from None
    return content if isinstance(content, str) else ""
