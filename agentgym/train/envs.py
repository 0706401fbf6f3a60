"""What the rollout collector drives: ``num_groups * group_size`` envs, group g's envs on one task.

:class:`EnvBatch` is the small interface; :class:`ListEnvBatch` runs a list of gymnasium envs in
this process and :class:`VecEnvBatch` wraps an ``agentgym.make_vec`` vector env (sync, process or
Ray backends). Envs ``[g * G, (g + 1) * G)`` form group g and are reset with the same seed and
options, so they start the same task; an env that finished is not stepped again.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import gymnasium as gym
import numpy as np

StepResult = tuple[str, float, bool, bool, dict]


class EnvBatch:
    """``num_groups`` groups of ``group_size`` envs."""

    num_groups: int
    group_size: int

    @property
    def num_envs(self) -> int:
        return self.num_groups * self.group_size

    def reset_groups(self, seeds: Sequence[int], options: dict | None = None) -> list[tuple[str, dict]]:
        """Start group g's envs on the task chosen by ``seeds[g]``; (obs, info) per env."""
        raise NotImplementedError

    def step_some(self, actions: dict[int, str]) -> dict[int, StepResult]:
        """Step the envs named in ``actions`` (env index -> action); the others are left alone."""
        raise NotImplementedError

    def set_prs_stage(self, stage: float | None) -> None:
        raise NotImplementedError

    def close(self) -> None:
        pass


class ListEnvBatch(EnvBatch):
    """Envs in this process, made by ``gym.make(env_id, **env_kwargs)`` (or ``env_fn()``)."""

    def __init__(self, env_id: str | None, num_groups: int, group_size: int, env_kwargs: dict | None = None,
                 env_fn: Callable[[], gym.Env] | None = None):
        if num_groups < 1 or group_size < 1:
            raise ValueError(f"num_groups and group_size must be >= 1, got {num_groups}, {group_size}")
        if env_fn is None:
            if env_id is None:
                raise ValueError("give env_id or env_fn")
            import agentgym  # noqa: F401  registers the envs

            env_fn = lambda: gym.make(env_id, **(env_kwargs or {}))  # noqa: E731
        self.num_groups, self.group_size = int(num_groups), int(group_size)
        self.envs = [env_fn() for _ in range(self.num_envs)]

    def reset_groups(self, seeds, options=None):
        if len(seeds) != self.num_groups:
            raise ValueError(f"need {self.num_groups} seeds, got {len(seeds)}")
        return [env.reset(seed=int(seeds[i // self.group_size]), options=dict(options or {}))
                for i, env in enumerate(self.envs)]

    def step_some(self, actions):
        out = {}
        for i, action in actions.items():
            obs, reward, terminated, truncated, info = self.envs[i].step(action)
            out[i] = (obs, float(reward), bool(terminated), bool(truncated), info)
        return out

    def set_prs_stage(self, stage):
        for env in self.envs:
            env.unwrapped.set_prs_stage(stage)

    def close(self):
        for env in self.envs:
            env.close()


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


class VecEnvBatch(EnvBatch):
    """An ``agentgym.make_vec`` vector env with groups (autoreset off, finished envs stay finished).

    Actions for envs that are not stepped are sent as empty strings and their results ignored;
    the vector env does not advance finished envs.
    """

    def __init__(self, vec_env, num_groups: int, group_size: int):
        if vec_env.num_envs != num_groups * group_size:
            raise ValueError(f"vector env has {vec_env.num_envs} envs, expected {num_groups} x {group_size}")
        self.vec = vec_env
        self.num_groups, self.group_size = int(num_groups), int(group_size)

    def reset_groups(self, seeds, options=None):
        if len(seeds) != self.num_groups:
            raise ValueError(f"need {self.num_groups} seeds, got {len(seeds)}")
        # one seed per group: every env of group g starts the task seeds[g] picks
        obs, infos = self.vec.reset(seed=[int(s) for s in seeds], options=dict(options or {}))
        per_env = _unbatch_info(infos, self.num_envs)
        return [(str(obs[i]), per_env[i]) for i in range(self.num_envs)]

    def step_some(self, actions):
        batch = [actions.get(i, "") for i in range(self.num_envs)]
        obs, rewards, terminated, truncated, infos = self.vec.step(tuple(batch))
        per_env = _unbatch_info(infos, self.num_envs)
        return {i: (str(obs[i]), float(rewards[i]), bool(terminated[i]), bool(truncated[i]), per_env[i])
                for i in actions}

    def set_prs_stage(self, stage):
        self.vec.call("set_prs_stage", stage)

    def close(self):
        self.vec.close()
