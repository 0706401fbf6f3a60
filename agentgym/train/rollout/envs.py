"""What the rollout collector drives: ``num_groups * group_size`` envs, group g's envs on one task.

:class:`EnvBatch` wraps an ``agentgym.make_vec`` vector env (any backend: in this process, worker
processes or Ray actors). Envs ``[g * G, (g + 1) * G)`` form group g and are reset with the same
seed and options, so they start the same task. Only the envs named in a call are reset or stepped:
an episode the collector ended itself (turn or prompt limit) is never sent another action.

Steps come two ways: ``step_some`` (every named env, then return) and ``send_some`` then
``recv_some`` (return at once, then collect results as they are ready), which the overlapped
collector uses to generate for some episodes while the envs of others are still stepping.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from agentgym.vector import AgentVectorEnv, make_vec
from agentgym.vector.options import BackendOptions

StepResult = tuple[str, float, bool, bool, dict]


def _unbatch_info(infos: dict, n: int) -> list[dict]:
    """Gymnasium vector infos (key -> array, ``_key`` -> mask) as one dict per env."""
    out: list[dict[str, Any]] = [{} for _ in range(n)]
    for key, value in infos.items():
        if key.startswith("_"):
            continue
        mask = infos.get("_" + key)
        if isinstance(value, dict):
            sub = _unbatch_info(value, n)
            for i in range(n):
                if mask is None or mask[i]:
                    out[i][key] = sub[i]
            continue
        for i in range(n):
            if mask is None or mask[i]:
                item = value[i]
                out[i][key] = item.item() if isinstance(item, np.generic) else item
    return out


class EnvBatch:
    """``num_groups`` groups of ``group_size`` envs: an ``agentgym.make_vec`` vector env with
    groups (autoreset off, finished envs stay finished).

    Resets go through the vector env's reset mask and per-group options; steps through its
    ready-first ``send``/``recv`` for exactly the envs named, so no other env gets an action.
    On the ``sync`` backend nothing runs concurrently: :meth:`recv_some` waits for every pending
    step, as ``step_some`` does, rather than stepping envs one by one.
    """

    def __init__(self, vec_env, num_groups: int, group_size: int):
        if vec_env.num_envs != num_groups * group_size:
            raise ValueError(f"vector env has {vec_env.num_envs} envs, expected {num_groups} x {group_size}")
        self.vec = vec_env
        self.num_groups, self.group_size = int(num_groups), int(group_size)
        self.concurrent: bool = getattr(vec_env, "backend_name", "sync") != "sync"
        """Whether sent steps run while the caller does other work (worker processes, Ray actors).
        When False, :meth:`recv_some` runs every sent step itself, so overlapping gains nothing."""

    @property
    def num_envs(self) -> int:
        return self.num_groups * self.group_size

    def _check_seeds(self, seeds: Sequence[int], group_options: Sequence[dict] | None) -> list[dict]:
        if not 1 <= len(seeds) <= self.num_groups:
            raise ValueError(f"need 1 to {self.num_groups} group seeds, got {len(seeds)}")
        if group_options is not None and len(group_options) != len(seeds):
            raise ValueError(f"need one group_options dict per seed ({len(seeds)}), got {len(group_options)}")
        return [dict(o) for o in group_options] if group_options is not None else [{} for _ in seeds]

    def reset_groups(self, seeds: Sequence[int], options: dict | None = None,
                     group_options: Sequence[dict] | None = None) -> list[tuple[str, dict]]:
        """Start the envs of groups ``0 .. len(seeds) - 1``: group g on the task chosen by
        ``seeds[g]`` and ``{**options, **group_options[g]}``; (obs, info) per env, group-major.
        Groups past ``len(seeds)`` are left alone."""
        per_group = self._check_seeds(seeds, group_options)
        k, n = len(seeds), len(seeds) * self.group_size
        # one seed per group: every env of group g starts the task seeds[g] picks; the groups
        # not asked for keep their seeds and are not reset
        all_seeds = [int(s) for s in seeds] + [0] * (self.num_groups - k)
        mask = np.zeros(self.num_envs, dtype=np.bool_)
        mask[:n] = True
        reset_options = {**(options or {}), "group_options": per_group + [{}] * (self.num_groups - k)}
        if k < self.num_groups:
            reset_options["reset_mask"] = mask
        obs, infos = self.vec.reset(seed=all_seeds, options=reset_options)
        per_env = _unbatch_info(infos, self.num_envs)
        return [(str(obs[i]), per_env[i]) for i in range(n)]

    def step_some(self, actions: dict[int, str]) -> dict[int, StepResult]:
        """Step the envs named in ``actions`` (env index -> action); the others are left alone."""
        if not actions:
            return {}
        if self.vec.pending:
            raise RuntimeError(f"step_some() while envs {list(self.vec.pending)} have results to recv_some()")
        self.send_some(actions)
        return self.recv_some(len(actions))

    def send_some(self, actions: dict[int, str]) -> None:
        """Start stepping the envs named in ``actions`` and return; :meth:`recv_some` collects them."""
        if actions:
            ids = sorted(actions)
            self.vec.send([actions[i] for i in ids], ids)

    def recv_some(self, min_results: int = 1, timeout: float | None = None) -> dict[int, StepResult]:
        """Results of sent steps that are ready, each returned once: at least ``min_results`` of
        them (fewer if fewer are pending, or if ``timeout`` seconds pass first; 0 never waits)."""
        pending = self.vec.pending
        if not pending:
            return {}
        if not self.concurrent:
            min_results, timeout = len(pending), None
        got = self.vec.recv(min_envs=min_results, timeout=timeout)
        per_env = _unbatch_info(got.infos, len(got.env_ids))
        return {int(i): (str(got.observations[k]), float(got.rewards[k]), bool(got.terminated[k]),
                         bool(got.truncated[k]), per_env[k]) for k, i in enumerate(got.env_ids)}

    @property
    def pending(self) -> frozenset[int]:
        """The envs sent an action whose result :meth:`recv_some` has not returned yet."""
        return frozenset(self.vec.pending)

    def set_prs_stage(self, stage: float | None) -> None:
        self.vec.call("set_prs_stage", stage)

    def close(self) -> None:
        self.vec.close()


VecEnvBatch = EnvBatch  # its name while a batch of plain envs stood beside it


def make_env_batch(env: str | Callable[[], Any], num_groups: int, group_size: int,
                   backend: str | BackendOptions = "sync", env_kwargs: dict[str, Any] | None = None) -> EnvBatch:
    """``num_groups`` groups of ``group_size`` envs on ``agentgym.make_vec``: ``env`` is a registered
    id or a callable that makes one env; ``backend`` a backend name or its options object
    (:mod:`agentgym.vector.options`; a trainer's comes from ``EnvConfig.backend_options()``)."""
    if isinstance(env, str):
        vec = make_vec(env, num_groups * group_size, group_size, backend, **(env_kwargs or {}))
    else:
        vec = AgentVectorEnv(env, num_groups * group_size, group_size=group_size, backend=backend,
                             env_kwargs=env_kwargs)
    return EnvBatch(vec, num_groups, group_size)
