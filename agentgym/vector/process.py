"""The ``process`` backend: envs in worker processes on this machine.

Each worker holds ``envs_per_worker`` consecutive envs. A batch is sent to every worker involved
before any answer is read, so workers step in parallel. A worker that dies, or does not answer
within the timeout, is killed together with its process group (its engines, e.g. JVMs), every env it
held gets a fault result, and a fresh worker is started at once; it builds its envs while the batch
goes on, and the next job for those envs waits for it.
"""

from __future__ import annotations

import atexit
import multiprocessing as mp
import os
import select
import signal
import time
import weakref
from typing import Any, Mapping, Sequence

from agentgym.vector.backend import Backend
from agentgym.vector.host import DEFAULT_STICKY_CALLS, EnvFactory, Job, Result
from agentgym.vector.worker import worker_main

_LIVE_BACKENDS: "weakref.WeakSet[ProcessBackend]" = weakref.WeakSet()


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


def default_start_method() -> str:
    """``fork`` where the platform has it, as Gymnasium's AsyncVectorEnv does on Linux: workers
    start in milliseconds and scripts need no ``if __name__ == "__main__"`` guard. A program that
    already runs threads (a tokenizer pool, Ray, a trainer's data loader) should pass
    ``mp_context="spawn"``: a forked child can deadlock on a lock another thread held mid-fork."""
    return "fork" if "fork" in mp.get_all_start_methods() else "spawn"


class _Worker:
    def __init__(self, process, conn, indices: list[int]):
        self.process = process
        self.conn = conn
        self.indices = indices
        self.ready = False
        self.description: dict[str, Any] | None = None
        # One poll object per pipe, made once: Connection.poll builds a selector on every call,
        # which costs as much as a cheap env's step.
        self.poller = select.poll()
        self.poller.register(conn.fileno(), select.POLLIN)

    def wait_readable(self, timeout: float | None) -> bool:
        """Whether the pipe has data (or end-of-file) within ``timeout`` seconds (None: forever)."""
        return bool(self.poller.poll(None if timeout is None else max(0, int(timeout * 1000 + 0.999))))


class WorkerFailure(RuntimeError):
    """A worker died, hung or could not start."""


class ProcessBackend(Backend):
    name = "process"

    def __init__(
        self,
        factory: EnvFactory,
        num_envs: int,
        *,
        envs_per_worker: int = 1,
        context: str | None = None,
        startup_timeout: float | None = 600.0,
        sticky_calls: Sequence[str] = DEFAULT_STICKY_CALLS,
    ):
        super().__init__(factory, num_envs, sticky_calls)
        if envs_per_worker < 1:
            raise ValueError(f"envs_per_worker must be >= 1, got {envs_per_worker}")
        self.envs_per_worker = int(envs_per_worker)
        self.context_name = context or default_start_method()
        self.ctx = mp.get_context(self.context_name)
        self.startup_timeout = startup_timeout
        self.closed = False
        self.restarts = 0
        self.workers: list[_Worker] = []
        self.worker_of: list[int] = []
        for w, start in enumerate(range(0, self.num_envs, self.envs_per_worker)):
            indices = list(range(start, min(start + self.envs_per_worker, self.num_envs)))
            self.worker_of += [w] * len(indices)
            self.workers.append(self._start(indices))
        _LIVE_BACKENDS.add(self)
        try:
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

    def _restart(self, w: int) -> None:
        old = self.workers[w]
        kill_process_group(old.process)
        old.conn.close()
        self.workers[w] = self._start(old.indices)
        self.restarts += 1

    # ----- messaging -----------------------------------------------------------------------
    def _exchange(self, messages: Mapping[int, tuple], timeout: float | None) -> dict[int, tuple]:
        """Send every message, then collect every answer: ``{worker: ("ok"|"error"|"failed", payload)}``.

        A worker that died, hung past ``timeout`` (plus the startup allowance if it is still
        starting) or failed to start answers ``("failed", reason)`` and has been restarted.
        """
        answers: dict[int, tuple] = {}
        deadlines: dict[int, float] = {}
        now = time.monotonic()
        for w, message in messages.items():
            worker = self.workers[w]
            try:
                worker.conn.send(message)
            except (BrokenPipeError, EOFError, OSError):
                answers[w] = ("failed", f"worker process died (exit code {worker.process.exitcode})")
                continue
            allowance = 0.0 if worker.ready else (self.startup_timeout or float("inf"))
            deadlines[w] = now + (timeout if timeout is not None else float("inf")) + allowance
        # Answers are read worker by worker: the batch takes as long as its slowest worker anyway,
        # and a plain poll per pipe is cheaper than a selector over all of them. A dead worker's
        # pipe reads as end-of-file, so death shows up here as well as a hang does.
        try:
            self._collect(deadlines, answers, timeout)
        except BaseException:
            # Interrupted (Ctrl-C) with answers still in flight: those workers' pipes are out of
            # step with us, so they are replaced rather than read later.
            for w in set(deadlines) | set(answers):
                if w not in answers or answers[w][0] == "failed":
                    self._restart(w)
            raise
        for w, answer in answers.items():
            if answer[0] == "failed":
                self._restart(w)
        return answers

    def _collect(self, deadlines: dict[int, float], answers: dict[int, tuple], timeout: float | None) -> None:
        for w, deadline in deadlines.items():
            worker = self.workers[w]
            while w not in answers:
                remaining = deadline - time.monotonic()
                try:
                    if not worker.wait_readable(None if remaining == float("inf") else max(0.0, remaining)):
                        answers[w] = ("failed", f"no answer within the step timeout of {timeout}s")
                        break
                    message = worker.conn.recv()
                except (EOFError, OSError):
                    worker.process.join(timeout=1)
                    answers[w] = ("failed", f"worker process died (exit code {worker.process.exitcode})")
                    break
                if message[0] in ("ready", "init_error"):
                    try:
                        self._take_ready(worker, message)
                    except BaseException as e:  # noqa: BLE001
                        answers[w] = ("failed", f"worker could not rebuild its envs: {e}")
                    continue
                answers[w] = message

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
    def run(self, jobs: Mapping[int, Job], timeout: float | None = None) -> dict[int, Result]:
        by_worker = self._per_worker(jobs, self.worker_of)
        answers = self._exchange({w: ("run", batch) for w, batch in by_worker.items()}, timeout)
        return self._per_env(by_worker, answers)

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
        """Ask every worker to close its envs, then kill each worker's process group regardless."""
        if self.closed:
            return
        self.closed = True
        _LIVE_BACKENDS.discard(self)
        for worker in self.workers:
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
