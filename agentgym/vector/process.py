"""The ``process`` backend: envs in worker processes on this machine.

Each worker holds ``envs_per_worker`` consecutive envs. A batch is sent to every worker involved
before any answer is read, so workers step in parallel. A worker that dies, or does not answer
within the timeout, is killed together with its process group (its engines, e.g. JVMs), every env it
held gets a fault result, and a fresh worker is started at once; it builds its envs while the batch
goes on, and the next job for those envs waits for it.

Every message a worker has yet to answer is a ticket in its queue; a worker answers in order, and
only the oldest ticket's clock runs. Ready-first jobs (``submit``/``poll``) may queue several
tickets on one worker, which then answers env by env; a message that would overfill a busy
worker's pipe waits in an outbox until the worker has read what it was sent.
"""

from __future__ import annotations

import atexit
import contextlib
import multiprocessing as mp
import os
import pickle
import select
import signal
import time
import weakref
from collections import deque
from collections.abc import Mapping
from multiprocessing import resource_tracker
from typing import Any

from agentgym.vector.backend import Backend
from agentgym.vector.host import EnvFactory, Job, Result
from agentgym.vector.options import ProcessOptions
from agentgym.vector.worker import worker_main

_LIVE_BACKENDS: weakref.WeakSet[ProcessBackend] = weakref.WeakSet()


@atexit.register
def _close_live_backends() -> None:  # e.g. after Ctrl-C ended the program without close()
    for backend in list(_LIVE_BACKENDS):
        backend.close()


def kill_process_group(process: mp.process.BaseProcess) -> None:
    """SIGKILL a worker and everything in its process group, then reap it."""
    pid = process.pid
    if pid is not None:
        try:
            grouped = os.getpgid(pid) == pid
        except ProcessLookupError:
            grouped = True  # gone already; its group (engines it started) may still be alive
        if grouped:
            try:
                os.killpg(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        try:
            process.kill()
        except (ProcessLookupError, AttributeError, ValueError):
            pass
    process.join(timeout=5)


@contextlib.contextmanager
def _sigint_held(context_name: str):
    """Hold SIGINT back while workers start.

    A new worker stays in this process group until its first lines move it to its own: with
    ``spawn`` that is a whole interpreter start, with ``fork`` a few instructions. A Ctrl-C then
    would reach it too and kill it with a traceback of its own. Started with SIGINT blocked (the
    mask is inherited across fork and exec), the worker unblocks it only once it has left the
    group and ignores it. A Ctrl-C that comes meanwhile reaches this process when the block ends.
    """
    # multiprocessing starts its resource tracker with the first spawned process and unblocks SIGINT
    # when it is done: started here first, it cannot undo the block below.
    if context_name != "fork":
        resource_tracker.ensure_running()
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def default_start_method() -> str:
    """``fork`` where the platform has it, as Gymnasium's AsyncVectorEnv does on Linux: workers
    start in milliseconds and scripts need no ``if __name__ == "__main__"`` guard. A program that
    already runs threads (a tokenizer pool, Ray, a trainer's data loader) should pass
    ``mp_context="spawn"``: a forked child can deadlock on a lock another thread held mid-fork."""
    return "fork" if "fork" in mp.get_all_start_methods() else "spawn"


# A worker is sent more while it is busy only as long as what it has not read yet stays well
# inside a pipe's buffer (64 KiB on Linux): otherwise the parent could block writing to a worker
# that is itself blocked writing an answer the parent is not reading yet.
_PIPE_BUDGET = 32 * 1024


class _Ticket:
    """One message sent to a worker and not fully answered yet: a ``run`` with the envs whose
    results are still due, or a command (``envs`` None)."""

    __slots__ = ("envs", "timeout", "deadline", "nbytes")

    def __init__(self, envs: set[int] | None, timeout: float | None, nbytes: int):
        self.envs = envs
        self.timeout = timeout
        self.deadline = float("inf")
        self.nbytes = nbytes


class _Worker:
    def __init__(self, process, conn, indices: list[int]):
        self.process = process
        self.conn = conn
        self.indices = indices
        self.ready = False
        self.description: dict[str, Any] | None = None
        # Messages sent and not fully answered, oldest first: a worker answers in order, and only
        # the oldest one's clock runs. Messages that would overfill the pipe wait in the outbox.
        self.tickets: deque[_Ticket] = deque()
        self.outbox: deque[tuple[bytes, _Ticket]] = deque()
        self.unread = 0  # bytes sent and not answered yet
        self.poller = select.poll()
        self.poller.register(conn.fileno(), select.POLLIN)

    def start_clock(self, ticket: _Ticket, now: float, startup_timeout: float | None) -> None:
        if ticket.timeout is None:
            ticket.deadline = float("inf")
        else:
            allowance = 0.0 if self.ready else (startup_timeout if startup_timeout is not None else float("inf"))
            ticket.deadline = now + ticket.timeout + allowance

    def flush(self, now: float, startup_timeout: float | None) -> None:
        """Write queued messages while the pipe has room for them (always one to an idle worker)."""
        while self.outbox and (not self.tickets or self.unread + len(self.outbox[0][0]) <= _PIPE_BUDGET):
            data, ticket = self.outbox.popleft()
            if not self.tickets:
                self.start_clock(ticket, now, startup_timeout)
            self.tickets.append(ticket)
            self.unread += ticket.nbytes
            try:
                self.conn.send_bytes(data)
            except (BrokenPipeError, EOFError, OSError):
                pass  # dead: its pipe also reads as end-of-file, which the next poll turns into faults


class WorkerFailure(RuntimeError):
    """A worker died, hung or could not start."""


class ProcessBackend(Backend):
    name = "process"

    def __init__(self, factory: EnvFactory, num_envs: int, options: ProcessOptions):
        super().__init__(factory, num_envs, options)
        self.envs_per_worker = options.envs_per_worker
        self.context_name = options.mp_context or default_start_method()
        self.ctx = mp.get_context(self.context_name)
        self.startup_timeout = options.startup_timeout
        self.closed = False
        self.restarts = 0
        self.workers: list[_Worker] = []
        self.worker_of: list[int] = []
        self._in_flight: set[int] = set()
        self._answers: dict[int, tuple] = {}  # command answers, by worker
        _LIVE_BACKENDS.add(self)
        try:
            with _sigint_held(self.context_name):
                for w, start in enumerate(range(0, self.num_envs, self.envs_per_worker)):
                    indices = list(range(start, min(start + self.envs_per_worker, self.num_envs)))
                    self.worker_of += [w] * len(indices)
                    self.workers.append(self._start(indices))
            for w in range(len(self.workers)):
                self._await_ready(w, raise_on_failure=True)
        except BaseException:
            self.close()
            raise
        self.env_description = self.workers[0].description

    # ----- worker lifecycle ----------------------------------------------------------------
    def _start(self, indices: list[int]) -> _Worker:
        parent_conn, child_conn = self.ctx.Pipe()
        inherited = [wk.conn for wk in self.workers] + [parent_conn] if self.context_name == "fork" else None
        process = self.ctx.Process(
            target=worker_main,
            args=(child_conn, self.factory, indices, self.sticky_records(indices), self.sticky_calls,
                  os.getpid(), inherited),
            name=f"agentgym-vector-worker-{indices[0]}",
            daemon=True,
        )
        process.start()
        child_conn.close()
        return _Worker(process, parent_conn, indices)

    def _await_ready(self, w: int, raise_on_failure: bool) -> None:
        worker = self.workers[w]
        if worker.ready:
            return
        if not worker.conn.poll(self.startup_timeout):
            raise WorkerFailure(f"worker for envs {worker.indices} did not start within {self.startup_timeout}s")
        try:
            message = worker.conn.recv()
        except (EOFError, OSError) as e:
            raise WorkerFailure(f"worker for envs {worker.indices} died while starting "
                                f"(exit code {worker.process.exitcode})") from e
        self._take_ready(worker, message)

    def _take_ready(self, worker: _Worker, message: tuple) -> None:
        if message[0] == "init_error":
            error = message[1]
            if isinstance(error, BaseException):
                raise error
            raise WorkerFailure(f"worker for envs {worker.indices} failed to build its envs: {error}")
        worker.ready = True
        worker.description = message[1]

    def _peek_ready(self, worker: _Worker) -> None:
        """Take a restarted worker's ready message if it is already in the pipe."""
        try:
            if worker.conn.poll(0):
                self._take_ready(worker, worker.conn.recv())
        except Exception:  # noqa: BLE001  dead or failed to build: it is killed either way
            pass

    def _restart(self, w: int) -> None:
        old = self.workers[w]
        kill_process_group(old.process)
        old.conn.close()
        with _sigint_held(self.context_name):
            self.workers[w] = self._start(old.indices)
        self.restarts += 1

    # ----- messaging -----------------------------------------------------------------------
    def _send(self, w: int, message: tuple, envs: set[int] | None, timeout: float | None, flush: bool = True) -> None:
        worker = self.workers[w]
        data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
        worker.outbox.append((data, _Ticket(envs, timeout, len(data))))
        if envs is not None:
            self._in_flight.update(envs)
        if flush:
            worker.flush(time.monotonic(), self.startup_timeout)

    def _fail(self, w: int, reason: str, results: dict[int, Result]) -> None:
        """Worker ``w`` died or hung: fault every job it had, answer its commands, restart it."""
        worker = self.workers[w]
        for ticket in [*worker.tickets, *(t for _, t in worker.outbox)]:
            if ticket.envs is None:
                self._answers[w] = ("failed", reason)
            else:
                for i in ticket.envs:
                    results[i] = ("fault", reason, "")
                    self._in_flight.discard(i)
        worker.tickets.clear()
        worker.outbox.clear()
        self._restart(w)

    def _take_answer(self, w: int, message: tuple, results: dict[int, Result], now: float) -> None:
        worker = self.workers[w]
        if message[0] in ("ready", "init_error"):  # a restarted worker has built its envs
            try:
                self._take_ready(worker, message)
            except BaseException as e:  # noqa: BLE001
                self._fail(w, f"worker could not rebuild its envs: {e}", results)
                return
            if worker.tickets:  # its first job starts now: from here on it has its own timeout only
                worker.start_clock(worker.tickets[0], now, self.startup_timeout)
            return
        ticket = worker.tickets[0]
        if ticket.envs is None:
            self._answers[w] = message
            ticket.envs = set()
        elif message[0] == "ok":
            results.update(message[1])
            answered = ticket.envs.intersection(message[1])
            ticket.envs -= answered
            self._in_flight -= answered
        else:  # the worker could not send its results (e.g. an info that does not pickle)
            for i in ticket.envs:
                results[i] = ("fault", f"worker error: {message[1]}", "")
            self._in_flight -= ticket.envs
            ticket.envs = set()
        if ticket.envs:
            worker.start_clock(ticket, now, self.startup_timeout)  # the next env's job starts now
            return
        worker.tickets.popleft()
        worker.unread -= ticket.nbytes
        if worker.tickets:
            worker.start_clock(worker.tickets[0], now, self.startup_timeout)
        worker.flush(now, self.startup_timeout)

    def _pump(self, done, wait: float | None, results: dict[int, Result]) -> None:
        """Read answers until ``done()`` or ``wait`` seconds pass. A worker that died (its pipe
        reads as end-of-file) or whose oldest message is past its deadline is failed."""
        end = float("inf") if wait is None else time.monotonic() + wait
        try:
            while not done():
                busy = [w for w, worker in enumerate(self.workers) if worker.tickets]
                if not busy:
                    return
                now = time.monotonic()
                until = min(end, min(self.workers[w].tickets[0].deadline for w in busy))
                ms = None if until == float("inf") else max(0, int((until - now) * 1000 + 0.999))
                if len(busy) == 1:  # the common lockstep case with one worker: its own poll object
                    readable = busy if self.workers[busy[0]].poller.poll(ms) else []
                else:
                    by_fd = {self.workers[w].conn.fileno(): w for w in busy}
                    poller = select.poll()
                    for fd in by_fd:
                        poller.register(fd, select.POLLIN)
                    readable = [by_fd[fd] for fd, _ in poller.poll(ms)]
                now = time.monotonic()
                for w in readable:
                    worker = self.workers[w]
                    try:
                        message = worker.conn.recv()
                    except (EOFError, OSError):
                        worker.process.join(timeout=1)
                        self._fail(w, f"worker process died (exit code {worker.process.exitcode})", results)
                        continue
                    self._take_answer(w, message, results, now)
                # Past its deadline with nothing to read (an answer already waiting in the pipe is
                # on time, however late it is read): the worker hangs.
                for w in busy:
                    tickets = self.workers[w].tickets
                    if w not in readable and tickets and tickets[0].deadline <= now:
                        self._fail(w, f"no answer within the timeout of {tickets[0].timeout}s", results)
                if now >= end:
                    return
        except BaseException:
            # Interrupted (Ctrl-C) with answers still in flight: those workers' pipes are out of
            # step with us, so they are replaced rather than read later.
            for w, worker in enumerate(self.workers):
                if worker.tickets or worker.outbox:
                    self._fail(w, "interrupted", {})
            raise

    def _exchange(self, messages: Mapping[int, tuple], timeout: float | None) -> dict[int, tuple]:
        """Send one command per worker and wait for every answer:
        ``{worker: ("ok"|"error"|"failed", payload)}``. Nothing else may be in flight."""
        if self._in_flight:
            raise RuntimeError("a command cannot be sent while env jobs are in flight")
        self._answers = {}
        for w, message in messages.items():
            self._send(w, message, None, timeout)
        self._pump(lambda: len(self._answers) == len(messages), None, {})
        answers, self._answers = self._answers, {}
        return answers

    def _broadcast(self, message: tuple) -> dict[int, Any]:
        """Send one command to every worker; raise what a worker raised or why it failed."""
        answers = self._exchange({w: message for w in range(len(self.workers))}, self.startup_timeout)
        for w, answer in sorted(answers.items()):
            if answer[0] == "error":
                error = answer[1]
                raise error if isinstance(error, BaseException) else RuntimeError(error)
            if answer[0] == "failed":
                raise WorkerFailure(f"worker for envs {self.workers[w].indices}: {answer[1]}")
        return {w: answer[1] for w, answer in answers.items()}

    # ----- the backend interface -----------------------------------------------------------
    def submit(self, jobs: Mapping[int, Job], timeout: float | None = None, *, ready_first: bool = False) -> None:
        self._check_open("submit")
        busy = self._in_flight.intersection(jobs)
        if busy:
            raise RuntimeError(f"envs {sorted(busy)} already have a job in flight")
        by_worker = self._per_worker(jobs, self.worker_of)
        for w, batch in by_worker.items():
            self._send(w, ("run", batch, ready_first and len(batch) > 1), set(batch), timeout, flush=False)
        # Every message is pickled before the first is written, so the workers start together.
        now = time.monotonic()
        for w in by_worker:
            self.workers[w].flush(now, self.startup_timeout)

    def poll(self, min_results: int = 1, wait: float | None = None) -> dict[int, Result]:
        self._check_open("poll")
        results: dict[int, Result] = {}
        target = max(1, min(min_results, len(self._in_flight)))
        self._pump(lambda: len(results) >= target, wait, results)
        return results

    @property
    def in_flight(self) -> frozenset[int]:
        return frozenset(self._in_flight)

    def _call(self, name: str, args: tuple, kwargs: dict) -> list[Any]:
        merged: dict[int, Any] = {}
        for part in self._broadcast(("call", name, args, kwargs)).values():
            merged.update(part)
        return [merged[i] for i in range(self.num_envs)]

    def _get_attr(self, name: str) -> list[Any]:
        merged: dict[int, Any] = {}
        for part in self._broadcast(("get_attr", name)).values():
            merged.update(part)
        return [merged[i] for i in range(self.num_envs)]

    def _set_attr(self, name: str, values: list[Any]) -> None:
        messages = {w: ("set_attr", name, {i: values[i] for i in wk.indices}) for w, wk in enumerate(self.workers)}
        answers = self._exchange(messages, self.startup_timeout)
        for answer in answers.values():
            if answer[0] == "error":
                error = answer[1]
                raise error if isinstance(error, BaseException) else RuntimeError(error)

    def worker_pids(self) -> list[int | None]:
        return [self.workers[self.worker_of[i]].process.pid for i in range(self.num_envs)]

    def close(self, grace_s: float = 10.0) -> None:
        """Ask every idle worker to close its envs, then kill each worker's process group regardless
        (at once for a worker still busy with jobs nobody will collect or still starting)."""
        if self.closed:
            return
        self.closed = True
        _LIVE_BACKENDS.discard(self)
        for worker in self.workers:
            if not worker.ready and not worker.tickets:
                self._peek_ready(worker)
            # Busy with jobs nobody will collect, or still building its envs (it would read the
            # close message only once they are built): nothing to wait for.
            if worker.tickets or worker.outbox or not worker.ready:
                kill_process_group(worker.process)
                continue
            try:
                worker.conn.send(("close",))
            except (BrokenPipeError, EOFError, OSError):
                pass
        deadline = time.monotonic() + grace_s
        for worker in self.workers:
            worker.process.join(timeout=max(0.0, deadline - time.monotonic()))
        for worker in self.workers:
            kill_process_group(worker.process)
            worker.conn.close()
