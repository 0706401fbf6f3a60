"""Backend options: where ``make_vec`` runs its envs and how it guards them, one object per backend.

Every option and its default is declared here, once; ``make_vec``, ``AgentVectorEnv``, the
backends and the trainers take the object as it is::

    make_vec("ToolQA-v0", 8, group_size=4, backend=ProcessOptions(envs_per_worker=2, step_timeout=60))

The keyword spelling ``make_vec(..., backend="process", envs_per_worker=2, step_timeout=60)``
builds the same object (:func:`backend_options`), so code written against either works.

>>> ProcessOptions(envs_per_worker=0)
Traceback (most recent call last):
...
ValueError: envs_per_worker must be an int >= 1, got 0
>>> backend_options("ray", ray_actor_options={"num_cpus": 1}).actor_options
{'num_cpus': 1, 'max_restarts': 0}
"""

from __future__ import annotations

import math
import multiprocessing as mp
import numbers
from collections.abc import Mapping, Sequence
from dataclasses import MISSING, dataclass, field, fields
from typing import Any, ClassVar

from agentgym.vector.host import DEFAULT_STICKY_CALLS

# Ray actors mostly wait on their engines: by default they reserve no CPU, so a laptop-sized local
# Ray holds many of them (pass actor_options={"num_cpus": 1} on a cluster). A dead actor is
# replaced by the backend itself, with its envs' sticky state; Ray restarting it would lose that.
DEFAULT_ACTOR_OPTIONS: Mapping[str, Any] = {"num_cpus": 0, "max_restarts": 0}
DEFAULT_RAY_INIT_KWARGS: Mapping[str, Any] = {"include_dashboard": False, "log_to_driver": False}


def _check_timeout(name: str, value: float | None) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or math.isnan(value) or value <= 0:
        raise ValueError(f"{name} must be a positive number of seconds or None, got {value!r}")


@dataclass(frozen=True, kw_only=True)
class BackendOptions:
    """What every backend takes. Subclasses: :class:`SyncOptions`, :class:`ProcessOptions`,
    :class:`RayOptions`."""

    name: ClassVar[str] = "base"

    sticky_calls: Sequence[str] = DEFAULT_STICKY_CALLS
    """methods whose calls are replayed onto an env rebuilt after a fault"""

    def __post_init__(self) -> None:
        calls = self.sticky_calls
        if isinstance(calls, str) or not all(isinstance(c, str) for c in calls):
            raise ValueError(f"sticky_calls must be a sequence of method names, got {calls!r}")
        object.__setattr__(self, "sticky_calls", tuple(calls))


@dataclass(frozen=True, kw_only=True)
class SyncOptions(BackendOptions):
    """Every env in this process, stepped one after another. No timeouts: nothing can interrupt a
    call that hangs in this process; use :class:`ProcessOptions` when engines may hang."""

    name: ClassVar[str] = "sync"


@dataclass(frozen=True, kw_only=True)
class WorkerOptions(BackendOptions):
    """What the backends whose envs live in workers (processes, Ray actors) take: a worker that
    dies or does not answer in time is killed and replaced, and its envs' episodes end as
    truncated with ``info["error"]``."""

    envs_per_worker: int = 1
    """envs each worker holds (keep 1 for engine-backed envs: a worker's envs take turns)"""
    step_timeout: float | None = 300.0
    """seconds a worker may take for one batch of steps (None: wait forever)"""
    reset_timeout: float | None = 60.0
    """seconds a worker may take for one batch of resets: a reset loads a game or task into a running
    engine (seconds at most), so a hung one is given up long before the startup timeout"""
    startup_timeout: float | None = 600.0
    """seconds a worker may take to build its envs (added to the first job's timeout), and the limit
    of ``call``/``get_attr``/``set_attr``"""

    def __post_init__(self) -> None:
        super().__post_init__()
        n = self.envs_per_worker
        if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 1:
            raise ValueError(f"envs_per_worker must be an int >= 1, got {n!r}")
        object.__setattr__(self, "envs_per_worker", int(n))
        for name in ("step_timeout", "reset_timeout", "startup_timeout"):
            _check_timeout(name, getattr(self, name))


@dataclass(frozen=True, kw_only=True)
class ProcessOptions(WorkerOptions):
    """Envs in worker processes on this machine (:mod:`agentgym.vector.process`)."""

    name: ClassVar[str] = "process"

    mp_context: str | None = None
    """multiprocessing start method (None: ``fork`` where the platform has it, else ``spawn``; pass
    ``"spawn"`` from a program that already runs threads: a forked child can deadlock on their locks)"""

    def __post_init__(self) -> None:
        super().__post_init__()
        methods = mp.get_all_start_methods()
        if self.mp_context is not None and self.mp_context not in methods:
            raise ValueError(f"mp_context must be one of {methods} or None, got {self.mp_context!r}")


@dataclass(frozen=True, kw_only=True)
class RayOptions(WorkerOptions):
    """Envs in Ray actors, for more envs than one machine holds (:mod:`agentgym.vector.ray_backend`,
    extra ``ray``). The dicts given are merged over the defaults, which stay visible on the object."""

    name: ClassVar[str] = "ray"

    actor_options: Mapping[str, Any] = field(default_factory=dict)
    """``.options()`` of each env actor, over ``{"num_cpus": 0, "max_restarts": 0}`` (e.g.
    ``{"num_cpus": 1, "scheduling_strategy": "SPREAD"}`` on a cluster)"""
    init_kwargs: Mapping[str, Any] = field(default_factory=dict)
    """``ray.init`` arguments when Ray is not initialised yet (e.g. ``{"address": "auto"}``), over
    ``{"include_dashboard": False, "log_to_driver": False}``"""

    def __post_init__(self) -> None:
        super().__post_init__()
        for name, defaults in (("actor_options", DEFAULT_ACTOR_OPTIONS), ("init_kwargs", DEFAULT_RAY_INIT_KWARGS)):
            given = getattr(self, name)
            if given is None:
                given = {}
            if not isinstance(given, Mapping) or not all(isinstance(k, str) for k in given):
                raise ValueError(f"{name} must be a dict with str keys, got {given!r}")
            object.__setattr__(self, name, {**defaults, **given})


OPTIONS_BY_NAME: dict[str, type[BackendOptions]] = {cls.name: cls for cls in (SyncOptions, ProcessOptions, RayOptions)}
BACKENDS = tuple(OPTIONS_BY_NAME)

# make_vec's keyword spelling of each option (the names it has always taken) -> the field.
KEYWORDS = {"sticky_calls": "sticky_calls", "envs_per_worker": "envs_per_worker", "step_timeout": "step_timeout",
            "reset_timeout": "reset_timeout", "startup_timeout": "startup_timeout", "mp_context": "mp_context",
            "ray_actor_options": "actor_options", "ray_init_kwargs": "init_kwargs"}
_TIMEOUTS = ("step_timeout", "reset_timeout", "startup_timeout")


def _says_nothing(field_name: str, value: Any) -> bool:
    """Whether a keyword leaves its option as it would be anyway (None, empty, or the default)."""
    if value is None or (isinstance(value, Mapping) and not value):
        return True
    for cls in OPTIONS_BY_NAME.values():
        for f in fields(cls):
            if f.name == field_name and f.default is not MISSING and value == f.default:
                return True
    return False


def backend_options(backend: str | BackendOptions = "sync", **keywords: Any) -> BackendOptions:
    """The options object for ``backend``: the object itself, or the one its name and make_vec's
    keywords (``envs_per_worker``, ``step_timeout``, ``reset_timeout``, ``startup_timeout``,
    ``mp_context``, ``ray_actor_options``, ``ray_init_kwargs``, ``sticky_calls``) describe.

    With a name, a keyword that the backend has no use for is an error, unless it says nothing
    (None, empty, or its default), or is a timeout given to ``"sync"``: the sync backend cannot
    interrupt a call, so code that picks the backend by name may pass timeouts to all of them.
    """
    if isinstance(backend, BackendOptions):
        if keywords:
            raise ValueError(f"backend={type(backend).__name__}(...) already carries the backend's options: "
                             f"pass {', '.join(sorted(keywords))} inside it, not beside it")
        return backend
    if not isinstance(backend, str) or backend not in OPTIONS_BY_NAME:
        raise ValueError(f"backend must be one of {BACKENDS} or a SyncOptions, ProcessOptions or RayOptions, "
                         f"got {backend!r}")
    unknown = sorted(set(keywords) - set(KEYWORDS))
    if unknown:
        raise ValueError(f"unknown backend options {unknown}; known: {sorted(KEYWORDS)}")
    cls = OPTIONS_BY_NAME[backend]
    taken = {f.name for f in fields(cls)}
    given: dict[str, Any] = {}
    for keyword, value in keywords.items():
        name = KEYWORDS[keyword]
        if name in taken:
            given[name] = value
        elif name in _TIMEOUTS and cls is SyncOptions:
            _check_timeout(keyword, value)
        elif not _says_nothing(name, value):
            owners = [n for n, c in OPTIONS_BY_NAME.items() if name in {f.name for f in fields(c)}]
            raise ValueError(f"{keyword} applies to the {' and '.join(map(repr, owners))} "
                             f"backend{'s' if len(owners) > 1 else ''} only, not {backend!r}")
    return cls(**given)
