"""Checkpoints that resume exactly: weights, optimizer, every RNG, step, data position and args.

Layout of ``OUTPUT_DIR/checkpoints/step_<N>/``: the model and tokenizer as ``save_pretrained``
writes them (so a checkpoint is also an ordinary model directory for ``agentgym eval``; a LoRA run's
holds its adapter, which names the base it goes on), and the
rest in ``trainer_state.json`` + ``trainer_state.safetensors`` (:mod:`agentgym.train.base.state_file`:
formats that run no code when read), whose tree a
:class:`~agentgym.train.base.checkpoint_record.CheckpointRecord` reads and writes.
``OUTPUT_DIR/checkpoints/latest`` names the newest complete one; it is written last, so a run
killed while saving resumes from the previous checkpoint.

Resuming trusts nothing it reads: :func:`resume_point` takes ``latest`` only when it names a
complete ``step_<N>`` folder beside it, otherwise falls back to the newest complete checkpoint and
says so; a checkpoint whose files do not load (truncated state, damaged weights, bad
``config.json``) is skipped for the one before it, with one line naming the file; and when
checkpoints exist but none loads, the run refuses to start over rather than overwrite them.
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import sys
from pathlib import Path
from typing import Any

import numpy as np
import torch

from agentgym.agents.lora import ADAPTER_CONFIG, ADAPTER_WEIGHTS, AdapterError, recorded_base
from agentgym.train.base.checkpoint_record import CheckpointRecord, read_checkpoint
from agentgym.train.base.errors import ConfigError
from agentgym.train.base.state_file import TrainerStateError, has_state, write_state

_STEP_DIR = re.compile(r"step_(\d+)")
WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json")


class CheckpointError(ConfigError):
    """No checkpoint to resume from where one was asked for, or one that does not load (names the file)."""


def rng_state() -> dict[str, Any]:
    state = {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def save_checkpoint(output_dir: str | os.PathLike, step: int, model, tokenizer, optimizer,
                    extra: dict[str, Any] | None = None, keep: int | None = 2, model_state: dict | None = None,
                    optimizer_state: dict | None = None) -> Path:
    """Save everything needed to continue after ``step`` completed steps; returns the directory.

    ``extra`` holds the caller's own state (data position, args, schedules, hook state): plain data
    (dicts, lists, tuples, numbers, strings, tensors, numpy arrays; see :mod:`~agentgym.train.base.state_file`).
    ``keep`` old checkpoints are kept besides the new one (None: keep all).
    ``model_state`` / ``optimizer_state`` replace ``model.state_dict()`` / ``optimizer.state_dict()``
    (FSDP: the full states gathered from every rank's shard). The trainers save a
    :class:`~agentgym.train.base.checkpoint_record.CheckpointRecord` with :func:`write_checkpoint`.
    """
    optimizer_state = optimizer.state_dict() if optimizer_state is None else optimizer_state
    tree = {"step": step, "optimizer": optimizer_state, "rng": rng_state(), "extra": extra or {}}
    return _write(output_dir, step, tree, model, tokenizer, keep, model_state)


def write_checkpoint(output_dir: str | os.PathLike, record: CheckpointRecord, model, tokenizer,
                     keep: int | None = 2, model_state: dict | None = None) -> Path:
    """Save ``record`` beside the model and tokenizer as ``OUTPUT_DIR/checkpoints/step_<record.step>``
    and make it ``latest``; returns the directory. ``keep`` and ``model_state`` as in :func:`save_checkpoint`."""
    return _write(output_dir, record.step, record.state_dict(), model, tokenizer, keep, model_state)


def _write(output_dir, step: int, tree: dict[str, Any], model, tokenizer, keep: int | None,
           model_state: dict | None) -> Path:
    root = Path(output_dir) / "checkpoints"
    root.mkdir(parents=True, exist_ok=True)
    final = root / f"step_{step}"
    tmp = root / f".step_{step}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(tmp, **({"state_dict": model_state} if model_state is not None else {}))
    tokenizer.save_pretrained(tmp)
    write_state(tmp, tree)
    shutil.rmtree(final, ignore_errors=True)
    os.replace(tmp, final)
    latest_tmp = root / ".latest.tmp"
    latest_tmp.write_text(final.name)
    os.replace(latest_tmp, root / "latest")
    if keep is not None:
        older = sorted((p for p in root.glob("step_*") if p != final), key=lambda p: int(p.name[5:]))
        for p in older[: max(len(older) - keep, 0)]:
            shutil.rmtree(p, ignore_errors=True)
    return final


def is_complete(step_dir: str | os.PathLike) -> bool:
    """Whether a folder holds every file a checkpoint needs (not whether they load): the trainer
    state, and a model's config and weights, or a LoRA run's adapter config and weights."""
    step_dir = Path(step_dir)
    if not (step_dir.is_dir() and has_state(step_dir)):
        return False
    if (step_dir / ADAPTER_CONFIG).is_file():
        return any((step_dir / name).is_file() for name in ADAPTER_WEIGHTS)
    return (step_dir / "config.json").is_file() and any((step_dir / name).is_file() for name in WEIGHT_FILES)


def _step_of(p: Path) -> int:
    match = _STEP_DIR.fullmatch(p.name)
    return int(match.group(1)) if match else -1


def _checkpoints_root(path: Path) -> Path | None:
    if (path / "checkpoints").is_dir():
        return path / "checkpoints"
    if (path / "latest").exists() or any(_step_of(p) >= 0 for p in path.glob("step_*")):
        return path
    return None


def resume_candidates(path: str | os.PathLike) -> tuple[list[Path], list[str]]:
    """Complete checkpoints under ``path`` (an output dir, its ``checkpoints/``, or one step dir),
    the one ``latest`` names first when it is sound, then the others newest first; and notes on
    what was passed over (a ``latest`` naming something else, incomplete step folders)."""
    path = Path(path)
    if has_state(path):
        return [path], []
    root = _checkpoints_root(path)
    if root is None:
        return [], []
    notes: list[str] = []
    steps = sorted((p for p in root.iterdir() if _step_of(p) >= 0), key=_step_of, reverse=True)
    complete = [p for p in steps if is_complete(p)]
    notes += [f"{p} is incomplete (a save that did not finish)" for p in steps if p not in complete]
    latest = root / "latest"
    if latest.is_file():
        name = latest.read_text(errors="replace").strip()
        named = root / name
        # only a plain step_<N> name beside the file: never a path that leads elsewhere
        if _STEP_DIR.fullmatch(name) and named in complete:
            complete.remove(named)
            complete.insert(0, named)
        else:
            notes.append(f"{latest} names {name[:80]!r}, which is not a complete checkpoint in {root}")
    elif latest.exists():
        notes.append(f"{latest} is not a file")
    return complete, notes


def find_checkpoint(path: str | os.PathLike) -> Path | None:
    """The checkpoint to resume from under ``path`` (see :func:`resume_candidates`), or None."""
    candidates, _ = resume_candidates(path)
    return candidates[0] if candidates else None


def _check_loads(step_dir: Path) -> CheckpointRecord:
    """The checkpoint's record, after checking that its model files load; raises
    ``CheckpointError`` naming the first file that does not."""
    from safetensors import safe_open
    from transformers import AutoConfig

    adapter = (step_dir / ADAPTER_CONFIG).is_file()
    config_file = step_dir / (ADAPTER_CONFIG if adapter else "config.json")
    try:
        if adapter:  # the base is the run's own (--model): resuming reads only what the adapter records
            recorded_base(step_dir)
        else:
            AutoConfig.from_pretrained(str(step_dir))
    except AdapterError as e:
        raise CheckpointError(str(e)) from e
    except Exception as e:
        raise CheckpointError(f"{config_file}: not a readable model config ({type(e).__name__})") from e
    shards = [step_dir / ("adapter_model.safetensors" if adapter else "model.safetensors")]
    index = step_dir / "model.safetensors.index.json"
    if index.is_file() and not adapter:
        try:
            shards = [step_dir / f for f in sorted(set(json.loads(index.read_text())["weight_map"].values()))]
        except Exception as e:
            raise CheckpointError(f"{index}: not a readable weight index ({type(e).__name__})") from e
    for shard in shards:
        try:
            with safe_open(str(shard), framework="pt", device="cpu") as f:
                f.keys()
        except Exception as e:
            raise CheckpointError(f"{shard}: not readable weights ({type(e).__name__}: {e})") from e
    try:
        return read_checkpoint(step_dir)
    except TrainerStateError as e:
        raise CheckpointError(str(e)) from e


def resume_point(path: str | os.PathLike, auto: bool) -> tuple[Path | None, CheckpointRecord | None]:
    """``(checkpoint, its record)`` to resume from under ``path``, or ``(None, None)`` for a
    fresh start (only with ``auto`` and no checkpoint there at all).

    A checkpoint that does not load is passed over for the previous one, with a line on stderr
    naming the file; so is a ``latest`` that names anything but a complete checkpoint beside it. A
    step folder given directly is used as it is or not at all. Raises :class:`CheckpointError`
    when checkpoints exist but none loads (a fresh start would overwrite them)."""
    path = Path(path)
    candidates, notes = resume_candidates(path)
    direct = has_state(path)
    problems: list[str] = []
    for k, candidate in enumerate(candidates):
        try:
            record = _check_loads(candidate)
        except CheckpointError as e:
            if direct:
                raise
            problems.append(str(e))
            continue
        if notes or problems or k > 0:
            for line in notes + problems:
                print(f"resume: {line}", file=sys.stderr)
            print(f"resume: resuming from {candidate}, the newest checkpoint that loads", file=sys.stderr)
        return candidate, record
    root = _checkpoints_root(path)
    if root is not None and (notes or problems):
        why = "; ".join(problems + notes) or "nothing loadable"
        raise CheckpointError(f"cannot resume from {root}: {why}. Refusing to start over there (it would overwrite "
                              "what is left): move it away or choose another --output-dir")
    if not auto:
        raise CheckpointError(f"no checkpoint found at {str(path)!r}")
    return None, None


def load_trainer_state(checkpoint: str | os.PathLike, optimizer=None, restore_rng: bool = True,
                       state: CheckpointRecord | dict[str, Any] | None = None) -> dict[str, Any]:
    """Load optimizer state and RNG states from a checkpoint; returns ``{"step", "extra", "optimizer"}``.

    ``state`` is the checkpoint's record (or trainer-state tree) when the caller has read it already
    (:func:`resume_point`). Load the model from the same directory with ``from_pretrained`` before
    building the optimizer. The trainers restore through the record
    (:func:`agentgym.train.run.setup.restore`); this reads it the way older callers expect.
    """
    if state is None:
        try:
            state = read_checkpoint(checkpoint)
        except TrainerStateError as e:
            raise CheckpointError(str(e)) from e
    tree = state.state_dict() if isinstance(state, CheckpointRecord) else state
    if optimizer is not None:
        optimizer.load_state_dict(tree["optimizer"])
    if restore_rng:
        set_rng_state(tree["rng"])
    return {"step": int(tree["step"]), "extra": tree["extra"], "optimizer": tree["optimizer"]}
