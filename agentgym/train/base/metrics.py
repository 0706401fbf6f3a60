"""Run logging: one JSON line per step in ``OUTPUT_DIR/metrics.jsonl``, and the same scalars to the
trackers ``--report-to`` names (TensorBoard by default; :mod:`agentgym.train.base.trackers`).

On resume the lines after the checkpoint's step (and an earlier end-of-run evaluation line) are
dropped first, so a killed-and-resumed run's ``metrics.jsonl`` reads as if it had never stopped.
A line cut short (power lost mid-write) is dropped with a warning; a row whose ``step`` is not an
integer >= 0 (a hand edit) cannot be placed before or after the checkpoint, so the resume stops
with one :class:`~agentgym.train.base.errors.RunFileError` naming the file and the line.
"""

from __future__ import annotations

import json
import math
import os
import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from agentgym.train.base.errors import RunFileError
from agentgym.train.base.trackers import Trackers


def _clean(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if hasattr(value, "item"):
        return _clean(value.item())
    return value


class MetricsLogger:
    """Writes metrics to ``metrics.jsonl`` and to the run's trackers.

    ``report_to``: tracker names (``--report-to``); ``tensorboard=False`` (``--no-tensorboard``)
    leaves TensorBoard out of them. ``run_name`` and ``settings`` (the run's config as a dict) name
    the run and record its settings where a tracker keeps them."""

    def __init__(self, output_dir: str | os.PathLike, resume_step: int | None = None, tensorboard: bool = True,
                 report_to: Sequence[str] = ("tensorboard",), run_name: str | None = None,
                 settings: Mapping[str, Any] | None = None):
        self.dir = Path(output_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.path = self.dir / "metrics.jsonl"
        if self.path.exists() and not self.path.is_file():
            raise RunFileError(f"{self.path} is a folder, not the run's metrics file: move it away, then run again")
        if resume_step is not None and self.path.exists():
            # the end-of-run evaluation row is written again when the resumed run ends
            trim_to_step(self.path, resume_step, keep=lambda row: not _is_eval_row(row))
        elif resume_step is None and self.path.exists():
            self.path.unlink()
        names = [n for n in report_to if tensorboard or n != "tensorboard"]
        self.trackers = Trackers(names, self.dir, run_name=run_name, settings=settings,
                                 resume=resume_step is not None)

    def log(self, step: int, metrics: Mapping[str, Any]) -> None:
        row = {"step": step, **{k: _clean(v) for k, v in metrics.items()}}
        with self.path.open("a") as f:
            f.write(json.dumps(row) + "\n")
        self.trackers.log(step, {k: v for k, v in row.items()
                                 if k != "step" and isinstance(v, (int, float)) and not isinstance(v, bool)})

    def log_episodes(self, step: int, records: Sequence[Mapping[str, Any]]) -> None:
        """A step's kept episodes (``--log-episodes``) as a table, to the trackers that keep tables."""
        self.trackers.log_episodes(step, records)

    def close(self) -> None:
        self.trackers.close()


def _is_eval_row(row: Mapping[str, Any]) -> bool:
    keys = [k for k in row if k != "step"]
    return bool(keys) and all(k.startswith("eval/") for k in keys)


def _numbered_rows(path: Path) -> list[tuple[int, str, Any]]:
    """(line number, line, value) of every whole line; a line cut short (power lost mid-write) is
    dropped with a warning rather than failing the resume that reads it."""
    out = []
    for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError:
            warnings.warn(f"{path}:{n}: skipping a line that is not valid JSON (cut short?)", stacklevel=4)
            continue
        out.append((n, line, row))
    return out


def _rows(path: Path) -> list[tuple[str, dict[str, Any]]]:
    """(line, row) of every whole line that holds a JSON object (see :func:`_numbered_rows`)."""
    return [(line, row) for _, line, row in _numbered_rows(path) if isinstance(row, dict)]


def trim_to_step(path: Path, step: int, keep: Callable[[dict[str, Any]], bool] = lambda row: True) -> None:
    """Rewrite the step-stamped JSONL file ``path`` (``metrics.jsonl``, GCD's mistakes log) with the
    rows of steps up to ``step`` that ``keep`` keeps, for a run resumed from checkpoint ``step``.

    Every row is checked before anything is written: one that is not a JSON object with an integer
    >= 0 as its ``"step"`` raises :class:`~agentgym.train.base.errors.RunFileError` naming the file
    and the line, and the file is left as it was."""
    kept = []
    for n, line, row in _numbered_rows(path):
        if not isinstance(row, dict):
            raise RunFileError(f'{path}:{n}: a row must be a JSON object with an integer >= 0 as its "step", got '
                               f"{_short(row)}; correct or delete that line, then resume again")
        value = row.get("step")
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            got = "no step" if "step" not in row else _short(value)
            raise RunFileError(f'{path}:{n}: "step" must be an integer >= 0 (the step the row was logged at), '
                               f"got {got}; correct or delete that line, then resume again")
        if value <= step and keep(row):
            kept.append(line)
    path.write_text("".join(line + "\n" for line in kept))


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:60] + "..."


def read_metrics(output_dir: str | os.PathLike) -> list[dict[str, Any]]:
    """The rows of ``OUTPUT_DIR/metrics.jsonl`` (partial lines dropped with a warning)."""
    return [row for _, row in _rows(Path(output_dir) / "metrics.jsonl")]
