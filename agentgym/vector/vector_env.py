"""``AgentVectorEnv``: many text episodes at once, in GRPO groups, on any backend.

What it adds to Gymnasium's ``VectorEnv`` contract (docs/vector.md has the long version):

- **Groups.** Envs ``[g*G, (g+1)*G)`` form group ``g``. Every env of a group starts each episode
  with the same reset seed and options, so they play the same task and their ``info["group_key"]``
  matches.
- **Seeds.** ``reset(seed=s)`` starts group ``g`` with seed ``s + g`` (with ``G = 1`` that is
  Gymnasium's ``s + i``). A group's later episodes (``reset()`` without a seed, autoresets) use the
  seeds that ``numpy.random.default_rng(s + g)`` draws, in order: the k-th episode of every env in a
  group is the same task. ``seed`` may also be a list with one seed per group.
- **Finished envs wait.** Autoreset is off by default. An env whose episode ended keeps its final
  observation; stepping it again is a no-op (reward 0, flags unchanged, no engine call).
  ``reset(options={"reset_mask": mask})`` resets a subset. ``autoreset_mode`` NEXT_STEP and
  SAME_STEP behave as in Gymnasium.
- **Faults.** A fault (the env raised, its worker died or hung past ``step_timeout`` or
  ``reset_timeout``, :class:`~agentgym.vector.options.WorkerOptions`) ends that env's episode as
  truncated with ``info["error"]``; the backend restarts what it must and the rest of the batch is
  untouched.
- **Ready-first.** Besides lockstep ``step()``, ``send(actions, env_ids)`` / ``send_reset(env_ids)``
  start work on some envs and return at once, and ``recv(min_envs)`` returns whichever envs are
  done, so a slow reset or a hung engine holds up no one (EnvPool's async pattern).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from agentgym.envs.base import DataRefused
from agentgym.vector.backend import Backend, VectorEnvClosedError
from agentgym.vector.backends import build_backend
from agentgym.vector.host import EnvFactory
from agentgym.vector.infos import batch_infos
from agentgym.vector.options import BackendOptions, WorkerOptions, backend_options

_SEED_SPACE = 2**31
# Options that pick one particular task: not carried over to the automatic resets that follow.
_ONE_EPISODE_OPTIONS = ("task_id",)


class ReadyBatch(NamedTuple):
    """What :meth:`AgentVectorEnv.recv` returns: the envs that are ready, ordered by id. Every
    field is aligned with ``env_ids``; ``infos`` is in Gymnasium's vector layout over them."""

    env_ids: np.ndarray
    observations: tuple[str, ...]
    rewards: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray
    infos: dict[str, Any]
    resets: np.ndarray


class AgentVectorEnv(VectorEnv):
    """A batch of agentgym envs (any ``gymnasium.Env[str, str]`` works) behind one interface.

    Args:
        env: a registered env id, or a picklable callable that returns a new env.
        num_envs: how many envs; a multiple of ``group_size``.
        group_size: envs per group (G in GRPO). Each group plays one task per episode.
        backend: where the envs run and how they are guarded: a :class:`SyncOptions` (in this
            process, the default), :class:`ProcessOptions` (worker processes) or :class:`RayOptions`
            (Ray actors) from :mod:`agentgym.vector.options`, or the backend's name.
        env_kwargs: keyword arguments for every env.
        autoreset_mode: ``AutoresetMode.DISABLED`` (default), ``NEXT_STEP`` or ``SAME_STEP``.
        **backend_keywords: with a backend name, its options as keywords (``envs_per_worker``,
            ``step_timeout``, ``reset_timeout``, ``startup_timeout``, ``mp_context``,
            ``ray_actor_options``, ``ray_init_kwargs``, ``sticky_calls``); see
            :func:`~agentgym.vector.options.backend_options`.
    """

    def __init__(
        self,
        env: str | Callable[[], gym.Env],
        num_envs: int,
        *,
        group_size: int = 1,
        backend: str | BackendOptions = "sync",
        env_kwargs: dict[str, Any] | None = None,
        autoreset_mode: AutoresetMode | str = AutoresetMode.DISABLED,
        **backend_keywords: Any,
    ):
        if not isinstance(num_envs, (int, np.integer)) or num_envs < 1:
            raise ValueError(f"num_envs must be a positive int, got {num_envs!r}")
        if not isinstance(group_size, (int, np.integer)) or group_size < 1:
            raise ValueError(f"group_size must be a positive int, got {group_size!r}")
        if num_envs % group_size:
            raise ValueError(f"num_envs ({num_envs}) must be a multiple of group_size ({group_size})")
        options = backend_options(backend, **backend_keywords)
        self.autoreset_mode = AutoresetMode(autoreset_mode)
        self.num_envs = int(num_envs)
        self.group_size = int(group_size)
        self.num_groups = self.num_envs // self.group_size
        self.backend_options = options
        self.backend_name = options.name
        # The sync backend cannot interrupt a call: its jobs run without a timeout.
        workers = options if isinstance(options, WorkerOptions) else None
        self.step_timeout = workers.step_timeout if workers else None
        self.reset_timeout = workers.reset_timeout if workers else None
        self.startup_timeout = workers.startup_timeout if workers else None

        env_kwargs = dict(env_kwargs or {})
        if isinstance(env, str):
            factory = EnvFactory.from_id(env, **env_kwargs)
        else:
            factory = EnvFactory(env_fn=env, kwargs=env_kwargs)
        self.backend: Backend = build_backend(options, factory, self.num_envs)

        described = self.backend.env_description
        self.single_observation_space = described["observation_space"]
        self.single_action_space = described["action_space"]
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self.metadata = {**described["metadata"], "autoreset_mode": self.autoreset_mode}
        self.render_mode = described["render_mode"]

        n = self.num_envs
        self._obs: list[str] = [""] * n
        self._terminated = np.zeros(n, dtype=np.bool_)
        self._truncated = np.zeros(n, dtype=np.bool_)
        self._started = np.zeros(n, dtype=np.bool_)
        self._task_keys: list[dict[str, Any]] = [{} for _ in range(n)]
        self._last_options: list[dict[str, Any]] = [{} for _ in range(n)]
        self._episode_index = np.full(n, -1, dtype=np.int64)
        self._group_rngs: list[np.random.Generator | None] = [None] * self.num_groups
        self._group_seeds: list[list[int]] = [[] for _ in range(self.num_groups)]
        # send/recv: the job each env has in flight, finished envs' no-op results not yet
        # received, resets retried once, and SAME_STEP final steps waiting for their reset.
        self._kinds: dict[int, tuple] = {}
        self._noops: list[int] = []
        self._retried: set[int] = set()
        self._final: dict[int, tuple] = {}

    # ----- seeds -----------------------------------------------------------------------------
    def group_of(self, i: int) -> int:
        """The group env ``i`` belongs to."""
        return i // self.group_size

    def _start_group(self, g: int, base: int | None) -> None:
        if base is None:
            base = int(self.np_random.integers(_SEED_SPACE))
        self._group_seeds[g] = [int(base)]
        self._group_rngs[g] = None  # made when a second episode needs a seed

    def _episode_seed(self, i: int) -> int:
        """Advance env ``i`` to its next episode and return that episode's seed."""
        g = self.group_of(i)
        if not self._group_seeds[g]:
            self._start_group(g, None)
        self._episode_index[i] += 1
        seeds = self._group_seeds[g]
        while len(seeds) <= self._episode_index[i]:
            if self._group_rngs[g] is None:
                self._group_rngs[g] = np.random.default_rng(seeds[0])
            seeds.append(int(self._group_rngs[g].integers(_SEED_SPACE)))
        return seeds[self._episode_index[i]]

    def _group_bases(self, seed) -> list[int | None] | None:
        """Per-group base seeds from the ``seed`` argument of ``reset`` (None: keep going)."""
        if seed is None:
            return None
        if isinstance(seed, (int, np.integer)):
            return [int(seed) + g for g in range(self.num_groups)]
        seed = list(seed)
        if len(seed) == self.num_groups:
            return seed
        if len(seed) == self.num_envs:
            per_group = [seed[g * self.group_size:(g + 1) * self.group_size] for g in range(self.num_groups)]
            if any(len(set(part)) != 1 for part in per_group):
                raise ValueError("per-env seeds must be equal within each group (a group plays one task); "
                                 "pass one seed per group instead")
            return [part[0] for part in per_group]
        raise ValueError(f"seed must be None, an int, or a list of {self.num_groups} (one per group) "
                         f"or {self.num_envs} (one per env) seeds, got a list of {len(seed)}")

    # ----- reset -----------------------------------------------------------------------------
    def reset(self, *, seed: int | Sequence[int | None] | None = None, options: dict[str, Any] | None = None):
        """Reset every env, or those in ``options["reset_mask"]``.

        ``options`` go to every env (e.g. ``split``, ``prs_stage``), except ``reset_mask`` and
        ``group_options``: a list with one dict per group, merged into that group's options (e.g.
        ``[{"task_id": "a"}, {"task_id": "b"}]``).
        """
        self._check_no_pending("reset")
        options = dict(options or {})
        mask = self._check_mask(options.pop("reset_mask", None))
        if isinstance(seed, (int, np.integer)):
            super().reset(seed=int(seed))
        jobs = self._reset_jobs([i for i in range(self.num_envs) if mask[i]], seed, options)
        items = []
        for i, (obs, info) in sorted(self._run_resets(jobs).items()):
            self._begin_episode(i, obs, info)
            items.append((i, info))
        return tuple(self._obs), batch_infos(items, self.num_envs)

    def _reset_jobs(self, indices: list[int], seed, options: dict[str, Any]) -> dict[int, tuple]:
        """The reset jobs for envs ``indices``: seeds drawn per group, options merged per group."""
        group_options = options.pop("group_options", None)
        if group_options is not None and len(group_options) != self.num_groups:
            raise ValueError(f"group_options must have one dict per group ({self.num_groups}), got {len(group_options)}")
        bases = self._group_bases(seed)
        if bases is not None:
            for g in sorted({self.group_of(i) for i in indices}):
                self._start_group(g, bases[g])
            for i in indices:
                self._episode_index[i] = -1
        jobs = {}
        for i in indices:
            env_options = {**options, **(group_options[self.group_of(i)] if group_options else {})}
            self._last_options[i] = {k: v for k, v in env_options.items() if k not in _ONE_EPISODE_OPTIONS}
            jobs[i] = ("reset", self._episode_seed(i), env_options)
        return jobs

    def _check_mask(self, mask) -> np.ndarray:
        if mask is None:
            return np.ones(self.num_envs, dtype=np.bool_)
        mask = np.asarray(mask)
        if mask.shape != (self.num_envs,) or mask.dtype != np.bool_:
            raise ValueError(f"options['reset_mask'] must be a bool array of shape ({self.num_envs},), "
                             f"got dtype {mask.dtype} and shape {mask.shape}")
        if not mask.any():
            raise ValueError("options['reset_mask'] must select at least one env")
        return mask

    def _run_resets(self, jobs: dict[int, tuple]) -> dict[int, tuple[str, dict]]:
        """Run reset jobs; a reset that faults is retried once (on a fresh worker), then raises."""
        out = {}
        results = self.backend.run(jobs, self.reset_timeout)
        retry = {i: jobs[i] for i, r in results.items() if r[0] == "fault"}
        if retry:
            results.update(self.backend.run(retry, self.reset_timeout))
        for i, result in results.items():
            if result[0] == "refused":
                raise DataRefused(result[1])
            if result[0] == "fault":
                raise RuntimeError(f"env {i} failed to reset twice: {result[1]}\n{result[2] if len(result) > 2 else ''}")
            out[i] = (result[1], result[2])
        return out

    def _begin_episode(self, i: int, obs: str, info: dict) -> None:
        self._obs[i] = obs
        self._terminated[i] = self._truncated[i] = False
        self._started[i] = True
        self._task_keys[i] = {k: info[k] for k in ("task_id", "group_key") if k in info}

    # ----- step ------------------------------------------------------------------------------
    def step(self, actions: Sequence[str]):
        """Step every running env. Finished envs are skipped: their observation and flags stay,
        their reward is 0 and their info is empty (see ``autoreset_mode`` for the alternatives)."""
        self._check_no_pending("step")
        actions = list(actions)
        if len(actions) != self.num_envs:
            raise ValueError(f"expected {self.num_envs} actions, got {len(actions)}")
        if not self._started.any():
            raise gym.error.ResetNeeded("call reset() before step()")
        jobs: dict[int, tuple] = {}
        for i in range(self.num_envs):
            if self._started[i]:
                job = self._job_for(i, actions[i])
                if job is not None:
                    jobs[i] = job
        try:
            results = self.backend.run(jobs, self._timeout_for(jobs)) if jobs else {}
        except BaseException:
            # Interrupted mid-batch: the envs involved are in an unknown state; they wait for reset.
            for i in jobs:
                self._truncated[i] = True
            raise

        rewards = np.zeros(self.num_envs, dtype=np.float64)
        items: list[tuple[int, dict]] = []
        failed_resets = {i: jobs[i] for i, r in results.items() if jobs[i][0] == "reset" and r[0] != "ok"}
        if failed_resets:
            results.update({i: ("ok", *pair) for i, pair in self._run_resets(failed_resets).items()})
        finished = []
        for i in sorted(results):
            result = results[i]
            if jobs[i][0] == "reset":
                self._begin_episode(i, result[1], result[2])
                items.append((i, result[2]))
                continue
            _, rewards[i], terminated, truncated, info = self._take_step(i, result)
            if terminated or truncated:
                finished.append(i)
                if self.autoreset_mode == AutoresetMode.SAME_STEP:
                    continue  # its info goes under final_info, next to the reset info
            items.append((i, info))
        terminated_out, truncated_out = self._terminated.copy(), self._truncated.copy()

        if self.autoreset_mode == AutoresetMode.SAME_STEP and finished:
            final = {i: (self._obs[i], self._info_of(results[i], i)) for i in finished}
            resets = self._run_resets({i: ("reset", self._episode_seed(i), dict(self._last_options[i]))
                                       for i in finished})
            for i in finished:
                items.append((i, {"final_obs": final[i][0], "final_info": final[i][1]}))
                obs, info = resets[i]
                self._begin_episode(i, obs, info)
                items.append((i, info))
        return tuple(self._obs), rewards, terminated_out, truncated_out, batch_infos(items, self.num_envs)

    def _job_for(self, i: int, action: str) -> tuple | None:
        """What stepping env ``i`` with ``action`` means: a step, the reset of a finished env
        (NEXT_STEP autoreset), or nothing (a finished env waits)."""
        if self._terminated[i] or self._truncated[i]:
            if self.autoreset_mode == AutoresetMode.NEXT_STEP:
                return ("reset", self._episode_seed(i), dict(self._last_options[i]))
            return None
        return ("step", action)

    def _timeout_for(self, jobs: dict[int, tuple]) -> float | None:
        """The timeout of a batch of jobs: a batch that mixes steps and resets (autoreset) gets the
        longer of the two."""
        timeouts = {self.reset_timeout if job[0] == "reset" else self.step_timeout for job in jobs.values()}
        return None if None in timeouts else max(timeouts, default=self.step_timeout)

    def _take_step(self, i: int, result: tuple) -> tuple[str, float, bool, bool, dict]:
        """Record env ``i``'s step result (a fault truncates the episode with ``info["error"]``)."""
        if result[0] == "ok":
            _, obs, reward, terminated, truncated, info = result
        else:
            obs, reward, terminated, truncated = self._obs[i], 0.0, False, True
            info = self._fault_info(i, result[1])
        self._obs[i] = obs
        self._terminated[i], self._truncated[i] = terminated, truncated
        return obs, reward, terminated, truncated, info

    def _info_of(self, result: tuple, i: int) -> dict:
        return result[5] if result[0] == "ok" else self._fault_info(i, result[1])

    def _fault_info(self, i: int, message: str) -> dict[str, Any]:
        return {**self._task_keys[i], "reward_terms": {}, "action_valid": False, "parse_error": None,
                "error": message, "success": False, "episode_terms": {}, "reward_components": [], "metrics": {}}

    # ----- ready-first: send / recv --------------------------------------------------------------
    def send(self, actions: Sequence[str], env_ids: Sequence[int] | None = None) -> None:
        """Start stepping envs ``env_ids`` (default: every env with nothing in flight) with one
        action each, and return at once; :meth:`recv` collects the results as they finish.

        A finished env follows ``autoreset_mode``: it waits (a no-op result, DISABLED) or is
        reset (NEXT_STEP); with SAME_STEP its reset starts as soon as its last step is back.
        """
        ids = self._check_ids(env_ids, "send")
        actions = list(actions)
        if len(actions) != len(ids):
            raise ValueError(f"expected one action per env id ({len(ids)}), got {len(actions)}")
        not_started = [i for i in ids if not self._started[i]]
        if not_started:
            raise gym.error.ResetNeeded(f"envs {not_started} were never reset: send_reset() them first")
        steps, resets = {}, {}
        for i, action in zip(ids, actions):
            job = self._job_for(i, action)
            if job is None:
                self._noops.append(i)
            elif job[0] == "reset":
                resets[i] = job
            else:
                steps[i] = job
        self._submit(steps)
        self._submit(resets)

    def send_reset(self, env_ids: Sequence[int] | None = None, *, seed=None,
                   options: dict[str, Any] | None = None) -> None:
        """Start resetting envs ``env_ids`` (default: every env with nothing in flight) and return
        at once. ``seed`` and ``options`` as in :meth:`reset` (seeds are per group, so the k-th
        episode of every env in a group is the same task, whenever each starts it)."""
        ids = self._check_ids(env_ids, "send_reset")
        options = dict(options or {})
        if "reset_mask" in options:
            raise ValueError("send_reset() takes env_ids, not options['reset_mask']")
        self._submit(self._reset_jobs(ids, seed, options))

    def recv(self, min_envs: int = 1, timeout: float | None = None) -> ReadyBatch:
        """Wait until at least ``min_envs`` of the envs sent to are done (or ``timeout`` seconds
        pass), then return every result that is ready, ordered by env id.

        A reset's result has reward 0, both flags False and ``resets`` True. Faults are results
        too: the env is truncated with ``info["error"]`` (a reset is retried once first, unless the env
        refused what it was asked to load: :class:`~agentgym.envs.base.DataRefused`, which the
        blocking :meth:`reset` and :meth:`step` raise).
        """
        self._check_open("recv")
        if not self._kinds and not self._noops:
            raise gym.error.NoAsyncCallError("recv() with nothing sent: call send() or send_reset() first", "recv")
        end = float("inf") if timeout is None else time.monotonic() + timeout
        out: dict[int, tuple] = {}
        for i in self._noops:
            out[i] = (self._obs[i], 0.0, bool(self._terminated[i]), bool(self._truncated[i]), {}, False)
        self._noops = []
        target = min(int(min_envs), len(out) + len(self._kinds))
        while self._kinds:
            need = target - len(out)
            wait = 0.0 if need <= 0 else (None if end == float("inf") else max(0.0, end - time.monotonic()))
            try:
                results = self.backend.poll(max(1, need), wait)
            except BaseException:
                # Interrupted: jobs the backend gave up on leave their envs truncated, waiting for a reset.
                for i in [i for i in self._kinds if i not in self.backend.in_flight]:
                    del self._kinds[i]
                    self._truncated[i] = True
                raise
            for i, result in results.items():
                outcome = self._take_async(i, self._kinds.pop(i), result)
                if outcome is not None:
                    out[i] = outcome
            if len(out) >= target or time.monotonic() >= end:
                break
        ids = sorted(out)
        infos = batch_infos([(k, out[i][4]) for k, i in enumerate(ids)], len(ids))
        return ReadyBatch(
            env_ids=np.array(ids, dtype=np.int64),
            observations=tuple(out[i][0] for i in ids),
            rewards=np.array([out[i][1] for i in ids], dtype=np.float64),
            terminated=np.array([out[i][2] for i in ids], dtype=np.bool_),
            truncated=np.array([out[i][3] for i in ids], dtype=np.bool_),
            infos=infos,
            resets=np.array([out[i][5] for i in ids], dtype=np.bool_),
        )

    @property
    def pending(self) -> tuple[int, ...]:
        """The envs sent to whose results :meth:`recv` has not returned yet."""
        return tuple(sorted({*self._kinds, *self._noops}))

    def _check_open(self, caller: str) -> None:
        if self.closed:
            raise VectorEnvClosedError(f"{self!r} is closed: {caller}() after close(); make a new one")

    def _check_ids(self, env_ids, caller: str) -> list[int]:
        self._check_open(caller)
        if env_ids is None:
            return [i for i in range(self.num_envs) if i not in self._kinds and i not in self._noops]
        ids = [int(i) for i in env_ids]
        bad = [i for i in ids if not 0 <= i < self.num_envs]
        if bad:
            raise ValueError(f"env ids {bad} out of range for {self.num_envs} envs")
        if len(set(ids)) != len(ids):
            raise ValueError(f"env ids repeat: {ids}")
        busy = [i for i in ids if i in self._kinds or i in self._noops]
        if busy:
            raise gym.error.AlreadyPendingCallError(
                f"{caller}(): envs {busy} still have results to recv()", caller)
        return ids

    def _check_no_pending(self, caller: str) -> None:
        self._check_open(caller)
        if self._kinds or self._noops:
            raise gym.error.AlreadyPendingCallError(
                f"{caller}() while envs {list(self.pending)} have results to recv(): recv() them first", caller)

    def _submit(self, jobs: dict[int, tuple]) -> None:
        if not jobs:
            return
        self.backend.submit(jobs, self._timeout_for(jobs), ready_first=True)
        for i, job in jobs.items():
            self._kinds[i] = job

    def _take_async(self, i: int, job: tuple, result: tuple) -> tuple | None:
        """One result of :meth:`recv`: ``(obs, reward, terminated, truncated, info, is_reset)``, or
        None while the env has more to do (a retried reset, a SAME_STEP autoreset)."""
        if job[0] == "reset":
            final = self._final.pop(i, None)
            if result[0] in ("fault", "refused"):
                if result[0] == "fault" and i not in self._retried:  # a refusal would come again
                    self._retried.add(i)
                    if final is not None:
                        self._final[i] = final
                    self._submit({i: job})
                    return None
                self._retried.discard(i)
                self._terminated[i], self._truncated[i] = False, True
                info = self._fault_info(i, f"reset failed twice: {result[1]}" if result[0] == "fault" else
                                        f"reset refused: {result[1]}")
                return (self._obs[i], 0.0, False, True, info, False)
            self._retried.discard(i)
            _, obs, info = result
            self._begin_episode(i, obs, info)
            if final is None:
                return (obs, 0.0, False, False, info, True)
            final_obs, reward, terminated, truncated, final_info = final
            return (obs, reward, terminated, truncated,
                    {**info, "final_obs": final_obs, "final_info": final_info}, True)
        obs, reward, terminated, truncated, info = self._take_step(i, result)
        if (terminated or truncated) and self.autoreset_mode == AutoresetMode.SAME_STEP:
            self._final[i] = (obs, reward, terminated, truncated, info)
            self._submit({i: ("reset", self._episode_seed(i), dict(self._last_options[i]))})
            return None
        return (obs, reward, terminated, truncated, info, False)

    # ----- the rest of the VectorEnv interface ------------------------------------------------
    @property
    def done(self) -> np.ndarray:
        """Which envs have finished their episode (and wait for a reset)."""
        return self._terminated | self._truncated

    def call(self, name: str, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        """Call a method (or read an attribute) on every env, e.g. ``call("set_prs_stage", 1)``."""
        self._check_no_pending("call")
        return tuple(self.backend.call(name, args, kwargs))

    def get_attr(self, name: str) -> tuple[Any, ...]:
        self._check_no_pending("get_attr")
        return tuple(self.backend.get_attr(name))

    def set_attr(self, name: str, values: Any) -> None:
        """Set an attribute on every env: one value for all, or a list/tuple with one per env."""
        self._check_no_pending("set_attr")
        if not isinstance(values, (list, tuple)):
            values = [values] * self.num_envs
        if len(values) != self.num_envs:
            raise ValueError(f"expected one value per env ({self.num_envs}), got {len(values)}")
        self.backend.set_attr(name, list(values))

    def render(self) -> tuple[Any, ...]:
        self._check_open("render")
        return self.call("render")

    def worker_pids(self) -> list[int | None]:
        """The process id that holds each env (workers for ``process``/``ray``)."""
        return self.backend.worker_pids()

    @property
    def restarts(self) -> int:
        """How many workers were restarted after a fault."""
        return getattr(self.backend, "restarts", 0)

    def close_extras(self, **kwargs: Any) -> None:
        self.backend.close()

    def __del__(self):
        if not getattr(self, "closed", True) and hasattr(self, "backend"):
            try:
                self.close()
            except Exception:  # noqa: BLE001  interpreter shutdown
                pass

    def __repr__(self) -> str:
        name = self.spec.id if self.spec else self.backend.factory.name if hasattr(self, "backend") else ""
        return (f"AgentVectorEnv({name}, num_envs={self.num_envs}, "
                f"group_size={self.group_size}, backend={self.backend_name!r})")
