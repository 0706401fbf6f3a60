"""What a backend does for the vector env, and the in-process (``sync``) backend.

A backend owns ``num_envs`` envs, numbered ``0..num_envs-1``, wherever they live. The vector env
hands it jobs (see :mod:`agentgym.vector.host`) keyed by env index and gets one result per job
back, in one of two ways:

- ``run(jobs)``: the lockstep way. Every job starts, and the call returns when all have finished.
- ``submit(jobs)`` then ``poll(min_results)``: the ready-first way. ``submit`` returns at once;
  each ``poll`` returns the results that are ready (at least ``min_results`` of them), so a slow
  env (a reset that loads a new game) no longer holds up the others. An env takes one job at a
  time.

Faults come back as ``("fault", message, ...)`` results, never as exceptions: a backend whose
worker died or hung answers a fault for each job that worker had, restarts the worker and carries
on.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any

import gymnasium as gym

from agentgym.vector.host import EnvFactory, EnvHost, Job, Result, StickyState
from agentgym.vector.options import BackendOptions, SyncOptions


class VectorEnvClosedError(gym.error.ClosedEnvironmentError, RuntimeError):
    """A vector env or its backend was used after ``close()``. Its workers are gone and none is
    started again: make a new vector env."""


class Backend(ABC):
    """Base class of the ``sync``, ``process`` and ``ray`` backends. Each is built from its options
    object (:mod:`agentgym.vector.options`), which has checked every setting."""

    name: str = "base"

    def __init__(self, factory: EnvFactory, num_envs: int, options: BackendOptions):
        if num_envs < 1:
            raise ValueError(f"num_envs must be >= 1, got {num_envs}")
        self.factory = factory
        self.num_envs = int(num_envs)
        self.options = options
        self.sticky_calls = tuple(options.sticky_calls)
        # The parent's copy of every env's sticky state, handed to a worker when it is restarted.
        self.sticky = [StickyState() for _ in range(self.num_envs)]
        self.env_description: dict[str, Any] = {}
        self.closed = False

    # ----- what each backend implements ------------------------------------------------------
    @abstractmethod
    def submit(self, jobs: Mapping[int, Job], timeout: float | None = None, *, ready_first: bool = False) -> None:
        """Start the jobs and return at once. ``timeout``: seconds each may run once started.

        ``ready_first``: results come back env by env as each finishes (a worker holding several
        envs answers for each separately) rather than a worker's whole share at once.
        """

    @abstractmethod
    def poll(self, min_results: int = 1, wait: float | None = None) -> dict[int, Result]:
        """Results of finished jobs, one per env, each returned once. Blocks until at least
        ``min_results`` are ready (fewer if fewer are in flight) or ``wait`` seconds have passed."""

    @property
    @abstractmethod
    def in_flight(self) -> frozenset[int]:
        """The envs with a job submitted and not yet returned by ``poll``."""

    def run(self, jobs: Mapping[int, Job], timeout: float | None = None) -> dict[int, Result]:
        """Run the jobs, in parallel where the backend can; one result per job. Lockstep only:
        nothing may be in flight from ``submit`` (its results would be mixed in)."""
        self._check_open("run")
        self._refuse_if_in_flight()
        self.submit(jobs, timeout)
        results: dict[int, Result] = {}
        while len(results) < len(jobs):
            results.update(self.poll(len(jobs) - len(results)))
        return results

    @abstractmethod
    def _call(self, name: str, args: tuple, kwargs: dict) -> list[Any]: ...

    @abstractmethod
    def _get_attr(self, name: str) -> list[Any]: ...

    @abstractmethod
    def _set_attr(self, name: str, values: list[Any]) -> None: ...

    @abstractmethod
    def close(self) -> None: ...

    def worker_pids(self) -> list[int | None]:
        """The process id holding each env (the parent's own for ``sync``)."""
        return [None] * self.num_envs

    # ----- shared -----------------------------------------------------------------------------
    @staticmethod
    def _per_worker(jobs: Mapping[int, Job], worker_of: Sequence[int]) -> dict[int, dict[int, Job]]:
        """The jobs grouped by the worker holding each env."""
        by_worker: dict[int, dict[int, Job]] = {}
        for i, job in jobs.items():
            by_worker.setdefault(worker_of[i], {})[i] = job
        return by_worker

    def _check_open(self, caller: str) -> None:
        # After close() a worker that is asked for anything would be restarted: nothing may ask.
        if self.closed:
            raise VectorEnvClosedError(f"the {self.name} backend is closed: {caller}() after close()")

    def _refuse_if_in_flight(self) -> None:
        if self.in_flight:
            raise RuntimeError(f"run() while envs {sorted(self.in_flight)} have jobs in flight")

    def call(self, name: str, args: tuple = (), kwargs: dict | None = None) -> list[Any]:
        self._check_open("call")
        kwargs = dict(kwargs or {})
        out = self._call(name, tuple(args), kwargs)
        if name in self.sticky_calls:
            for state in self.sticky:
                state.record_call(name, tuple(args), kwargs)
        return out

    def get_attr(self, name: str) -> list[Any]:
        self._check_open("get_attr")
        return self._get_attr(name)

    def set_attr(self, name: str, values: list[Any]) -> None:
        self._check_open("set_attr")
        self._set_attr(name, values)
        for state, value in zip(self.sticky, values):
            state.record_set(name, value)

    def sticky_records(self, indices: Sequence[int]) -> dict[int, dict]:
        return {i: dict(self.sticky[i].records) for i in indices}


class SyncBackend(Backend):
    """All envs in this process, stepped one after another. No step timeout: nothing can interrupt
    a call that hangs in process; use the ``process`` backend when engines may hang."""

    name = "sync"

    def __init__(self, factory: EnvFactory, num_envs: int, options: SyncOptions):
        super().__init__(factory, num_envs, options)
        self.host = EnvHost(factory, list(range(self.num_envs)), sticky_calls=self.sticky_calls)
        self.env_description = self.host.describe_env()
        self.queue: dict[int, Job] = {}  # submitted, not run yet: run by poll, in order

    def run(self, jobs: Mapping[int, Job], timeout: float | None = None) -> dict[int, Result]:
        self._check_open("run")
        self._refuse_if_in_flight()
        return self.host.run(jobs)

    def submit(self, jobs: Mapping[int, Job], timeout: float | None = None, *, ready_first: bool = False) -> None:
        self._check_open("submit")
        busy = set(jobs) & set(self.queue)
        if busy:
            raise RuntimeError(f"envs {sorted(busy)} already have a job in flight")
        self.queue.update(jobs)

    def poll(self, min_results: int = 1, wait: float | None = None) -> dict[int, Result]:
        """Runs queued jobs, oldest first, until ``min_results`` are done (nothing runs elsewhere)."""
        self._check_open("poll")
        results: dict[int, Result] = {}
        while self.queue and len(results) < max(1, min_results):
            i = next(iter(self.queue))
            results.update(self.host.run({i: self.queue.pop(i)}))
        return results

    @property
    def in_flight(self) -> frozenset[int]:
        return frozenset(self.queue)

    def _call(self, name: str, args: tuple, kwargs: dict) -> list[Any]:
        out = self.host.call(list(range(self.num_envs)), name, args, kwargs)
        return [out[i] for i in range(self.num_envs)]

    def _get_attr(self, name: str) -> list[Any]:
        out = self.host.get_attr(list(range(self.num_envs)), name)
        return [out[i] for i in range(self.num_envs)]

    def _set_attr(self, name: str, values: list[Any]) -> None:
        self.host.set_attr(name, dict(enumerate(values)))

    def worker_pids(self) -> list[int | None]:
        pid = self.host.pid()
        return [pid] * self.num_envs

    def close(self) -> None:
        self.closed = True
        self.queue.clear()
        self.host.close()
