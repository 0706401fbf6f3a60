"""What an RL trainer's checkpoint records beside its weights, as one typed object, and the one
function that reads it.

A checkpoint step directory (:mod:`agentgym.train.run.checkpoint`) holds the model as
``save_pretrained`` wrote it and a trainer state (:mod:`agentgym.train.base.state_file`) whose tree is:

.. code-block:: text

    step                  training steps completed
    optimizer             optimizer.state_dict() (FSDP: the full one)
    rng                   the saving process's random streams (python, numpy, torch, cuda)
    extra
      data_position, episodes_played, train_seconds, evaluation, eval_curve,
      prs_schedule, extension      the run's RunState (agentgym.train.base.state)
      config              the run's config as a plain dict (every flag)
      env_kwargs          the env kwargs every env was made with (reward_mode included)
      method              the trainer's name (grpo, vspo, gcd-gigpo...)
      cold_start_tasks    the tasks the model's cold start trained on (left out of RL)
      per_rank            torchrun only: each rank's {"extension", "rng"}

:func:`read_checkpoint` is how resuming, ``agentgym eval`` and the leaderboard read it. It
accepts every checkpoint this package has written: keys added since (``env_kwargs``, the curve,
the counters) take the values those runs had, and an older checkpoint's env kwargs are rebuilt from
its recorded config as its trainer did.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentgym.train.base.state import STATE_KEYS, RunState, StateFieldError
from agentgym.train.base.state_file import JSON_NAME, LEGACY_NAME, TrainerStateError, read_state


@dataclass
class CheckpointRecord:
    """A trainer checkpoint's state: the run's progress, its settings and what resumes it exactly."""

    state: RunState
    """where the run stood when the checkpoint was saved"""
    config: dict[str, Any] = field(default_factory=dict)
    """the run's config as :func:`agentgym.train.base.flags.to_dict` wrote it (groups ``env``, ``model``,
    ``rollout``, ``optim``, ``run``, ``eval`` and a method's own, e.g. ``gcd``)"""
    method: str = ""
    """the trainer that wrote it (``grpo``, ``vspo``, ``gcd-gigpo``...; empty when unrecorded)"""
    env_kwargs: dict[str, Any] | None = None
    """the env kwargs the run made every env with, ``reward_mode`` included (None: not recorded,
    see :meth:`trained_env_kwargs`)"""
    cold_start_tasks: list[str] = field(default_factory=list)
    """the task ids the model's cold start trained on, which RL left out"""
    optimizer: dict[str, Any] | None = None
    """``optimizer.state_dict()``; its tensors are None when read with ``tensors=False``"""
    rng: dict[str, Any] | None = None
    """the random streams of the process that saved it (rank 0)"""
    per_rank: list[dict[str, Any]] = field(default_factory=list)
    """data-parallel runs: each rank's ``{"extension": ..., "rng": ...}``; empty for one process"""
    path: Path | None = None
    """the step directory it was read from (None: not read from disk)"""

    @property
    def step(self) -> int:
        return self.state.step

    @property
    def env_id(self) -> str | None:
        return (self.config.get("env") or {}).get("env_id")

    def rank_state(self, rank: int) -> tuple[dict[str, Any], dict[str, Any] | None]:
        """``(extension state, random streams)`` for ``rank`` of a resumed run: its own when the
        checkpoint saved one for that rank; otherwise rank 0's extension state and None (the caller
        seeds fresh streams for a rank past rank 0)."""
        mine = self.per_rank[rank] if rank < len(self.per_rank) else {}
        return mine.get("extension", self.state.extension), mine.get("rng")

    def trained_env_kwargs(self, env_id: str) -> dict[str, Any] | None:
        """The env kwargs the run made its envs with, when it trained on ``env_id`` and recorded
        them (None otherwise)."""
        if self.env_id != env_id or self.env_kwargs is None:
            return None
        return dict(self.env_kwargs)

    def state_dict(self) -> dict[str, Any]:
        """The trainer-state tree :func:`agentgym.train.base.state_file.write_state` writes."""
        run = self.state.state_dict()
        extra: dict[str, Any] = {k: v for k, v in run.items() if k != "step"}
        extra.update({"config": self.config, "method": self.method, "cold_start_tasks": list(self.cold_start_tasks)})
        if self.env_kwargs is not None:
            extra["env_kwargs"] = dict(self.env_kwargs)
        if self.per_rank:
            extra["per_rank"] = list(self.per_rank)
        return {"step": run["step"], "optimizer": self.optimizer, "rng": self.rng, "extra": extra}

    @classmethod
    def from_state_dict(cls, tree: Mapping[str, Any], path: str | os.PathLike | None = None,
                        resumable: bool = True) -> CheckpointRecord:
        """The record of a trainer-state tree; raises :class:`TrainerStateError` naming ``path`` and
        the missing or malformed entry. ``resumable=False``: the tree is read for its settings only
        (read without its tensors), so the optimizer state and random streams may be absent."""
        where = _state_file(Path(path)) if path is not None else "trainer state"
        try:
            extra = tree["extra"]
            if not isinstance(extra, Mapping):
                raise TypeError("extra is not a mapping")
            state = RunState.from_state_dict({**{k: v for k, v in extra.items() if k in STATE_KEYS},
                                              "step": tree["step"]})
            if resumable:
                tree["optimizer"], tree["rng"]
            per_rank = extra.get("per_rank") or []
            if not isinstance(per_rank, list) or not all(isinstance(p, Mapping) for p in per_rank):
                raise TypeError("per_rank is not a list of mappings")
            env_kwargs = extra.get("env_kwargs")
            if env_kwargs is not None and not isinstance(env_kwargs, Mapping):
                raise TypeError("env_kwargs is not a mapping")
            config = extra.get("config") or {}
            if not isinstance(config, Mapping):
                raise TypeError("config is not a mapping")
        except StateFieldError as e:  # named as the file spells it: the run's state is under "extra"
            raise TrainerStateError(f"{where}: {'' if e.field == 'step' else 'extra.'}{e}") from e
        except KeyError as e:
            raise TrainerStateError(f"{where}: trainer state lacks {e}") from e
        except (TypeError, ValueError) as e:
            raise TrainerStateError(f"{where}: trainer state is malformed ({e})") from e
        return cls(state=state, config=dict(config), method=str(extra.get("method") or ""),
                   env_kwargs=None if env_kwargs is None else dict(env_kwargs),
                   cold_start_tasks=list(extra.get("cold_start_tasks") or []), optimizer=tree.get("optimizer"),
                   rng=tree.get("rng"), per_rank=[dict(p) for p in per_rank],
                   path=Path(path) if path is not None else None)


def _state_file(step_dir: Path) -> str:
    """The file a step directory's trainer state was read from (the legacy pickle when only it is there)."""
    legacy = step_dir / LEGACY_NAME
    return str(legacy if legacy.is_file() and not (step_dir / JSON_NAME).is_file() else step_dir / JSON_NAME)


def read_checkpoint(path: str | os.PathLike, tensors: bool = True) -> CheckpointRecord:
    """The record of the checkpoint step directory ``path``: what resuming, ``agentgym eval`` and the
    leaderboard read. ``tensors=False`` leaves out the tensors (the optimizer's moments: the record
    is then for reading settings, not for resuming).

    Reads nothing that can run code (:func:`agentgym.train.base.state_file.read_state`, which also reads a
    legacy ``trainer_state.pt`` safely); raises :class:`TrainerStateError` naming the file when the
    state is missing, damaged, unsafe, or lacks an entry a resume needs."""
    return CheckpointRecord.from_state_dict(read_state(path, tensors=tensors), path, resumable=tensors)
