"""Checkpoints that resume exactly: weights, optimizer, every RNG, step, data position and args.

Layout of ``OUTPUT_DIR/checkpoints/step_<N>/``: the model and tokenizer as ``save_pretrained``
writes them (so a checkpoint is also an ordinary model directory for ``agentgym eval``), and
``trainer_state.pt`` with the rest. ``OUTPUT_DIR/checkpoints/latest`` names the newest complete
one; it is written last, so a run killed while saving resumes from the previous checkpoint.
"""

from __future__ import annotations

import os
import random
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import torch


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

    ``extra`` holds the caller's own state (data position, args, schedules, hook state); it must be
    picklable. ``keep`` old checkpoints are kept besides the new one (None: keep all).
    ``model_state`` / ``optimizer_state`` replace ``model.state_dict()`` / ``optimizer.state_dict()``
    (FSDP: the full states gathered from every rank's shard).
    """
    root = Path(output_dir) / "checkpoints"
    root.mkdir(parents=True, exist_ok=True)
    final = root / f"step_{step}"
    tmp = root / f".step_{step}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(tmp, **({"state_dict": model_state} if model_state is not None else {}))
    tokenizer.save_pretrained(tmp)
    optimizer_state = optimizer.state_dict() if optimizer_state is None else optimizer_state
    torch.save({"step": step, "optimizer": optimizer_state, "rng": rng_state(), "extra": extra or {}},
               tmp / "trainer_state.pt")
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


def find_checkpoint(path: str | os.PathLike) -> Path | None:
    """A checkpoint directory from an output dir (its latest), a checkpoints dir, or a step dir."""
    path = Path(path)
    for candidate in (path / "checkpoints" / "latest", path / "latest"):
        if candidate.is_file():
            step_dir = candidate.parent / candidate.read_text().strip()
            if (step_dir / "trainer_state.pt").exists():
                return step_dir
    if (path / "trainer_state.pt").exists():
        return path
    return None


def load_trainer_state(checkpoint: str | os.PathLike, optimizer=None, restore_rng: bool = True) -> dict[str, Any]:
    """Load optimizer state and RNG states from a checkpoint; returns ``{"step", "extra", "optimizer"}``.

    Load the model from the same directory with ``from_pretrained`` before building the optimizer.
    """
    state = torch.load(Path(checkpoint) / "trainer_state.pt", map_location="cpu", weights_only=False)
    if optimizer is not None:
        optimizer.load_state_dict(state["optimizer"])
    if restore_rng:
        set_rng_state(state["rng"])
    return {"step": int(state["step"]), "extra": state["extra"], "optimizer": state["optimizer"]}
