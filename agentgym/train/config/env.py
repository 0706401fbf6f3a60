"""Which env a run plays and how it is rewarded (:class:`EnvConfig`), and the env settings it
resolves to once per run (:class:`EnvSettings`)."""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import agentgym.envs  # noqa: F401  registers the envs
from agentgym.envs.env_ids import require_registered
from agentgym.train.base.errors import ConfigError, at_least, finite
from agentgym.train.config.env_check import check_env
from agentgym.train.config.presets import check_preset, describe, parse_env_kwargs, resolve_env_kwargs
from agentgym.vector.options import BackendOptions, ProcessOptions, RayOptions, SyncOptions, WorkerOptions


def default_env_kwargs(env_id: str, model: str | None = "tiny-wide", preset: str = "auto") -> dict[str, Any]:
    """The env kwargs a run of ``model`` on ``env_id`` uses when ``--env-kwargs`` is not given
    (:mod:`agentgym.train.config.presets`)."""
    return resolve_env_kwargs(env_id, model, preset)[1]


def check_history_layout(env: EnvConfig, model: str, layout: str) -> None:
    """Observations that carry their own history want one prompt per turn (docs/trainers.md)."""
    preset, kwargs = env.resolve(model)
    if layout != "concat" or kwargs.get("observation") not in ("history", "history+admissible"):
        return
    what = f"observation={kwargs['observation']!r}"
    if "observation" in env.overrides():
        where, other = f"--env-kwargs {what} puts", ""
    elif preset == "recorded":
        where = f"--model {model} records {what} for {env.env_id} (--preset auto), which puts"
        other = ", or --preset none"
    else:
        where, other = f"--preset {preset} gives {env.env_id} {what}, which puts", ", or --preset none"
    raise ConfigError(f"{where} the task and the last steps in every observation, and --layout concat would repeat "
                      "them in each turn; use --layout window (each prompt is then the system prompt and the latest "
                      f"observation; --window does not apply){other}")


@dataclass
class EnvConfig:
    """Which env the run plays, and how it is rewarded."""

    env_id: str = "ToolQA-v0"
    """registered env id (`agentgym list`)"""
    preset: str = "auto"
    """named env kwargs the run starts from: `tiny` (suits the built-in tiny models), `none` (each env's own defaults), `auto` (those the --model directory records for the env, else `tiny` for `--model tiny*`, else `none`; docs/trainers.md)"""
    env_kwargs: str | None = None
    """JSON object of env keyword arguments, merged over the preset key by key (a `null` value removes a key)"""
    split: str = "train"
    """env split to train on (sent as a reset option)"""
    backend: Literal["sync", "process", "ray"] = "sync"
    """make_vec backend"""
    ray_address: str | None = None
    """`--backend ray`: the Ray cluster to join (`auto`, `HOST:6379`, `ray://HOST:10001`; default: start a local Ray)"""
    env_num_cpus: float = 0.0
    """`--backend ray`: CPUs each env worker reserves; with > 0 Ray spreads workers over the cluster's nodes"""
    envs_per_worker: int = WorkerOptions.envs_per_worker
    """`--backend process` / `ray`: envs per worker process or actor"""
    reward_mode: Literal["prs", "binary"] = "prs"
    """PRS shaped reward, or the papers' binary success baseline"""
    prs_schedule: Literal["none", "linear", "threshold", "constant"] = "none"
    """how the PRS stage moves over training (`none`: final stage, full reward)"""
    prs_start_stage: float = 0.0
    """first PRS stage of a schedule"""
    prs_schedule_steps: int = 100
    """linear schedule: steps from the start stage to the final stage"""
    prs_threshold: float = 0.8
    """threshold schedule: batch pass rate of the current stage's gate that advances the stage"""

    def overrides(self) -> dict[str, Any]:
        """``--env-kwargs`` as a dict ({} when not given), parsed once per value."""
        key = json.dumps(self.env_kwargs, sort_keys=True, default=str)
        cached = self.__dict__.get("_overrides")
        if cached is None or cached[0] != key:
            cached = (key, parse_env_kwargs(self.env_kwargs))
            self.__dict__["_overrides"] = cached
        return copy.deepcopy(cached[1])

    def resolve(self, model: str | None) -> tuple[str, dict[str, Any]]:
        """``(preset, env kwargs)`` of a run of ``model``: the preset ``--preset`` picks for it (or
        ``recorded``, see :mod:`agentgym.train.config.presets`) and its kwargs with ``--env-kwargs`` merged
        over them, ``reward_mode`` not included.

        Resolved once per config and model (the model directory's record read, ``--env-kwargs``
        parsed), and again only when the env id, preset, ``--env-kwargs`` or model change; every
        caller gets its own copy of the kwargs."""
        key = (self.env_id, self.preset, json.dumps(self.env_kwargs, sort_keys=True, default=str), model)
        cached = self.__dict__.get("_resolved")
        if cached is None or cached[0] != key:
            cached = (key, resolve_env_kwargs(self.env_id, model, self.preset, self.overrides()))
            self.__dict__["_resolved"] = cached  # not a field: neither compared, printed nor recorded
        preset, kwargs = cached[1]
        return preset, copy.deepcopy(kwargs)

    def kwargs(self, model: str | None = None) -> dict[str, Any]:
        """The env kwargs this config gives every env of a run of ``model`` (``reward_mode``
        included); ``model`` is what ``--preset auto`` goes by (None: not a built-in tiny model)."""
        return {"reward_mode": self.reward_mode, **self.resolve(model)[1]}

    def describe(self, model: str | None) -> str:
        """The startup line's text: the env, the preset and every env kwarg."""
        preset, _ = self.resolve(model)
        return describe(self.env_id, preset, self.kwargs(model), self.preset)

    def validate(self) -> None:
        """The env settings' own checks: a registered env id, a known preset, ``--env-kwargs`` a JSON
        object, the numbers in range (the env itself is made by :meth:`check_env`)."""
        try:
            require_registered(self.env_id)  # imports nothing: a recorded config's id cannot choose code to run
        except ValueError as e:
            raise ConfigError(f"--env-id: {e}") from None

        try:
            check_preset(self.preset)
        except ValueError as e:
            raise ConfigError(str(e)) from None
        if self.env_kwargs is not None:
            try:
                self.overrides()
            except ValueError as e:
                raise ConfigError(f"--env-kwargs: {e}") from None
        at_least("prs-schedule-steps", self.prs_schedule_steps, 1)
        at_least("envs-per-worker", self.envs_per_worker, 1)
        finite("env-num-cpus", self.env_num_cpus, minimum=0.0)
        if self.ray_address is not None and self.backend != "ray":
            raise ConfigError(f"--ray-address needs --backend ray (got --backend {self.backend})")
        finite("prs-threshold", self.prs_threshold, minimum=0.0)
        finite("prs-start-stage", self.prs_start_stage, minimum=0.0)

    def backend_options(self) -> BackendOptions:
        """The make_vec backend options of this run: each setting's default lives in the options
        class (agentgym/vector/options.py); only what the flags say is passed."""
        if self.backend == "process":
            # The trainer already runs torch and tokenizer threads; a forked child of a threaded
            # process can deadlock on their locks, so process workers are spawned.
            return ProcessOptions(envs_per_worker=self.envs_per_worker, mp_context="spawn")
        if self.backend == "ray":
            # > 0 CPUs per actor: spread the actors over the nodes, so a lost node takes only its envs
            spread = {"scheduling_strategy": "SPREAD"} if self.env_num_cpus > 0 else {}
            return RayOptions(envs_per_worker=self.envs_per_worker,
                              actor_options={"num_cpus": self.env_num_cpus, **spread},
                              init_kwargs={"address": self.ray_address} if self.ray_address else {})
        return SyncOptions()

    def check_env(self, model: str | None, eval_splits: Sequence[str] = (),
                  more_splits: Mapping[str, str | None] | None = None) -> None:
        """Make the env once with the kwargs of a run of ``model`` and check that ``split`` (and
        ``eval_splits``, and ``more_splits``' values by the flag that names them) are its splits, so a
        bad setting stops the run before a model is built (:mod:`agentgym.train.config.env_check`). A
        config checked once with the same settings is not made again (the command line checks it,
        then the run's set-up)."""
        try:
            kwargs = self.kwargs(model)
        except ValueError as e:  # a --model directory whose record cannot be read
            raise ConfigError(f"--preset {self.preset}: {e}") from None
        splits = {"--split": self.split, **({"--eval-split": list(eval_splits)} if eval_splits else {}),
                  **{flag: split for flag, split in (more_splits or {}).items() if split is not None}}
        key = json.dumps([self.env_id, kwargs, splits], sort_keys=True, default=str)
        if self.__dict__.get("_checked") == key:
            return
        check_env(self.env_id, kwargs, splits)
        self.__dict__["_checked"] = key
