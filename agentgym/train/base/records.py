"""What a model directory records about how it was made, read in one place.

A trainer checkpoint records its run (:mod:`agentgym.train.base.checkpoint_record`: config, env
kwargs, method state); a cold start's output records its recipe (``agentgym_sft.json``, written by
:func:`agentgym.train.coldstart.sft.run_sft`). Either may come with a downloaded model, so both are
read within the bounds of :mod:`agentgym.train.base.state_file`, and the env settings they record
pass :func:`agentgym.envs.data_settings.check_data_env_kwargs` before any env is made with them.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Collection
from pathlib import Path
from typing import Any

from agentgym.envs.data_settings import check_data_env_kwargs
from agentgym.train.base.checkpoint_record import CheckpointRecord, read_checkpoint
from agentgym.train.base.state_file import JSON_NAME, TrainerStateError, has_state, load_json

RECORD_FILE = "agentgym_sft.json"
"""A cold start's record in its output directory: its recipe, tasks and result."""


def read_record(model_dir: str | os.PathLike) -> dict[str, Any] | None:
    """The cold-start record of a model directory written by :func:`run_sft` (None: not one).

    The record may come with a downloaded model: it is read within the bounds of
    :func:`agentgym.train.base.state_file.load_json`, and one that is damaged, not a JSON object or
    outside those bounds raises :class:`~agentgym.train.base.state_file.TrainerStateError`, one line
    naming the file."""
    path = Path(model_dir) / RECORD_FILE
    if not path.is_file():
        return None
    try:
        record, _ = load_json(path)
    except FileNotFoundError:
        return None
    if not isinstance(record, dict):
        raise TrainerStateError(f"{path}: not a cold-start record (a JSON object); remove it or make the "
                                f"cold start again")
    return record


def is_complete(model_dir: str | os.PathLike) -> bool:
    """Whether ``model_dir`` is a finished SFT output (weights, tokenizer, then the record); a
    damaged record makes it an unfinished one (made again, not reused)."""
    d = Path(model_dir)
    try:
        record = read_record(d)
    except TrainerStateError:
        return False
    weights = (d / "config.json").is_file() or (d / "adapter_config.json").is_file()  # a LoRA run's: its adapter
    return record is not None and weights and (d / "tokenizer_config.json").is_file()


@functools.lru_cache(maxsize=4)
def trainer_record(model_dir: str) -> CheckpointRecord | None:
    """The :class:`~agentgym.train.base.checkpoint_record.CheckpointRecord` of a trainer checkpoint (None
    for any other directory), read once per directory, without its tensors (the optimizer state can
    be large). Callers only read it. Raises ``TrainerStateError`` naming the file when the record is
    damaged or unsafe to read."""
    return read_checkpoint(model_dir, tensors=False) if has_state(model_dir) else None


def recorded_env_kwargs(model_dir: str, env_id: str, user_keys: Collection[str] = ()) -> dict[str, Any] | None:
    """The env kwargs a checkpoint records for ``env_id`` (reward mode aside): an RL trainer's
    checkpoint, else a cold start's output (``agentgym_sft.json``); None when it records none.

    A checkpoint is data that may come from anyone: its settings pass
    :func:`agentgym.envs.data_settings.check_data_env_kwargs` (keys in ``user_keys``, which the
    caller sets itself, are left out), so a key that reaches a process, a judge or the success
    criterion is refused with a :class:`~agentgym.envs.data_settings.DataSettingError`."""
    record = trainer_record(model_dir)
    kwargs = record.trained_env_kwargs(env_id) if record is not None else None
    source = os.path.join(model_dir, JSON_NAME)
    if kwargs is None:
        recipe = (read_record(model_dir) or {}).get("recipe", {})
        if recipe.get("env_id") != env_id or not isinstance(recipe.get("env_kwargs"), dict):
            return None
        kwargs, source = dict(recipe["env_kwargs"]), os.path.join(model_dir, RECORD_FILE)
    kwargs.pop("reward_mode", None)
    return check_data_env_kwargs(kwargs, source, folder=model_dir, user_keys=user_keys)
