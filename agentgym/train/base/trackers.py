"""Where a run reports besides ``metrics.jsonl``: ``--report-to`` (Hugging Face's spelling).

``tensorboard`` (the default), ``wandb``, ``trackio``, ``mlflow``, several at once, or ``none``.
Each tracker gets every scalar ``metrics.jsonl`` gets, at the same step (PRS terms included,
``prs/format``, ``prs/tool``...), the run's settings once, and a table of the episodes
``--log-episodes`` keeps each step: one row per turn with the task, the reply text, the reward and
its terms, the advantage and the episode's return, as TRL's ``log_completions`` shows completions.

Where each one writes, by its own documented defaults and variables:

- ``wandb``: ``OUTPUT_DIR/wandb/``; ``WANDB_MODE=offline`` keeps the run on disk for ``wandb sync``,
  ``WANDB_PROJECT`` names the project (default ``agentgym``).
- ``mlflow``: ``MLFLOW_TRACKING_URI`` when set, else MLflow's local SQLite store in the run's
  folder, ``OUTPUT_DIR/mlflow.db`` with artifacts in ``OUTPUT_DIR/mlartifacts`` (``mlflow ui
  --backend-store-uri sqlite:///OUTPUT_DIR/mlflow.db``); ``MLFLOW_EXPERIMENT_NAME`` (default
  ``agentgym``).
- ``trackio``: Trackio's local store (``TRACKIO_DIR``, default ``HF_HOME/trackio``;
  ``trackio show``), or a Space when ``TRACKIO_SPACE_ID`` is set; ``TRACKIO_PROJECT`` (default
  ``agentgym``).

A resumed run continues the same W&B, MLflow and Trackio run: their ids are kept in
``OUTPUT_DIR/trackers.json``. A tracker that fails (at start or mid-run: a full disk, a server
gone) costs one warning naming it and is dropped; the run and the other trackers go on.
"""

from __future__ import annotations

import importlib.util
import json
import os
import time
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from agentgym.train.base.errors import ConfigError

TRACKERS = ("tensorboard", "wandb", "trackio", "mlflow")
"""The trackers ``--report-to`` takes (and ``none``)."""

PACKAGES = {"tensorboard": "tensorboard", "wandb": "wandb", "trackio": "trackio", "mlflow": "mlflow"}
"""The module each tracker imports; its extra has the tracker's name (``agentgym[wandb]``)."""

IDS_FILE = "trackers.json"
TABLE_COLUMNS = ["step", "task_id", "group", "episode", "turn", "reply", "reward", "terms", "advantage",
                 "return", "success"]


def report_to_names(value: str | Sequence[str] | None) -> tuple[str, ...]:
    """``--report-to`` as a tuple of tracker names: space- or comma-separated, ``none`` alone means
    none, duplicates dropped; an unknown name is a :class:`ConfigError` naming the choices.

    >>> report_to_names(["wandb,mlflow", "tensorboard"])
    ('wandb', 'mlflow', 'tensorboard')
    >>> report_to_names("none")
    ()
    """
    items = [value] if isinstance(value, str) or value is None else list(value)
    names: list[str] = []
    for item in items:
        for name in str(item if item is not None else "none").split(","):
            name = name.strip().lower()
            if name and name not in names:
                names.append(name)
    unknown = [n for n in names if n not in (*TRACKERS, "none")]
    if unknown:
        raise ConfigError(f"--report-to {unknown[0]!r}: choose from {', '.join(TRACKERS)} or none "
                          f"(several at once: --report-to wandb mlflow)")
    if "none" in names and len(names) > 1:
        raise ConfigError("--report-to none reports nowhere but metrics.jsonl: give it alone")
    return tuple(n for n in names if n != "none")


def check_installed(names: Sequence[str]) -> None:
    """Before anything is built: every tracker asked for is importable, else one line naming its
    extra (TensorBoard excepted: without it ``metrics.jsonl`` is the record, as before)."""
    for name in names:
        if name != "tensorboard" and importlib.util.find_spec(PACKAGES[name]) is None:
            raise ConfigError(f"--report-to {name} needs the {PACKAGES[name]} package: "
                              f"pip install 'agentgym[{name}]'")


def episode_rows(step: int, records: Sequence[Mapping[str, Any]]) -> list[list[Any]]:
    """The table's rows (:data:`TABLE_COLUMNS`), one per turn of each episode record
    (:func:`~agentgym.train.run.episode_log.episode_record`)."""
    rows = []
    for e, record in enumerate(records):
        for t, turn in enumerate(record.get("turns") or []):
            rows.append([step, str(record.get("task_id")), record.get("group"), e, t, str(turn.get("reply") or ""),
                         turn.get("reward"), json.dumps(turn.get("terms") or {}, sort_keys=True),
                         turn.get("advantage"), record.get("return"), bool(record.get("success"))])
    return rows


def flat_settings(settings: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """A nested settings dict as ``group.field`` keys (MLflow's params are flat)."""
    out: dict[str, Any] = {}
    for key, value in settings.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(flat_settings(value, name + "."))
        else:
            out[name] = value
    return out


class Tracker:
    """One place a run reports to. ``ids`` is what a resumed run needs to continue the same run."""

    name = ""

    def log(self, step: int, scalars: Mapping[str, float]) -> None:
        raise NotImplementedError

    def log_episodes(self, step: int, rows: list[list[Any]]) -> None:
        """The step's episode table; a tracker without tables ignores it."""

    def ids(self) -> dict[str, str]:
        return {}

    def close(self) -> None:
        pass


class TensorBoardTracker(Tracker):
    name = "tensorboard"

    def __init__(self, output_dir: Path, **_: Any):
        from torch.utils.tensorboard import SummaryWriter

        self.writer = SummaryWriter(str(output_dir / "tensorboard"))

    def log(self, step: int, scalars: Mapping[str, float]) -> None:
        for key, value in scalars.items():
            self.writer.add_scalar(key, value, step)

    def close(self) -> None:
        self.writer.close()


class _RunTracker(Tracker):
    """A tracker with wandb's run API (``run.log(dict, step=)``, a ``Table`` class, ``run.finish()``),
    which Trackio mirrors."""

    def log(self, step: int, scalars: Mapping[str, float]) -> None:
        self.run.log(dict(scalars), step=step)

    def log_episodes(self, step: int, rows: list[list[Any]]) -> None:
        self.run.log({"episodes": self.module.Table(columns=TABLE_COLUMNS, data=rows)}, step=step)

    def close(self) -> None:
        self.run.finish()


class WandbTracker(_RunTracker):
    name = "wandb"

    def __init__(self, output_dir: Path, run_name: str, settings: Mapping[str, Any], resume_id: str | None = None):
        import wandb

        self.module = wandb
        self.run = wandb.init(project=os.environ.get("WANDB_PROJECT", "agentgym"), name=run_name,
                              dir=str(output_dir), config=dict(settings), id=resume_id,
                              resume="allow" if resume_id else None, reinit="create_new")

    def ids(self) -> dict[str, str]:
        return {"wandb": self.run.id}


class TrackioTracker(_RunTracker):
    name = "trackio"

    def __init__(self, output_dir: Path, run_name: str, settings: Mapping[str, Any], resume_id: str | None = None):
        import trackio

        self.module = trackio
        # Trackio finds a run to resume by its name, and a fresh run may reuse a name: each run's own
        name = resume_id or f"{run_name}-{time.strftime('%Y%m%d-%H%M%S')}"
        self.run = trackio.init(project=os.environ.get("TRACKIO_PROJECT", "agentgym"), name=name,
                                config=dict(settings), resume="allow" if resume_id else "never")

    def ids(self) -> dict[str, str]:
        return {"trackio": self.run.name}


class MLflowTracker(Tracker):
    name = "mlflow"

    def __init__(self, output_dir: Path, run_name: str, settings: Mapping[str, Any], resume_id: str | None = None):
        from mlflow.tracking import MlflowClient

        local = output_dir.resolve()
        self.client = MlflowClient(tracking_uri=os.environ.get("MLFLOW_TRACKING_URI")
                                   or f"sqlite:///{local / 'mlflow.db'}")
        if resume_id:
            self.run_id = resume_id
            self.client.update_run(resume_id, status="RUNNING")
            return
        experiment = os.environ.get("MLFLOW_EXPERIMENT_NAME", "agentgym")
        found = self.client.get_experiment_by_name(experiment)
        experiment_id = found.experiment_id if found is not None else self.client.create_experiment(
            experiment, artifact_location=None if os.environ.get("MLFLOW_TRACKING_URI") else
            (local / "mlartifacts").as_uri())
        self.run_id = self.client.create_run(experiment_id, run_name=run_name).info.run_id
        from mlflow.entities import Param

        params = [Param(k, str(v)[:6000]) for k, v in flat_settings(settings).items()]
        for i in range(0, len(params), 100):  # MLflow takes at most 100 params a batch
            self.client.log_batch(self.run_id, params=params[i:i + 100])

    def log(self, step: int, scalars: Mapping[str, float]) -> None:
        from mlflow.entities import Metric

        now = int(time.time() * 1000)
        metrics = [Metric(key, float(value), now, step) for key, value in scalars.items()]
        for i in range(0, len(metrics), 1000):
            self.client.log_batch(self.run_id, metrics=metrics[i:i + 1000])

    def log_episodes(self, step: int, rows: list[list[Any]]) -> None:
        table = [dict(zip(TABLE_COLUMNS, row)) for row in rows]
        self.client.log_dict(self.run_id, table, f"episodes/step_{step:06d}.json")

    def ids(self) -> dict[str, str]:
        return {"mlflow": self.run_id}

    def close(self) -> None:
        self.client.set_terminated(self.run_id)


CLASSES: dict[str, type[Tracker]] = {"tensorboard": TensorBoardTracker, "wandb": WandbTracker,
                                     "trackio": TrackioTracker, "mlflow": MLflowTracker}


class Trackers:
    """The run's trackers; each call goes to every one still working, and a failure drops that one
    with a warning. ``resume``: continue the runs ``OUTPUT_DIR/trackers.json`` names."""

    def __init__(self, names: Sequence[str], output_dir: str | os.PathLike, run_name: str | None = None,
                 settings: Mapping[str, Any] | None = None, resume: bool = False):
        self.dir = Path(output_dir)
        known = self._read_ids() if resume else {}
        self.items: list[Tracker] = []
        for name in names:
            try:
                tracker = CLASSES[name](self.dir, run_name=run_name or self.dir.name, settings=settings or {},
                                        resume_id=known.get(name))
            except ImportError:
                if name == "tensorboard":  # not installed: metrics.jsonl is the record, as it always was
                    continue
                self._warn(name, "start", ImportError(f"{PACKAGES[name]} is not installed"))
                continue
            except Exception as e:  # noqa: BLE001 - a tracker never costs the run
                self._warn(name, "start", e)
                continue
            self.items.append(tracker)
        ids = {k: v for t in self.items for k, v in t.ids().items()}
        if ids:
            (self.dir / IDS_FILE).write_text(json.dumps(ids, indent=1) + "\n")

    def _read_ids(self) -> dict[str, str]:
        try:
            ids = json.loads((self.dir / IDS_FILE).read_text())
        except (OSError, ValueError):
            return {}
        return {k: v for k, v in ids.items() if isinstance(k, str) and isinstance(v, str)} \
            if isinstance(ids, dict) else {}

    @staticmethod
    def _warn(name: str, what: str, error: BaseException) -> None:
        message = " ".join(str(error).split())[:300]
        warnings.warn(f"--report-to {name}: {what} failed ({type(error).__name__}: {message}); the run goes on "
                      f"without {name}", RuntimeWarning, stacklevel=3)

    def _each(self, what: str, call) -> None:
        for tracker in list(self.items):
            try:
                call(tracker)
            except Exception as e:  # noqa: BLE001 - a tracker never costs the run
                self.items.remove(tracker)
                self._warn(tracker.name, what, e)

    @property
    def names(self) -> list[str]:
        return [t.name for t in self.items]

    def log(self, step: int, scalars: Mapping[str, float]) -> None:
        if scalars:
            self._each("logging", lambda t: t.log(step, scalars))

    def log_episodes(self, step: int, records: Sequence[Mapping[str, Any]]) -> None:
        rows = episode_rows(step, records)
        if rows:
            self._each("logging episodes", lambda t: t.log_episodes(step, rows))

    def close(self) -> None:
        self._each("closing", lambda t: t.close())
        self.items = []
