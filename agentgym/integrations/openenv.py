"""Any agentgym env as an OpenEnv environment (``pip install "agentgym[serve]"``).

OpenEnv (the ``openenv-core`` package) serves an env over HTTP and WebSocket with typed actions and
observations; TRL, SkyRL, ART, Unsloth, Oumi and torchforge consume such servers. ``agentgym serve
ENV_ID`` runs :func:`make_app` under uvicorn; this module holds the pieces:

- :class:`AgentGymAction`: ``{"text": "..."}``, the model's raw output. Any string is legal.
- :class:`AgentGymObservation`: ``text`` (the observation), ``terminated``, ``truncated``, ``info``
  (the env's ``info``, JSON-safe) and ``reward_components`` (the PRS terms at the episode end, the
  schema of ``agentgym.rewards.components``). ``reward`` is the step's PRS reward and ``done`` is
  ``terminated or truncated``. ``metadata`` holds the same ``info`` for in-process readers; OpenEnv
  leaves ``metadata`` off the wire, which is why ``info`` and ``reward_components`` are fields.
- :class:`AgentGymEnvironment`: one agentgym env per session, made at the first ``reset`` and closed
  (engines included: the ScienceWorld JVM, the TextWorld game) when the session ends.
- :class:`AgentGymClient`: a typed OpenEnv ``EnvClient`` for these servers; OpenEnv's own
  ``GenericEnvClient`` works as well, with plain dicts.

Reset takes ``seed``, ``episode_id`` and the env's reset options (``task_id``, ``split``,
``prs_stage``), either at the top level or in ``options``. Each WebSocket session (``/ws``) keeps its
own env across calls; the HTTP ``/reset`` and ``/step`` routes are OpenEnv's stateless ones (a new
env per request), so an episode is played over the WebSocket. At most ``max_sessions`` engines run
at once, whichever route made them (:class:`EngineSlots`). Server paths (``info["game_file"]``, a
game's folder in an error) do not go to clients: :func:`for_clients`. What the server bounds and
refuses besides (Host and Origin, sizes, idle sessions) is :mod:`agentgym.integrations.serve_limits`.
"""

from __future__ import annotations

import functools
import math
import os
import re
import threading
import time
import weakref
from collections.abc import Iterable, Mapping
from typing import Any

import gymnasium as gym

try:
    from openenv.core.client_types import StepResult
    from openenv.core.env_client import EnvClient
    from openenv.core.env_server.http_server import create_fastapi_app
    from openenv.core.env_server.interfaces import Environment
    from openenv.core.env_server.types import Action, EnvironmentMetadata, Observation, State
    from pydantic import Field
except ImportError as e:  # pragma: no cover - exercised only without the extra
    raise ImportError('the OpenEnv server needs openenv-core: pip install "agentgym[serve]"') from e

RESET_OPTIONS = ("task_id", "split", "prs_stage")
SERVER_ONLY_INFO = ("game_file",)  # info keys that name files on the server
CLOSE_WAIT_S = 30.0  # how long a reset waits for an engine that is being closed to give back its slot
# An absolute path: "/" not inside a word or after a URL's scheme, then at least two parts.
_ABSOLUTE_PATH = re.compile(r"(?<![\w.~:-])/(?:[^\s/'\"`:;,()\[\]{}<>|]+/)+[^\s/'\"`:;,()\[\]{}<>|]*")
_CLOSING: weakref.WeakSet[threading.Thread] = weakref.WeakSet()  # engines being closed right now


def jsonable(value: Any) -> Any:
    """``value`` as plain JSON types: numpy scalars and arrays become Python numbers and lists,
    non-finite floats ``None``, anything else unknown its ``str``."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [jsonable(v) for v in value]
    if hasattr(value, "tolist"):  # numpy scalars and arrays
        return jsonable(value.tolist())
    return str(value)


@functools.lru_cache(maxsize=256)
def _is_local_root(name: str) -> bool:
    return os.path.isdir(os.path.join(os.sep, name))


def _hide_path(match: re.Match) -> str:
    path = match.group(0)
    if not _is_local_root(path.split("/", 2)[1]):
        return path  # not a folder of this machine: text, not a path here
    return os.path.basename(path.rstrip("/")) or path


def for_clients(value: Any) -> Any:
    """A JSON-safe ``info`` (or text) as the server sends it: without :data:`SERVER_ONLY_INFO` keys,
    and with every absolute path on this machine cut to its last part (a game file's name, not where
    it lives on the server)."""
    if isinstance(value, str):
        return _ABSOLUTE_PATH.sub(_hide_path, value) if "/" in value else value
    if isinstance(value, dict):
        return {k: for_clients(v) for k, v in value.items() if k not in SERVER_ONLY_INFO}
    if isinstance(value, list):
        return [for_clients(v) for v in value]
    return value


class AtCapacity(RuntimeError):
    """No engine slot is free: ``max_sessions`` engines run already."""


class EngineSlots:
    """At most ``limit`` engines at once, over WebSocket sessions and HTTP requests alike. A slot is
    held from the engine's making until its close has finished; a request that finds none free waits
    only while engines are being closed (up to :data:`CLOSE_WAIT_S`), else it is refused at once."""

    def __init__(self, limit: int):
        self.limit = limit
        self.held = 0
        self.closing = 0
        self._cond = threading.Condition()

    def acquire(self) -> None:
        deadline = time.monotonic() + CLOSE_WAIT_S
        with self._cond:
            while self.held >= self.limit:
                left = deadline - time.monotonic()
                if self.closing == 0 or left <= 0:
                    raise AtCapacity(f"the server is at capacity: {self.held} of {self.limit} engines run "
                                     "(--max-sessions); try again later")
                self._cond.wait(left)
            self.held += 1

    def start_closing(self) -> None:
        with self._cond:
            self.closing += 1

    def release(self, held: bool, was_closing: bool) -> None:
        with self._cond:
            self.held -= held
            self.closing -= was_closing
            self._cond.notify_all()


class AgentGymAction(Action):
    """The model's raw output for one turn; any string is a legal action (a bad one costs format)."""

    text: str = Field(description="the model's output for this turn, e.g. <answer>...</answer>")


class AgentGymObservation(Observation):
    """What one reset or step returned."""

    text: str = Field(default="", description="the observation")
    terminated: bool = Field(default=False, description="the episode ended (task solved or answered)")
    truncated: bool = Field(default=False, description="the episode hit the turn limit or an engine fault")
    info: dict[str, Any] = Field(default_factory=dict, description="the env's info dict, JSON-safe")
    reward_components: list[dict[str, Any]] = Field(
        default_factory=list, description="the PRS terms at the episode end (name, type, value, weight, ...)")


class AgentGymState(State):
    """The session's episode: which env and task, and how far it got."""

    env_id: str = ""
    task_id: str | None = None
    group_key: str | None = None
    done: bool = False


class AgentGymEnvironment(Environment[AgentGymAction, AgentGymObservation, AgentGymState]):
    """One agentgym env behind OpenEnv's ``reset`` / ``step`` / ``state``, for one session.

    The env is made at the first ``reset``, so the stateless HTTP routes that only read ``/state``
    or ``/metadata`` start no engine. :meth:`release` closes it early (at shutdown); a later
    ``reset`` makes a new one.
    """

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, env_id: str, env_kwargs: Mapping[str, Any] | None = None,
                 slots: EngineSlots | None = None):
        super().__init__()
        self.env_id = env_id
        self.env_kwargs = dict(env_kwargs or {})
        self.slots = slots
        self._env: gym.Env | None = None
        self._state = AgentGymState(env_id=env_id)
        self._lock = threading.Lock()
        self._released: str | None = None
        self._closing = False  # close() was called and this env's slot is about to come back
        self._flag_lock = threading.Lock()

    # ----- OpenEnv's interface ---------------------------------------------------------------
    def reset(self, seed: int | None = None, episode_id: str | None = None,
              options: Mapping[str, Any] | None = None, **kwargs: Any) -> AgentGymObservation:
        unknown = sorted(set(kwargs) - set(RESET_OPTIONS))
        if unknown:
            raise ValueError(f"unknown reset argument(s) {unknown}; reset takes seed, episode_id, options "
                             f"and the options {list(RESET_OPTIONS)}")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
            raise ValueError(f"seed must be a non-negative integer or null, got {seed!r}")
        if options is not None and not isinstance(options, Mapping):
            raise ValueError(f"options must be an object, got {type(options).__name__}")
        options = {**dict(options or {}), **kwargs}
        with self._lock:
            if self._env is None:
                if self.slots is not None:
                    self.slots.acquire()
                try:
                    self._env = gym.make(self.env_id, **self.env_kwargs)
                except BaseException:
                    if self.slots is not None:
                        self.slots.release(True, False)
                    raise
                self._released = None
            obs, info = self._env.reset(seed=seed, options=options or None)
            shown = for_clients({"task_id": info.get("task_id"), "group_key": info.get("group_key")})
            self._state = AgentGymState(env_id=self.env_id, episode_id=episode_id, step_count=0, **shown)
            return self._observation(obs, None, False, False, info)

    def step(self, action: AgentGymAction, timeout_s: float | None = None, **kwargs: Any) -> AgentGymObservation:
        with self._lock:
            if self._env is None:
                raise ValueError(self._released or "no episode in this session: call reset() first (the HTTP /step "
                                 "route is stateless; play episodes over the WebSocket at /ws)")
            obs, reward, terminated, truncated, info = self._env.step(action.text)
            self._state.step_count += 1
            self._state.done = bool(terminated or truncated)
            return self._observation(obs, float(reward), terminated, truncated, info)

    @property
    def state(self) -> AgentGymState:
        return self._state

    def get_metadata(self) -> EnvironmentMetadata:
        from agentgym import __version__
        from agentgym.envs import DESCRIPTIONS

        return EnvironmentMetadata(name=self.env_id, version=__version__, author="agentgym",
                                   description=DESCRIPTIONS.get(self.env_id, f"agentgym env {self.env_id}"))

    def close(self) -> None:
        # OpenEnv calls this on its event loop when a session ends; closing an engine takes a while
        # (a JVM: about 0.4 s), so it happens on a thread of its own and other sessions go on.
        if self.slots is not None and self._env is not None:
            with self._flag_lock:  # not self._lock: this runs on the event loop and must not wait
                if not self._closing:
                    self._closing = True
                    self.slots.start_closing()
        closer = threading.Thread(target=self.release, args=(None,), name="agentgym-close", daemon=True)
        _CLOSING.add(closer)
        closer.start()

    # ----- sessions ---------------------------------------------------------------------------
    def release(self, reason: str | None) -> None:
        """Close the env and its engine now, and give back its slot. ``reason``: what a later
        ``step`` is told (until the next ``reset`` makes a new env)."""
        with self._lock:
            env, self._env = self._env, None
            self._released = reason
        with self._flag_lock:
            was_closing, self._closing = self._closing, False
        try:
            if env is not None:
                env.close()
        finally:
            if self.slots is not None:
                self.slots.release(env is not None, was_closing)

    @property
    def holds_engine(self) -> bool:
        return self._env is not None

    def _observation(self, obs: str, reward: float | None, terminated: bool, truncated: bool,
                     info: Mapping[str, Any]) -> AgentGymObservation:
        info = for_clients(jsonable(info))
        return AgentGymObservation(text=for_clients(obs), reward=reward, done=bool(terminated or truncated),
                                   terminated=bool(terminated), truncated=bool(truncated), info=info,
                                   reward_components=info.get("reward_components", []), metadata=info)


class SessionFactory:
    """Makes one :class:`AgentGymEnvironment` per session (and per stateless HTTP request), all
    drawing engines from one :class:`EngineSlots`, and keeps track of the live ones so that
    shutdown closes them all."""

    def __init__(self, env_id: str, env_kwargs: Mapping[str, Any] | None = None, max_engines: int = 16):
        self.env_id = env_id
        self.env_kwargs = dict(env_kwargs or {})
        self.slots = EngineSlots(max_engines)
        self._live: weakref.WeakSet[AgentGymEnvironment] = weakref.WeakSet()
        self._lock = threading.Lock()
        self.__name__ = f"agentgym:{env_id}"  # OpenEnv names the factory in its errors

    def __call__(self) -> AgentGymEnvironment:
        env = AgentGymEnvironment(self.env_id, self.env_kwargs, self.slots)
        with self._lock:
            self._live.add(env)
        return env

    def live(self) -> list[AgentGymEnvironment]:
        with self._lock:
            return list(self._live)

    def engines(self) -> int:
        """How many sessions hold a made env (an engine) now."""
        return sum(env.holds_engine for env in self.live())

    def close_all(self) -> None:
        """Close every session's env and wait for the closes already under way."""
        for env in self.live():
            env.release("the server is shutting down")
        for closer in list(_CLOSING):
            closer.join()


def make_app(env_id: str, env_kwargs: Mapping[str, Any] | None = None, max_sessions: int = 16,
             session_timeout_s: float | None = 600.0, max_message_bytes: int | None = None,
             allowed_hosts: Iterable[str] = (), allowed_origins: Iterable[str] = ()):
    """The FastAPI app that serves ``env_id`` (OpenEnv's routes: ``/ws``, ``/reset``, ``/step``,
    ``/state``, ``/schema``, ``/metadata``, ``/health``). ``app.state.sessions`` is the
    :class:`SessionFactory`.

    ``max_sessions`` bounds the open WebSocket sessions and the engines running at once (a stateless
    ``POST /reset`` holds one while it runs; one over the bound is a 503 that says why). A session
    that waits for its client longer than ``session_timeout_s`` is closed, slot and env included
    (None: never). ``max_message_bytes`` (default 4 MiB) bounds a request body or WebSocket message;
    ``allowed_hosts`` and ``allowed_origins`` are the names and web origins accepted besides this
    machine's own (see :mod:`agentgym.integrations.serve_limits`). Validation errors are short: they
    do not quote the request back.
    """
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import JSONResponse
    from starlette.exceptions import HTTPException

    from agentgym.integrations.serve_limits import DEFAULT_MAX_MESSAGE_BYTES, ServeLimits, short_errors

    if max_sessions < 1:
        raise ValueError(f"max_sessions must be >= 1, got {max_sessions}")
    if session_timeout_s is not None and not (math.isfinite(session_timeout_s) and session_timeout_s > 0):
        raise ValueError(f"session_timeout_s must be a positive number of seconds or None, got {session_timeout_s}")
    max_message_bytes = DEFAULT_MAX_MESSAGE_BYTES if max_message_bytes is None else max_message_bytes
    if max_message_bytes < 1:
        raise ValueError(f"max_message_bytes must be >= 1, got {max_message_bytes}")
    factory = SessionFactory(env_id, env_kwargs, max_engines=max_sessions)
    app = create_fastapi_app(factory, AgentGymAction, AgentGymObservation, max_concurrent_envs=max_sessions)
    app.title = f"agentgym {env_id}"

    async def bad_request(_request, exc: ValueError):
        return JSONResponse(status_code=400, content={"detail": str(exc)})

    async def at_capacity(_request, exc: AtCapacity):
        return JSONResponse(status_code=503, content={"detail": str(exc)}, headers={"Retry-After": "5"})

    async def invalid_request(_request, exc: RequestValidationError):
        return JSONResponse(status_code=422, content={"detail": short_errors(exc.errors())})

    async def http_error(_request, exc: HTTPException):
        return JSONResponse(status_code=exc.status_code, content={"detail": short_errors(exc.detail)},
                            headers=exc.headers)

    app.add_exception_handler(ValueError, bad_request)
    app.add_exception_handler(AtCapacity, at_capacity)
    app.add_exception_handler(RequestValidationError, invalid_request)
    app.add_exception_handler(HTTPException, http_error)
    app.add_middleware(ServeLimits, max_sessions=max_sessions, session_timeout_s=session_timeout_s,
                       max_message_bytes=max_message_bytes, allowed_hosts=tuple(allowed_hosts),
                       allowed_origins=tuple(allowed_origins))
    app.state.sessions = factory
    return app


class AgentGymClient(EnvClient[AgentGymAction, AgentGymObservation, AgentGymState]):
    """OpenEnv's WebSocket client, typed for an ``agentgym serve`` server.

    >>> # with AgentGymClient(base_url="http://127.0.0.1:8000") as env:
    >>> #     result = env.reset(seed=0)
    >>> #     result = env.step("<answer>Paris</answer>")   # a str or an AgentGymAction
    """

    def _step_payload(self, action: AgentGymAction | str) -> dict[str, Any]:
        return {"text": action} if isinstance(action, str) else action.model_dump(exclude={"metadata"})

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[AgentGymObservation]:
        observation = AgentGymObservation(**payload.get("observation", {}), reward=payload.get("reward"),
                                          done=payload.get("done", False))
        return StepResult(observation=observation, reward=payload.get("reward"), done=payload.get("done", False))

    def _parse_state(self, payload: dict[str, Any]) -> AgentGymState:
        return AgentGymState(**payload)
