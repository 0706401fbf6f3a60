"""The envs one worker holds, and the jobs a backend sends them.

Every backend runs its envs through an :class:`EnvHost`: the sync backend holds one in process, each
worker process of the process backend holds one, and so does each Ray actor. The host turns an
exception inside an env into a *fault* result instead of letting it escape, and rebuilds a faulted
env before its next job, so one broken env never takes its neighbours down with it.

Jobs and results are plain tuples so they pickle cheaply across a pipe or through Ray:

- job ``("reset", seed, options)`` -> ``("ok", obs, info)``
- job ``("step", action)`` -> ``("ok", obs, reward, terminated, truncated, info)``
- any job -> ``("fault", message)`` when the env raised;
- any job -> ``("refused", message)`` when the env refused what it was asked to load
  (:class:`~agentgym.envs.base.DataRefused`): the same job would fail the same way again.
"""

from __future__ import annotations

import os
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym

from agentgym.envs.base import DataRefused

Job = tuple
Result = tuple

# Calls whose effect must survive a worker restart: replayed on every rebuilt env.
DEFAULT_STICKY_CALLS = ("set_prs_stage",)


@dataclass(frozen=True)
class EnvFactory:
    """A picklable recipe for one env: a registered id (with kwargs) or any callable.

    An id is resolved to its ``EnvSpec`` in the parent, so a worker builds the env without needing
    the id to be registered in its own process (ids registered at runtime, e.g. in tests, work too).
    """

    spec: gym.envs.registration.EnvSpec | None = None
    env_fn: Callable[[], gym.Env] | None = None
    kwargs: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_id(cls, env_id: str, **kwargs: Any) -> EnvFactory:
        return cls(spec=gym.spec(env_id), kwargs=dict(kwargs))

    @property
    def name(self) -> str:
        if self.spec is not None:
            return self.spec.id
        return getattr(self.env_fn, "__name__", repr(self.env_fn))

    def __call__(self) -> gym.Env:
        if self.spec is not None:
            import agentgym  # noqa: F401  registration, and the modules entry points name

            # The passive checker wraps every step in one more call; agentgym envs pass check_env.
            return gym.make(self.spec, **{"disable_env_checker": True, **self.kwargs})
        return self.env_fn(**self.kwargs)


class StickyState:
    """Attribute writes and sticky calls made on one env, replayed onto a rebuilt env."""

    def __init__(self, records: Mapping[tuple, tuple] | None = None):
        self.records: dict[tuple, tuple] = dict(records or {})

    def record_set(self, name: str, value: Any) -> None:
        self.records[("set", name)] = (value,)

    def record_call(self, name: str, args: tuple, kwargs: dict) -> None:
        self.records[("call", name)] = (args, kwargs)

    def apply(self, env: gym.Env) -> None:
        for (kind, name), payload in self.records.items():
            if kind == "set":
                env.set_wrapper_attr(name, payload[0])
            else:
                env.get_wrapper_attr(name)(*payload[0], **payload[1])


def describe(exc: BaseException) -> str:
    """One line naming an exception, for ``info["error"]``."""
    return f"{type(exc).__name__}: {exc}"


class EnvHost:
    """Holds the envs with the given global indices and runs jobs on them one after another."""

    def __init__(
        self,
        factory: EnvFactory,
        indices: list[int],
        sticky: Mapping[int, Mapping[tuple, tuple]] | None = None,
        sticky_calls: tuple[str, ...] = DEFAULT_STICKY_CALLS,
    ):
        self.factory = factory
        self.sticky_calls = tuple(sticky_calls)
        sticky = sticky or {}
        self.sticky = {i: StickyState(sticky.get(i)) for i in indices}
        self.envs: dict[int, gym.Env | None] = {i: None for i in indices}
        for i in indices:
            self.envs[i] = self._build(i)

    def _build(self, i: int) -> gym.Env:
        env = self.factory()
        self.sticky[i].apply(env)
        return env

    def _env(self, i: int) -> gym.Env:
        env = self.envs[i]
        if env is None:
            env = self.envs[i] = self._build(i)
        return env

    def _discard(self, i: int) -> None:
        env, self.envs[i] = self.envs[i], None
        if env is not None:
            try:
                env.close()
            except Exception:  # a broken engine may fail to close too; it is dropped either way
                pass

    # ----- jobs ------------------------------------------------------------------------------
    def run(self, jobs: Mapping[int, Job]) -> dict[int, Result]:
        results: dict[int, Result] = {}
        for i, job in jobs.items():
            try:
                env = self._env(i)
                if job[0] == "reset":
                    obs, info = env.reset(seed=job[1], options=job[2])
                    results[i] = ("ok", obs, info)
                elif job[0] == "step":
                    obs, reward, terminated, truncated, info = env.step(job[1])
                    results[i] = ("ok", obs, float(reward), bool(terminated), bool(truncated), info)
                else:
                    raise ValueError(f"unknown job {job[0]!r}")
            except DataRefused as e:
                results[i] = ("refused", str(e))
                self._discard(i)
            except Exception as e:  # noqa: BLE001  any env failure becomes a fault of that env only
                results[i] = ("fault", describe(e), traceback.format_exc(limit=8))
                self._discard(i)
        return results

    def call(self, indices: list[int], name: str, args: tuple, kwargs: dict) -> dict[int, Any]:
        out = {}
        for i in indices:
            attr = self._env(i).get_wrapper_attr(name)
            out[i] = attr(*args, **kwargs) if callable(attr) else attr
            if name in self.sticky_calls:
                self.sticky[i].record_call(name, args, kwargs)
        return out

    def get_attr(self, indices: list[int], name: str) -> dict[int, Any]:
        return {i: self._env(i).get_wrapper_attr(name) for i in indices}

    def set_attr(self, name: str, values: Mapping[int, Any]) -> None:
        for i, value in values.items():
            self._env(i).set_wrapper_attr(name, value)
            self.sticky[i].record_set(name, value)

    def describe_env(self) -> dict[str, Any]:
        """What the vector env needs to know about a single env: spaces, metadata, render mode."""
        env = self._env(next(iter(self.envs)))
        return {
            "observation_space": env.observation_space,
            "action_space": env.action_space,
            "metadata": dict(getattr(env, "metadata", {}) or {}),
            "render_mode": env.render_mode,
        }

    def pid(self) -> int:
        return os.getpid()

    def close(self) -> None:
        for i in list(self.envs):
            self._discard(i)
