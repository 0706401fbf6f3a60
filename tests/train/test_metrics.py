"""``metrics.jsonl`` on resume: the rows up to the checkpoint are kept; a row whose step a person
edited into something that is not a step is one error naming the file, its line, the field and
what it takes (the resume would otherwise drop or misplace it, or stop in a traceback)."""

import json

import pytest

from agentgym.train.base.errors import ConfigError, RunFileError
from agentgym.train.base.metrics import MetricsLogger
from agentgym.train.config.cli import exit_on_config_error


def _write(path, *rows: str) -> None:
    (path / "metrics.jsonl").write_text("".join(row + "\n" for row in rows))


def test_resume_keeps_the_rows_up_to_its_step(tmp_path):
    _write(tmp_path, '{"step": 1, "a": 1}', '{"step": 2, "a": 2}', '{"step": 3, "a": 3}', '{"step": 2, "eval/x": 1}')
    MetricsLogger(tmp_path, resume_step=2, tensorboard=False).close()
    assert [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()] == [
        {"step": 1, "a": 1}, {"step": 2, "a": 2}]


@pytest.mark.parametrize("row,got", [
    ('{"step": 1e999, "a": 1}', "got inf"),
    ('{"step": "1", "a": 1}', "got '1'"),
    ('{"step": 1.5, "a": 1}', "got 1.5"),
    ('{"step": true, "a": 1}', "got True"),
    ('{"step": -1, "a": 1}', "got -1"),
    ('{"a": 1}', "got no step"),
    ('[1, 2]', "got [1, 2]"),
], ids=["1e999", "string", "fraction", "bool", "negative", "missing", "not-an-object"])
def test_an_edited_step_is_one_error_naming_the_file_line_and_field(tmp_path, row, got):
    _write(tmp_path, '{"step": 1, "a": 1}', row, '{"step": 3, "a": 3}')
    before = (tmp_path / "metrics.jsonl").read_text()
    with pytest.raises(RunFileError) as caught:
        MetricsLogger(tmp_path, resume_step=2, tensorboard=False)
    message = str(caught.value)
    assert message.startswith(f"{tmp_path / 'metrics.jsonl'}:2: ") and '"step"' in message, message
    assert "an integer >= 0" in message and got in message and "\n" not in message, message
    assert (tmp_path / "metrics.jsonl").read_text() == before  # nothing dropped on the way out


def test_a_line_cut_short_is_still_dropped_with_a_warning(tmp_path):
    _write(tmp_path, '{"step": 1, "a": 1}', '{"step": 2, "a"')
    with pytest.warns(UserWarning, match="metrics.jsonl:2: skipping a line that is not valid JSON"):
        MetricsLogger(tmp_path, resume_step=2, tensorboard=False).close()
    assert (tmp_path / "metrics.jsonl").read_text() == '{"step": 1, "a": 1}\n'


@pytest.mark.parametrize("resume_step", [2, None], ids=["resume", "fresh"])
def test_a_folder_named_metrics_jsonl_is_one_error(tmp_path, resume_step):
    (tmp_path / "metrics.jsonl").mkdir()
    with pytest.raises(RunFileError, match=r"metrics.jsonl is a folder, not the run's metrics file"):
        MetricsLogger(tmp_path, resume_step=resume_step, tensorboard=False)


def test_a_trainer_script_says_it_in_one_line(tmp_path, capsys):
    _write(tmp_path, '{"step": "1"}')
    assert issubclass(RunFileError, ConfigError)
    with pytest.raises(SystemExit) as caught, exit_on_config_error():
        MetricsLogger(tmp_path, resume_step=2, tensorboard=False)
    err = capsys.readouterr().err
    assert caught.value.code == 2 and err.count("\n") == 1 and err.startswith("error: ") and "Traceback" not in err
