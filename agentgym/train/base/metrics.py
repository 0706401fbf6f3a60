"""Run logging: one JSON line per step in ``OUTPUT_DIR/metrics.jsonl`` and TensorBoard scalars.

On resume the lines after the checkpoint's step (and an earlier end-of-run evaluation line) are
dropped first, so a killed-and-resumed run's ``metrics.jsonl`` reads as if it had never stopped.
"""

from __future__ import annotations

import json
import math
import os
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any


def _clean(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if hasattr(value, "item"):
        return _clean(value.item())
    return value


class MetricsLogger:
    """Writes metrics to ``metrics.jsonl`` and (when available) TensorBoard."""

    def __init__(self, output_dir: str | os.PathLike, resume_step: int | None = None, tensorboard: bool = True):
        self.dir = Path(output_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.path = self.dir / "metrics.jsonl"
        if resume_step is not None and self.path.exists():
            # the end-of-run evaluation row is written again when the resumed run ends
            kept = [line for line, row in _rows(self.path)
                    if row.get("step", 0) <= resume_step and not _is_eval_row(row)]
            self.path.write_text("".join(line + "\n" for line in kept))
        elif resume_step is None and self.path.exists():
            self.path.unlink()
        self.writer = None
        if tensorboard:
            try:
                from torch.utils.tensorboard import SummaryWriter

                self.writer = SummaryWriter(str(self.dir / "tensorboard"))
            except ImportError:  # tensorboard not installed: the jsonl file is the record
                self.writer = None

    def log(self, step: int, metrics: Mapping[str, Any]) -> None:
        row = {"step": step, **{k: _clean(v) for k, v in metrics.items()}}
        with self.path.open("a") as f:
            f.write(json.dumps(row) + "\n")
        if self.writer is not None:
            for key, value in row.items():
                if key != "step" and isinstance(value, (int, float)) and not isinstance(value, bool):
                    self.writer.add_scalar(key, value, step)

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()


def _is_eval_row(row: Mapping[str, Any]) -> bool:
    keys = [k for k in row if k != "step"]
    return bool(keys) and all(k.startswith("eval/") for k in keys)


def _rows(path: Path) -> list[tuple[str, dict[str, Any]]]:
    """(line, row) of every whole line; a line cut short (power lost mid-write) is dropped with a
    warning rather than failing the resume that reads it."""
    out = []
    for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError:
            warnings.warn(f"{path}:{n}: skipping a line that is not valid JSON (cut short?)", stacklevel=3)
            continue
        if isinstance(row, dict):
            out.append((line, row))
    return out


def read_metrics(output_dir: str | os.PathLike) -> list[dict[str, Any]]:
    """The rows of ``OUTPUT_DIR/metrics.jsonl`` (partial lines dropped with a warning)."""
    return [row for _, row in _rows(Path(output_dir) / "metrics.jsonl")]
