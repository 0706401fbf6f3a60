"""Calling an agent so that whatever it does costs only its own episodes.

An agent may raise, hang, or return something that is not one action per episode. Each call runs
on the agent's own daemon thread with a time limit (a hung agent cannot be stopped, but the board
stops waiting, gives the agent a fresh thread, and the stuck one dies with the process; threads an
agent starts itself should be daemon threads too, or the process waits for them at exit). A batch
call that fails is retried one episode at a time, so one poisoned prompt does not take its
batch-mates with it; an episode whose call fails again, times out or returns garbage (including
objects that raise when read or printed) ends as an ``agent_error``. A failure that says the
prompt is longer than the model's context ends it as ``context_limit`` instead.

A Ctrl-C while the board waits for an agent is the user's, not the agent's: it stops the board and
no episode is recorded for it (the agent's own code raising ``KeyboardInterrupt`` or ``SystemExit``
on its thread is an agent failure like any other).
"""

from __future__ import annotations

import math
import queue
import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

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
    if timeout is not None and math.isinf(timeout):
        timeout = None
    worker = _workers.get(id(owner))
    if worker is None:
        worker = _workers[id(owner)] = _Worker()
    box: dict[str, Any] = {}
    done = threading.Event()
    worker.jobs.put((fn, box, done))
    if not done.wait(timeout):  # a Ctrl-C here raises KeyboardInterrupt out of the board
        # The thread is stuck in the agent: leave it (it dies with the process) and use a new one.
        _workers.pop(id(owner), None)
        raise TimeoutError(f"the agent did not answer within {timeout:g} s")
    if "error" in box:
        error = box["error"]
        if not isinstance(error, Exception):  # the agent's own SystemExit / KeyboardInterrupt
            raise RuntimeError(f"the agent raised {describe(error)}") from error
        raise error
    return box["value"]


def describe(e: BaseException) -> str:
    """``Type: message`` of an exception, even one whose message cannot be printed."""
    try:
        return f"{type(e).__name__}: {e}"[:2000]
    except Exception:  # noqa: BLE001  a user's exception with a broken __str__
        return f"{type(e).__name__} (its message cannot be printed)"


def _shown(item: Any) -> str:
    try:
        return f"{type(item).__name__} {item!r:.100}"
    except Exception:  # noqa: BLE001  a broken __repr__ is the agent's, not the board's
        return f"{type(item).__name__} (which cannot be printed)"


def _action_of(item: Any) -> tuple[str, int] | None:
    """(action text, generated token count) of one returned item, or None if it is not an action;
    raises whatever reading the item raises."""
    if isinstance(item, str):
        return item, 0
    text = getattr(item, "text", None)
    if not isinstance(text, str):
        return None
    for name in ("token_ids", "logprobs"):  # the first that is given and not empty counts
        ids = getattr(item, name, None)
        if ids is None:
            continue
        try:
            count = len(ids)
        except TypeError:
            raise TypeError(f"its {name} is a {type(ids).__name__}, which has no length") from None
        if count:
            return text, count
    return text, 0


def _failure(e: BaseException) -> Failure:
    message = describe(e)
    return Failure("context_limit" if _CONTEXT.search(message) else "agent_error", message)


def call_agent(agent, episodes: Sequence, timeout: float | None) -> list[tuple[str, int] | Failure]:
    """One entry per episode: ``(action, generated tokens)`` or a :class:`Failure`."""
    episodes = list(episodes)
    try:
        out = _with_timeout(lambda: agent.act(episodes), timeout, agent)
    except TimeoutError as e:
        return [Failure("agent_error", str(e))] * len(episodes)  # retrying would wait as long again
    except Exception as e:  # noqa: BLE001  an agent's failure; KeyboardInterrupt stops the board
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
        try:
            action = _action_of(item)
        except Exception as e:  # noqa: BLE001  e.g. a ``text`` property that raises
            results.append(Failure("agent_error", f"act() returned a {type(item).__name__} that cannot be read: "
                                                  f"{describe(e)}"))
            continue
        results.append(action if action is not None else
                       Failure("agent_error", f"act() returned {_shown(item)}, not an action"))
    return results
