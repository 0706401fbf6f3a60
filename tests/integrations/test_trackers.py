"""--report-to with the real trackers in their local modes: a tiny GRPO run on ToolQA reports every
scalar of metrics.jsonl (PRS terms included) and a table of its kept episodes to W&B (offline run
files), MLflow (its local SQLite store) and Trackio (its local store), a resumed run continues the same runs,
and a tracker that fails mid-run costs a warning, never the run.

The three packages are not in the dev extra (trackio needs pillow<13): .ci/run runs this file in a
venv layered over the dev install that holds the wandb, mlflow and trackio extras."""

import glob
import json
import os
import struct

import pytest

wandb = pytest.importorskip("wandb")
mlflow = pytest.importorskip("mlflow")
trackio = pytest.importorskip("trackio")

from agentgym.train.base.flags import build  # noqa: E402
from agentgym.train.config.tree import TrainConfig  # noqa: E402
from agentgym.train.hooks import TrainerExtension  # noqa: E402
from agentgym.train.loop import train  # noqa: E402

TOOLQA_SMALL = '{"question_kinds": ["single_hop"], "max_turns": 2}'


@pytest.fixture(autouse=True)
def local_trackers(tmp_path, monkeypatch):
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.setenv("TRACKIO_PROJECT", f"agentgym-test-{tmp_path.name}")


def config(out, **kw):
    base = dict(model="tiny", preset="none", env_kwargs=TOOLQA_SMALL, num_steps=2, num_groups=2, group_size=2,
                max_new_tokens=12, micro_batch_size=4, num_epochs=1, num_minibatches=1, output_dir=str(out),
                save_every=1, progress=False, quiet=True, seed=3, cold_start={"num_steps": 0}, eval_episodes=0,
                log_episodes=1, report_to=("tensorboard", "wandb", "mlflow", "trackio"))
    base.update(kw)
    return build(TrainConfig, **base)


def scalar_rows(out):
    rows = [json.loads(line) for line in open(os.path.join(out, "metrics.jsonl"))]
    return [{k: v for k, v in r.items() if k != "step" and isinstance(v, (int, float)) and not isinstance(v, bool)}
            for r in rows], [r["step"] for r in rows]


def wandb_history(run_dir):
    """The history rows of a W&B offline run file (LevelDB-style log blocks of Record protos, what
    `wandb sync` reads)."""
    from wandb.proto import wandb_internal_pb2

    (path,) = glob.glob(os.path.join(run_dir, "run-*.wandb"))
    data = open(path, "rb").read()
    assert data[:4] == b":W&B"
    pos, block, rows, pending = 7, 32768, [], b""
    while pos + 7 <= len(data):
        if block - pos % block < 7:  # a block's tail too short for a header is padding
            pos += block - pos % block
            continue
        _crc, length, kind = struct.unpack("<IHB", data[pos:pos + 7])
        chunk, pos = data[pos + 7:pos + 7 + length], pos + 7 + length
        pending = chunk if kind in (1, 2) else pending + chunk
        if kind in (1, 4):
            record = wandb_internal_pb2.Record()
            record.ParseFromString(pending)
            if record.WhichOneof("record_type") == "history":
                rows.append({item.key or "/".join(item.nested_key): json.loads(item.value_json)
                             for item in record.history.item})
    return rows


def test_every_tracker_gets_every_scalar_and_the_episode_table_and_a_resume_continues_its_runs(tmp_path):
    from mlflow.tracking import MlflowClient
    from trackio.sqlite_storage import SQLiteStorage

    out = tmp_path / "run"
    train(config(out))
    first_ids = json.loads((out / "trackers.json").read_text())
    train(config(out, num_steps=3, resume="auto"))
    ids = json.loads((out / "trackers.json").read_text())
    assert ids == first_ids and set(ids) == {"wandb", "mlflow", "trackio"}
    scalars, steps = scalar_rows(out)
    assert steps == [1, 2, 3] and any(k.startswith("prs/") for k in scalars[0])

    # MLflow: one run, every scalar at its step, the settings as params, one table per step
    client = MlflowClient(tracking_uri=f"sqlite:///{(out / 'mlflow.db').resolve()}")
    run = client.get_run(ids["mlflow"])
    assert run.data.params["run.seed"] == "3" and run.info.status == "FINISHED"
    for key in scalars[0]:
        history = sorted((m.step, m.value) for m in client.get_metric_history(ids["mlflow"], key))
        assert [s for s, _ in history] == [s for s, row in zip(steps, scalars) if key in row], key
        assert [v for _, v in history] == pytest.approx([row[key] for row in scalars if key in row]), key
    tables = sorted(os.listdir(client.download_artifacts(ids["mlflow"], "episodes", str(tmp_path / "dl"))))
    assert tables == ["step_000001.json", "step_000002.json", "step_000003.json"]
    table = json.load(open(tmp_path / "dl" / "episodes" / "step_000003.json"))
    assert table and {"task_id", "reply", "reward", "terms", "advantage", "return"} <= set(table[0])

    # W&B: the offline runs (the first and its resume) under OUTPUT_DIR/wandb, one run id
    run_dirs = sorted(glob.glob(str(out / "wandb" / "offline-run-*")))
    assert len(run_dirs) == 2 and all(d.endswith(ids["wandb"]) for d in run_dirs)
    history = [row for d in run_dirs for row in wandb_history(d)]
    assert [row["_step"] for row in history] == steps
    for row, want in zip(history, scalars):
        assert {k: row[k] for k in want} == pytest.approx(want)
        assert row["episodes/_type"] == "table-file" and row["episodes/ncols"] == 11

    # Trackio: its local store, the same run continued
    logs = SQLiteStorage.get_logs(os.environ["TRACKIO_PROJECT"], ids["trackio"])
    logged = {}
    for row in logs:
        logged.setdefault(row["step"], {}).update(row)
    assert sorted(logged) == steps
    for step, want in zip(steps, scalars):
        assert {k: logged[step][k] for k in want} == pytest.approx(want) and "episodes" in logged[step]


class BreakMLflowStore(TrainerExtension):
    """After step 1's metrics, the bytes of MLflow's SQLite store are overwritten: every later write
    to it fails, as on a damaged disk."""

    name = "break-mlflow"

    def __init__(self, store):
        self.store, self.calls = store, 0

    def metrics(self):
        self.calls += 1
        if self.calls == 2:
            with open(self.store, "r+b") as f:
                f.write(b"not a database" * 4096)
        return {}


def test_a_tracker_that_fails_mid_run_is_one_warning_and_the_run_and_the_others_go_on(tmp_path):
    out = tmp_path / "run"
    with pytest.warns(RuntimeWarning, match=r"--report-to mlflow: logging failed .*the run goes on without mlflow"):
        result = train(config(out, num_steps=3, report_to=("mlflow", "wandb")), [BreakMLflowStore(out / "mlflow.db")])
    assert [row["step"] for row in result.history] == [1, 2, 3]
    _, steps = scalar_rows(out)
    (run_dir,) = glob.glob(str(out / "wandb" / "offline-run-*"))
    assert steps == [1, 2, 3] and [row["_step"] for row in wandb_history(run_dir)] == steps
