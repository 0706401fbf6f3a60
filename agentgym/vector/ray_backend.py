"""The ``ray`` backend: envs in Ray actors, for when one machine is not enough (extra: ``ray``).

Each actor holds ``envs_per_worker`` envs in an :class:`~agentgym.vector.host.EnvHost`. Batches go
out to every actor before any result is awaited. An actor that dies (``RayActorError``) or does not
answer within the step (or reset) timeout is killed and replaced; its envs get fault results.

Ray is initialised on first use if the program has not done so (with ``RayOptions.init_kwargs``),
and shut down again at ``close()`` only if this backend started it.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Mapping
from typing import Any

from gymnasium.error import DependencyNotInstalled

from agentgym.vector.backend import Backend
from agentgym.vector.host import EnvFactory, EnvHost, Job, Result, describe
from agentgym.vector.options import RayOptions


def _import_ray():
    try:
        import ray
    except ImportError as e:
        raise DependencyNotInstalled(
            'The "ray" backend needs Ray: pip install "agentgym[ray]"'
        ) from e
    return ray


class RayBackend(Backend):
    name = "ray"

    def __init__(self, factory: EnvFactory, num_envs: int, options: RayOptions):
        super().__init__(factory, num_envs, options)
        ray = self.ray = _import_ray()
        envs_per_worker = options.envs_per_worker
        self.owns_ray = False
        if not ray.is_initialized():
            ray.init(**options.init_kwargs)
            self.owns_ray = True
        self.actor_cls = ray.remote(EnvHost).options(**options.actor_options)
        self.startup_timeout = options.startup_timeout
        self.closed = False
        self.restarts = 0
        self.actors: list[Any] = []
        self.indices: list[list[int]] = []
        self.fresh: list[bool] = []
        self.worker_of: list[int] = []
        # Jobs in flight: object ref -> (actor, envs, timeout), and each actor's refs in the order
        # it runs them (only the oldest one's clock runs).
        self.refs: dict[Any, tuple[int, frozenset[int], float | None]] = {}
        self.queues: list[deque] = []
        self.deadlines: dict[Any, float] = {}
        for w, start in enumerate(range(0, self.num_envs, envs_per_worker)):
            indices = list(range(start, min(start + envs_per_worker, self.num_envs)))
            self.indices.append(indices)
            self.worker_of += [w] * len(indices)
            self.actors.append(self._new_actor(indices))
            self.fresh.append(True)
            self.queues.append(deque())
        try:
            descriptions = ray.get([a.describe_env.remote() for a in self.actors], timeout=self.startup_timeout)
        except BaseException:
            self.close()
            raise
        self.fresh = [False] * len(self.actors)
        self.env_description = descriptions[0]

    def _new_actor(self, indices: list[int]):
        return self.actor_cls.remote(self.factory, indices, self.sticky_records(indices), self.sticky_calls)

    def _restart(self, w: int) -> None:
        try:
            self.ray.kill(self.actors[w], no_restart=True)
        except Exception:  # noqa: BLE001  already dead
            pass
        self.actors[w] = self._new_actor(self.indices[w])
        self.fresh[w] = True
        self.restarts += 1

    def _gather(self, refs: Mapping[int, Any], timeout: float | None) -> dict[int, tuple]:
        """Wait for one object ref per actor: ``{w: ("ok", value) | ("error", exc) | ("failed", why)}``."""
        ray = self.ray
        answers: dict[int, tuple] = {}
        deadlines = {w: time.monotonic() + (timeout if timeout is not None else float("inf"))
                     + (0.0 if not self.fresh[w] else (self.startup_timeout or float("inf"))) for w in refs}
        by_ref = {ref: w for w, ref in refs.items()}
        pending = list(refs.values())
        while pending:
            remaining = min(deadlines[by_ref[r]] for r in pending) - time.monotonic()
            done, pending = ray.wait(pending, num_returns=len(pending),
                                     timeout=None if remaining == float("inf") else max(0.0, remaining))
            for ref in done:
                w = by_ref[ref]
                try:
                    answers[w] = ("ok", ray.get(ref))
                    self.fresh[w] = False
                except (ray.exceptions.RayActorError, ray.exceptions.ActorDiedError,
                        ray.exceptions.WorkerCrashedError) as e:
                    answers[w] = ("failed", f"worker actor died: {describe(e).splitlines()[0]}")
                except ray.exceptions.RayTaskError as e:
                    answers[w] = ("error", e.as_instanceof_cause())
            now = time.monotonic()
            for ref in list(pending):
                w = by_ref[ref]
                if deadlines[w] <= now:
                    answers[w] = ("failed", f"no answer within the timeout of {timeout}s")
                    pending.remove(ref)
        for w, answer in answers.items():
            if answer[0] == "failed":
                self._restart(w)
        return answers

    def submit(self, jobs: Mapping[int, Job], timeout: float | None = None, *, ready_first: bool = False) -> None:
        self._check_open("submit")
        busy = self.in_flight.intersection(jobs)
        if busy:
            raise RuntimeError(f"envs {sorted(busy)} already have a job in flight")
        now = time.monotonic()
        for w, batch in self._per_worker(jobs, self.worker_of).items():
            parts = [{i: job} for i, job in batch.items()] if ready_first else [dict(batch)]
            for part in parts:
                ref = self.actors[w].run.remote(part)
                self.refs[ref] = (w, frozenset(part), timeout)
                if not self.queues[w]:
                    self._start_clock(ref, now)
                self.queues[w].append(ref)

    def _start_clock(self, ref, now: float) -> None:
        w, _, timeout = self.refs[ref]
        allowance = (self.startup_timeout or float("inf")) if self.fresh[w] else 0.0
        self.deadlines[ref] = now + (timeout if timeout is not None else float("inf")) + allowance

    def _settle(self, ref, answer: tuple, results: dict[int, Result], now: float) -> None:
        """Take actor ``w``'s answer to ``ref``: results, or faults for all its jobs (and a restart)."""
        w, envs, _ = self.refs[ref]
        if answer[0] == "failed":
            for other in self.queues[w]:
                for i in self.refs.pop(other)[1]:
                    results[i] = ("fault", answer[1], "")
                self.deadlines.pop(other, None)
            self.queues[w].clear()
            self._restart(w)
            return
        self.queues[w].remove(ref)
        self.refs.pop(ref)
        self.deadlines.pop(ref, None)
        if answer[0] == "ok":
            results.update(answer[1])
        else:
            for i in envs:
                results[i] = ("fault", f"worker error: {answer[1]}", "")
        if self.queues[w]:
            self._start_clock(self.queues[w][0], now)

    def poll(self, min_results: int = 1, wait: float | None = None) -> dict[int, Result]:
        self._check_open("poll")
        ray = self.ray
        results: dict[int, Result] = {}
        target = max(1, min(min_results, len(self.in_flight)))
        end = float("inf") if wait is None else time.monotonic() + wait
        while self.refs and len(results) < target:
            now = time.monotonic()
            until = min(end, min(self.deadlines.values(), default=float("inf")))
            done, _ = ray.wait(list(self.refs), num_returns=1,
                               timeout=None if until == float("inf") else max(0.0, until - now))
            # Everything else that is ready too, without waiting.
            if done and len(self.refs) > 1:
                done, _ = ray.wait(list(self.refs), num_returns=len(self.refs), timeout=0)
            now = time.monotonic()
            for ref in done:
                if ref not in self.refs:
                    continue
                w = self.refs[ref][0]
                try:
                    answer = ("ok", ray.get(ref))
                    self.fresh[w] = False
                except (ray.exceptions.RayActorError, ray.exceptions.ActorDiedError,
                        ray.exceptions.WorkerCrashedError) as e:
                    answer = ("failed", f"worker actor died: {describe(e).splitlines()[0]}")
                except ray.exceptions.RayTaskError as e:
                    answer = ("error", e.as_instanceof_cause())
                self._settle(ref, answer, results, now)
            # Past its deadline and not done (a result already there is on time, however late it
            # is read): the actor hangs.
            for ref, deadline in list(self.deadlines.items()):
                if deadline <= now and ref in self.refs and ref not in done:
                    self._settle(ref, ("failed", f"no answer within the timeout of {self.refs[ref][2]}s"),
                                 results, now)
            if now >= end:
                break
        return results

    @property
    def in_flight(self) -> frozenset[int]:
        return frozenset(i for _, envs, _ in self.refs.values() for i in envs)

    def _broadcast(self, method: str, args_for) -> dict[int, Any]:
        """Call ``method(*args_for(w))`` on every actor; merge the per-env answers."""
        refs = {w: getattr(actor, method).remote(*args_for(w)) for w, actor in enumerate(self.actors)}
        merged: dict[int, Any] = {}
        for w, answer in sorted(self._gather(refs, self.startup_timeout).items()):
            if answer[0] == "error":
                raise answer[1]
            if answer[0] == "failed":
                raise RuntimeError(f"Ray worker for envs {self.indices[w]}: {answer[1]}")
            if answer[1]:
                merged.update(answer[1])
        return merged

    def _call(self, name: str, args: tuple, kwargs: dict) -> list[Any]:
        merged = self._broadcast("call", lambda w: (self.indices[w], name, args, kwargs))
        return [merged[i] for i in range(self.num_envs)]

    def _get_attr(self, name: str) -> list[Any]:
        merged = self._broadcast("get_attr", lambda w: (self.indices[w], name))
        return [merged[i] for i in range(self.num_envs)]

    def _set_attr(self, name: str, values: list[Any]) -> None:
        self._broadcast("set_attr", lambda w: (name, {i: values[i] for i in self.indices[w]}))

    def worker_pids(self) -> list[int | None]:
        self._check_open("worker_pids")  # the actors are gone: asking one would wait forever
        pids = self.ray.get([a.pid.remote() for a in self.actors], timeout=self.startup_timeout)
        return [pids[self.worker_of[i]] for i in range(self.num_envs)]

    def close(self, grace_s: float = 10.0) -> None:
        if self.closed:
            return
        self.closed = True
        ray = self.ray
        if self.actors:
            try:
                ray.wait([a.close.remote() for a in self.actors], num_returns=len(self.actors), timeout=grace_s)
            except Exception:  # noqa: BLE001
                pass
            for actor in self.actors:
                try:
                    ray.kill(actor, no_restart=True)
                except Exception:  # noqa: BLE001
                    pass
        if self.owns_ray and ray.is_initialized():
            ray.shutdown()
