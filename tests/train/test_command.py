"""``agentgym train METHOD``: every registered method from the installed package's console command."""

import json
import subprocess
import sys

import pytest

from agentgym.train.command import main
from agentgym.train.methods import METHODS

TINY_ENV = '{"question_kinds": ["single_hop"], "max_turns": 2}'


def agentgym(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "agentgym.cli", *args], capture_output=True, text=True, timeout=120)


def test_train_help_lists_every_registered_method(capsys):
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for name, method in METHODS.items():
        assert f"  {name}" in out and method.summary in out


def test_a_method_help_lists_its_own_flags_under_its_command_name(capsys):
    with pytest.raises(SystemExit) as e:
        main(["vspo", "--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert "usage: agentgym train vspo" in out and "--vspo.eta" in out and "--num-steps" in out


def test_an_unknown_method_is_one_line_naming_the_closest(capsys):
    assert main(["vsop", "--num-steps", "1"]) == 2
    err = capsys.readouterr().err
    assert err.strip().splitlines() == [err.strip()] and "did you mean vspo?" in err


@pytest.mark.multiproc
def test_the_agentgym_command_dispatches_train():
    run = agentgym("train", "--help")
    assert run.returncode == 0 and "  gigpo" in run.stdout, run.stderr
    assert "agentgym train METHOD" in agentgym("--help").stdout


@pytest.mark.slow
@pytest.mark.learning
@pytest.mark.parametrize("name", list(METHODS))
def test_train_runs_every_registered_method(name, tmp_path):
    out = tmp_path / name
    common = ["--model", "tiny", "--env-kwargs", TINY_ENV, "--num-steps", "1", "--output-dir", str(out), "--quiet",
              "--no-progress", "--no-tensorboard", "--cpu-threads", "1"]
    if METHODS[name].cold_start:
        argv = [name, *common, "--num-episodes", "2"]
    else:
        argv = [name, *common, "--preset", "none", "--cold-start.num-steps", "0", "--eval-episodes", "0",
                "--num-groups", "2", "--group-size", "2", "--max-new-tokens", "8"]
    assert main(argv) == 0
    if METHODS[name].cold_start:
        assert (out / "final" / "config.json").exists()
    else:
        steps = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
        assert [s["step"] for s in steps if "step" in s][-1] == 1
