"""Calling an agent so that whatever it does costs only its own episodes.

An agent may raise, hang, or return something that is not one action per episode. Each call runs
on the agent's own daemon thread with a time limit (a hung agent cannot be stopped, but the board
stops waiting, gives the agent a fresh thread, and the stuck one dies with the process). A batch call that fails is retried one episode at a time,
so one poisoned prompt does not take its batch-mates with it; an episode whose call fails again,
times out or returns garbage ends as an ``agent_error``. A failure that says the prompt is longer
than the model's context ends it as ``context_limit`` instead.
"""

from __future__ import annotations

import queue
import re
import threading
from dataclasses import dataclass
from typing import Any, Callable, Sequence

_CONTEXT = re.compile(r"context (length|window)|maximum context|too many tokens|prompt is too long", re.I)


@dataclass
class Failure:
    """Why an agent gave no action for an episode."""

    outcome: str
    """``agent_error`` or ``context_limit``."""
    message: str


class _Worker:
    """One long-lived daemon thread that runs agent calls, so a call costs a queue hand-off rather
    than a thread start (a scripted agent is called once per env step)."""

    def __init__(self):
        self.jobs: queue.SimpleQueue = queue.SimpleQueue()
        threading.Thread(target=self._serve, daemon=True, name="leaderboard-agent").start()

    def _serve(self):
        while True:
            fn, box, done = self.jobs.get()
            try:
                box["value"] = fn()
            except BaseException as e:  # noqa: BLE001  an agent's failure is data here
                box["error"] = e
            done.set()


_workers: dict[int, _Worker] = {}


def _with_timeout(fn: Callable[[], Any], timeout: float | None, owner: object = None) -> Any:
    worker = _workers.get(id(owner))
    if worker is None:
        worker = _workers[id(owner)] = _Worker()
    box: dict[str, Any] = {}
    done = threading.Event()
    worker.jobs.put((fn, box, done))
    if not done.wait(timeout):
        # The thread is stuck in the agent: leave it (it dies with the process) and use a new one.
        _workers.pop(id(owner), None)
        raise TimeoutError(f"the agent did not answer within {timeout:g} s")
    if "error" in box:
        raise box["error"]
    return box["value"]


def _action_of(item: Any) -> tuple[str, int] | None:
    """(action text, generated token count) of one returned item, or None if it is not an action."""
    if isinstance(item, str):
        return item, 0
    text = getattr(item, "text", None)
    if isinstance(text, str):
        ids = getattr(item, "token_ids", None) or getattr(item, "logprobs", None) or []
        return text, len(ids)
    return None


def _failure(e: BaseException) -> Failure:
    message = f"{type(e).__name__}: {e}"[:2000]
    return Failure("context_limit" if _CONTEXT.search(str(e)) else "agent_error", message)


def call_agent(agent, episodes: Sequence, timeout: float | None) -> list[tuple[str, int] | Failure]:
    """One entry per episode: ``(action, generated tokens)`` or a :class:`Failure`."""
    episodes = list(episodes)
    try:
        out = _with_timeout(lambda: agent.act(episodes), timeout, agent)
    except TimeoutError as e:
        return [Failure("agent_error", str(e))] * len(episodes)  # retrying would wait as long again
    except BaseException as e:  # noqa: BLE001
        if len(episodes) == 1:
            return [_failure(e)]
        return [r for ep in episodes for r in call_agent(agent, [ep], timeout)]
    if not isinstance(out, (list, tuple)) or len(out) != len(episodes):
        got = f"{type(out).__name__}" + (f" of {len(out)}" if isinstance(out, (list, tuple)) else "")
        if len(episodes) > 1:
            return [r for ep in episodes for r in call_agent(agent, [ep], timeout)]
        return [Failure("agent_error", f"act() must return a list with one action per episode, got {got}")]
    results: list[tuple[str, int] | Failure] = []
    for item in out:
        action = _action_of(item)
        results.append(action if action is not None else
                       Failure("agent_error", f"act() returned {type(item).__name__} {item!r:.100}, not an action"))
    return results
