"""Run logging: one JSON line per step in ``OUTPUT_DIR/metrics.jsonl`` and TensorBoard scalars.

On resume the lines after the checkpoint's step are dropped first, so a killed-and-resumed run's
``metrics.jsonl`` reads as if it had never stopped.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any, Mapping


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
            kept = [line for line in self.path.read_text().splitlines()
                    if line.strip() and json.loads(line).get("step", 0) <= resume_step]
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


def read_metrics(output_dir: str | os.PathLike) -> list[dict[str, Any]]:
    path = Path(output_dir) / "metrics.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
