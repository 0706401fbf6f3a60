"""An external LLM judge on any OpenAI-compatible ``/v1/chat/completions`` endpoint (SPEC §4.4).

Rule labels give few good steps (one per successful episode); a stronger model can label more, as
the paper does with a large hosted model. :class:`ExternalJudge` asks it the same question the
actor answers (:func:`~agentgym.train.gcd.judge.judge_prompt`) and reads the reply with the same
strict parser, and can also write the "Common mistakes" summary.

Each call is bounded: every attempt gets at most ``timeout`` seconds in all (connecting, sending,
a server that trickles its answer byte by byte), and the whole call, backoff sleeps included,
ends within ``timeout * (retries + 1)`` plus a little slack. An endpoint that stays down or keeps
failing raises :class:`JudgeUnavailable` (the same class the answer judges of
:mod:`agentgym.rewards.judges` raise); what to do then, log and skip say, is the trainer's call.

>>> judge = ExternalJudge("http://127.0.0.1:8000/v1/", "judge-model", timeout=5.0, retries=1)
>>> judge.url, judge.deadline_s
('http://127.0.0.1:8000/v1/chat/completions', 10.0)
"""

from __future__ import annotations

import http.client
import json
import socket
import threading
import time
import urllib.parse
from dataclasses import dataclass
from typing import Sequence

from agentgym.rewards.judges import JudgeUnavailable
from agentgym.train.gcd.correction import mistakes_summary_prompt, parse_mistakes
from agentgym.train.gcd.judge import critique_of, judge_prompt, parse_verdict

__all__ = ["ExternalJudge", "JudgeUnavailable", "StepJudgment"]

RETRY_STATUS = {408, 409, 425, 429, 500, 502, 503, 504}
"""HTTP statuses worth another attempt; any other error status (a wrong key, an unknown model) will
not fix itself and fails at once."""

MAX_RESPONSE_BYTES = 4 * 1024 * 1024
"""A chat reply is a few KB; a body beyond this is a misbehaving server, not a verdict."""


@dataclass
class StepJudgment:
    """What the external judge said about one step."""

    verdict: str | None
    """``"good"``, ``"bad"``, or None when the reply had no single well-formed verdict."""
    critique: str
    """The reply's text before the verdict (:func:`~agentgym.train.gcd.judge.critique_of`)."""
    text: str
    """The whole reply."""


class _Timeout(Exception):
    pass


class ExternalJudge:
    """Labels steps and summarizes mistakes with a model behind an OpenAI-compatible endpoint.

    Args:
        base_url: server root including ``/v1``, e.g. ``http://127.0.0.1:8000/v1``.
        model: the served model name.
        timeout: seconds for one attempt, all of it.
        retries: attempts after the first, on connection errors, timeouts, garbled bodies and the
            statuses in :data:`RETRY_STATUS`.
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
        self._scheme, self._host, self._port = parts.scheme, parts.hostname, parts.port
        self._path = parts.path + (f"?{parts.query}" if parts.query else "")
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
        list (fall back to :func:`~agentgym.train.gcd.correction.summarize_mistakes` then)."""
        return parse_mistakes(self.complete(mistakes_summary_prompt(critiques, max_items)), max_items)

    def complete(self, messages: list[dict[str, str]]) -> str:
        """The text of one chat completion, within :attr:`deadline_s`; raises
        :class:`JudgeUnavailable` when every attempt failed or an error will not go away."""
        body = json.dumps({"model": self.model, "messages": list(messages), "temperature": self.temperature,
                           "max_tokens": self.max_tokens, "n": 1}).encode("utf-8")
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        start = time.monotonic()
        deadline = start + self.deadline_s
        last_error = "no attempt made"
        attempts = 0
        for attempt in range(self.retries + 1):
            if attempt:
                pause = min(self.backoff * 2 ** (attempt - 1), deadline - time.monotonic())
                if pause > 0:
                    time.sleep(pause)
            budget = min(self.timeout, deadline - time.monotonic())
            if budget <= 0:
                break
            attempts += 1
            try:
                status, data = self._attempt(body, headers, budget)
            except _Timeout:
                last_error = f"no answer within {budget:.1f}s"
                continue
            except (OSError, http.client.HTTPException) as e:
                last_error = f"cannot reach it: {type(e).__name__}: {e}"
                continue
            if status != 200:
                last_error = f"HTTP {status}: {data[:300].decode('utf-8', 'replace')}"
                if status in RETRY_STATUS:
                    continue
                break
            try:
                return _reply_text(data)
            except ValueError as e:
                last_error = str(e)
        elapsed = time.monotonic() - start
        raise JudgeUnavailable(f"judge endpoint {self.url} failed after {attempts} attempt(s) in "
                               f"{elapsed:.1f}s: {last_error}")

    def _attempt(self, body: bytes, headers: dict[str, str], budget: float) -> tuple[int, bytes]:
        # A socket timeout bounds each read, not the whole answer: a server sending a byte now
        # and then would never trip it. A watchdog shuts the socket when the budget is spent.
        cls = http.client.HTTPSConnection if self._scheme == "https" else http.client.HTTPConnection
        conn = cls(self._host, self._port, timeout=budget)
        expired = threading.Event()
        # our own handle on the socket: the connection drops its reference once the server says
        # it will close, while the response still reads from it
        held: list[socket.socket] = []

        def watchdog():
            expired.set()  # before looking at the socket: see the check after connect()
            for sock in held:
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

        timer = threading.Timer(budget, watchdog)
        timer.daemon = True
        timer.start()
        response = None
        try:
            conn.connect()
            held.append(conn.sock)
            if expired.is_set():  # the watchdog ran before the socket existed
                raise _Timeout
            conn.request("POST", self._path, body=body, headers=headers)
            response = conn.getresponse()
            data = response.read(MAX_RESPONSE_BYTES + 1)
            if expired.is_set():
                raise _Timeout
            return response.status, data
        except (OSError, http.client.HTTPException):
            if expired.is_set():
                raise _Timeout from None
            raise
        finally:
            timer.cancel()
            if response is not None:
                response.close()
            conn.close()


def _reply_text(data: bytes) -> str:
    if len(data) > MAX_RESPONSE_BYTES:
        raise ValueError(f"response body over {MAX_RESPONSE_BYTES} bytes")
    try:
        payload = json.loads(data.decode("utf-8"))
        content = payload["choices"][0]["message"].get("content")
    except (ValueError, KeyError, IndexError, TypeError, AttributeError):
        raise ValueError(f"response has no choices[0].message: {data[:300].decode('utf-8', 'replace')}") from None
    return content if isinstance(content, str) else ""
