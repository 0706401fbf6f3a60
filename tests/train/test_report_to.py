"""--report-to: the names it takes, its one-line refusals, --no-tensorboard, and a tracker that
fails to start costing a warning, never the run. The trackers themselves are tested with their real
packages in tests/integrations/test_trackers.py."""

import importlib.util
import json

import pytest

from agentgym.train.base.errors import ConfigError
from agentgym.train.base.flags import build
from agentgym.train.base.metrics import MetricsLogger
from agentgym.train.base.trackers import Trackers, episode_rows, report_to_names
from agentgym.train.config.cli import parse
from agentgym.train.config.tree import SFTRunConfig, TrainConfig


def test_names_are_space_or_comma_separated_and_none_is_alone():
    assert report_to_names(("tensorboard",)) == ("tensorboard",)
    assert report_to_names(["wandb,mlflow", "trackio", "wandb"]) == ("wandb", "mlflow", "trackio")
    assert report_to_names("none") == report_to_names([]) == ()
    with pytest.raises(ConfigError, match=r"--report-to 'wnadb': choose from tensorboard, wandb, trackio, mlflow"):
        report_to_names(["wnadb"])
    with pytest.raises(ConfigError, match="give it alone"):
        report_to_names(["none", "wandb"])


def test_the_command_line_takes_hugging_faces_spelling(capsys):
    assert parse(TrainConfig, []).run.report_to == ("tensorboard",)
    assert parse(TrainConfig, ["--report-to", "none"]).run.report_to == ()
    with pytest.raises(SystemExit):
        parse(TrainConfig, ["--report-to", "tensorbaord"])
    assert "--report-to 'tensorbaord'" in capsys.readouterr().err
    with pytest.raises(SystemExit):  # the cold start's own command checks it too
        parse(SFTRunConfig, ["--report-to", "tensorboard", "none"])
    assert "--report-to none reports nowhere but metrics.jsonl: give it alone" in capsys.readouterr().err
    cfg = build(TrainConfig, report_to=("tensorboard",), tensorboard=False)
    assert cfg.run.trackers == ()


@pytest.mark.skipif(importlib.util.find_spec("wandb") is not None, reason="wandb is installed here")
def test_a_tracker_that_is_not_installed_is_one_line_naming_its_extra(capsys):
    with pytest.raises(SystemExit):
        parse(TrainConfig, ["--report-to", "wandb"])
    err = capsys.readouterr().err
    assert "--report-to wandb needs the wandb package: pip install 'agentgym[wandb]'" in err
    assert "Traceback" not in err


def test_a_tracker_that_fails_to_start_is_a_warning_and_the_log_goes_on(tmp_path, monkeypatch):
    # TensorBoard's writer cannot make its folder where a file stands: a real failure at start
    (tmp_path / "tensorboard").write_text("not a folder")
    with pytest.warns(RuntimeWarning, match=r"--report-to tensorboard: start failed .*the run goes on without"):
        logger = MetricsLogger(tmp_path, report_to=("tensorboard",))
    logger.log(1, {"loss": 0.5, "prs/format": 1.0})
    logger.close()
    assert [json.loads(line) for line in open(tmp_path / "metrics.jsonl")] == [
        {"step": 1, "loss": 0.5, "prs/format": 1.0}]


def test_tensorboard_gets_every_scalar_and_a_table_is_one_row_per_turn(tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    logger = MetricsLogger(tmp_path, report_to=("tensorboard",))
    assert logger.trackers.names == ["tensorboard"]
    logger.log(1, {"loss": 0.5, "prs/format": 1.0, "note": "text", "flag": True})
    logger.log(2, {"loss": 0.25, "prs/format": 0.5})
    logger.close()
    events = EventAccumulator(str(tmp_path / "tensorboard"))
    events.Reload()
    assert sorted(events.Tags()["scalars"]) == ["loss", "prs/format"]
    assert [(e.step, e.value) for e in events.Scalars("loss")] == [(1, 0.5), (2, 0.25)]
    record = {"task_id": "t1", "group": 0, "return": 0.3, "success": False,
              "turns": [{"reply": "<search>x</search>", "reward": 0.2, "terms": {"format": 1.0}, "advantage": 0.5},
                        {"reply": "<answer>y</answer>", "reward": 0.1, "terms": {}, "advantage": 0.5}]}
    assert episode_rows(3, [record]) == [
        [3, "t1", 0, 0, 0, "<search>x</search>", 0.2, '{"format": 1.0}', 0.5, 0.3, False],
        [3, "t1", 0, 0, 1, "<answer>y</answer>", 0.1, "{}", 0.5, 0.3, False]]
    assert Trackers((), tmp_path).names == []
