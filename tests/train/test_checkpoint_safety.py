"""Reading a checkpoint never runs code from it, and resuming trusts nothing it reads.

Booby-trapped files carry a ``__reduce__`` payload that would create a marker file: the marker
must never appear, whatever reads the checkpoint (``agentgym eval``, ``--resume``, the readers)."""

import copy
import json
import os
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from agentgym.train.base.state_file import (
    LEGACY_NAME,
    TENSORS_NAME,
    TrainerStateError,
    convert_legacy,
    read_state,
    write_state,
)
from agentgym.train.run.checkpoint import CheckpointError, load_trainer_state, resume_point, save_checkpoint

ROOT = Path(__file__).resolve().parents[2]


class Payload:
    """Unpickling this runs ``os.system``: what a hostile checkpoint does."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return os.system, (f"touch {self.marker}",)


def booby_trap(step_dir: Path, marker: Path) -> None:
    """A checkpoint in the old layout whose pickled trainer state runs a command when unpickled."""
    for name in ("trainer_state.json", TENSORS_NAME):
        (step_dir / name).unlink(missing_ok=True)
    torch.save({"step": 2, "optimizer": {}, "rng": {}, "extra": {"data_position": Payload(marker)}},
               step_dir / LEGACY_NAME)


@pytest.fixture
def saved(tmp_path, tiny):
    """A run directory with real checkpoints step_2 and step_4 of the tiny model."""
    model, tokenizer = copy.deepcopy(tiny[0]), tiny[1]  # the session's model stays untouched
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    model(torch.tensor([[1, 2, 3]])).logits.sum().backward()
    optimizer.step()
    run = tmp_path / "run"
    for step in (2, 4):
        save_checkpoint(run, step, model, tokenizer, optimizer,
                        extra={"data_position": step * 10, "config": {"env": {"env_id": "ToolQA-v0"}}})
    return run


def test_state_round_trips_what_a_trainer_saves(tmp_path):
    state = {"step": 3, "rng": {"python": random.getstate(), "numpy": np.random.get_state(),
                                "torch": torch.get_rng_state()},
             "optimizer": {"state": {0: {"step": torch.tensor(2.0), "exp_avg": torch.randn(3, 2)}},
                           "param_groups": [{"lr": 1e-3, "betas": (0.9, 0.999), "params": [0]}]},
             "extra": {"nan": float("nan"), "inf": float("-inf"), "np": np.float32(0.25), "$odd": {"$tensor": "x"},
                       "tuple_keys": {(1, "a"): [None, True, "s"]}, "empty": {}}}
    write_state(tmp_path, state)
    back = read_state(tmp_path)
    assert back["rng"]["python"] == state["rng"]["python"]
    random.setstate(back["rng"]["python"])
    assert back["rng"]["numpy"][0] == "MT19937" and np.array_equal(back["rng"]["numpy"][1], state["rng"]["numpy"][1])
    assert back["rng"]["numpy"][1].dtype == np.uint32 and back["rng"]["numpy"][2:] == state["rng"]["numpy"][2:]
    assert torch.equal(back["rng"]["torch"], state["rng"]["torch"])
    assert torch.equal(back["optimizer"]["state"][0]["exp_avg"], state["optimizer"]["state"][0]["exp_avg"])
    assert back["optimizer"]["param_groups"][0]["betas"] == (0.9, 0.999)
    extra = back["extra"]
    assert np.isnan(extra["nan"]) and extra["inf"] == float("-inf")
    assert type(extra["np"]) is np.float32 and extra["np"] == np.float32(0.25)
    assert extra["$odd"] == {"$tensor": "x"} and extra["tuple_keys"] == {(1, "a"): [None, True, "s"]}
    assert read_state(tmp_path, tensors=False)["optimizer"]["state"][0]["exp_avg"] is None


def test_saving_an_unsafe_type_fails_at_save_time_naming_the_path(tmp_path):
    with pytest.raises(TypeError, match=r"state\.extra\.hook: Payload"):
        write_state(tmp_path, {"extra": {"hook": Payload(tmp_path / "x")}})


def test_resume_and_readers_never_run_a_booby_trapped_pickle(saved, tmp_path):
    marker = tmp_path / "pwned"
    step = saved / "checkpoints" / "step_4"
    booby_trap(step, marker)
    with pytest.raises(TrainerStateError, match="cannot be read safely.*convert-checkpoint"):
        read_state(step)
    with pytest.raises(CheckpointError, match="trainer_state.pt"):
        resume_point(step, auto=False)
    with pytest.raises(CheckpointError):
        load_trainer_state(step)
    with pytest.raises(TrainerStateError):
        convert_legacy(step)  # without --trust-pickle the conversion reads as safely
    assert not marker.exists()


@pytest.mark.multiproc
def test_agentgym_eval_on_a_booby_trapped_checkpoint_runs_nothing_and_says_one_line(saved, tmp_path):
    marker = tmp_path / "pwned"
    step = saved / "checkpoints" / "step_4"
    booby_trap(step, marker)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-m", "agentgym.cli", "eval", "--model", str(step), "--num-episodes", "1"],
                         capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert out.returncode == 2 and not marker.exists()
    assert "Traceback" not in out.stderr and "trainer_state.pt" in out.stderr and "cannot be read safely" in out.stderr


def test_a_safe_legacy_checkpoint_still_resumes_and_converts(saved):
    step = saved / "checkpoints" / "step_4"
    state = read_state(step)
    torch.save(state, step / LEGACY_NAME)  # what older versions wrote: a plain pickle of this state
    for name in ("trainer_state.json", TENSORS_NAME):
        (step / name).unlink()
    checkpoint, legacy = resume_point(saved, auto=True)
    assert checkpoint == step and legacy.state.data_position == 40
    assert np.array_equal(legacy.rng["numpy"][1], state["rng"]["numpy"][1])
    convert_legacy(step)
    assert (step / "trainer_state.json").is_file() and not (step / LEGACY_NAME).exists()
    assert read_state(step)["extra"] == state["extra"]


@pytest.mark.parametrize("latest", ["step_99", "../../../etc", "/etc", "step_4/../step_2", ""])
def test_a_dangling_or_hostile_latest_falls_back_to_the_newest_complete_checkpoint(saved, latest, capsys):
    (saved / "checkpoints" / "latest").write_text(latest)
    checkpoint, state = resume_point(saved, auto=True)
    assert checkpoint == saved / "checkpoints" / "step_4" and state.step == 4
    assert "latest" in capsys.readouterr().err


def _truncate(path):
    path.write_bytes(path.read_bytes()[:50])


@pytest.mark.parametrize("damage", [
    lambda d: _truncate(d / TENSORS_NAME),
    lambda d: _truncate(d / "trainer_state.json"),
    lambda d: (d / "model.safetensors").write_bytes(b"garbage" * 20),
    lambda d: (d / "model.safetensors").unlink(),
    lambda d: (d / "config.json").write_text("{not json"),
], ids=["truncated-tensors", "truncated-json", "garbage-weights", "missing-weights", "bad-config"])
def test_a_damaged_latest_checkpoint_falls_back_to_the_previous_one_naming_the_file(saved, damage, capsys):
    damage(saved / "checkpoints" / "step_4")
    checkpoint, state = resume_point(saved, auto=True)
    assert checkpoint == saved / "checkpoints" / "step_2" and state.state.data_position == 20
    err = capsys.readouterr().err
    assert "step_4" in err and "resuming from" in err and "Traceback" not in err
    with pytest.raises(CheckpointError, match="step_4"):
        resume_point(saved / "checkpoints" / "step_4", auto=False)  # named directly: no silent fallback


def test_resume_refuses_to_start_over_when_no_checkpoint_loads(saved):
    (saved / "metrics.jsonl").write_text('{"step": 1}\n')
    for step in ("step_2", "step_4"):
        (saved / "checkpoints" / step / "config.json").write_text("{not json")
    (saved / "checkpoints" / "latest").write_text("step_99")
    with pytest.raises(CheckpointError, match="Refusing to start over"):
        resume_point(saved, auto=True)
    assert (saved / "metrics.jsonl").read_text() == '{"step": 1}\n'


def test_auto_resume_with_no_checkpoint_starts_fresh(tmp_path):
    assert resume_point(tmp_path, auto=True) == (None, None)
    with pytest.raises(CheckpointError, match="no checkpoint"):
        resume_point(tmp_path, auto=False)


def _state_doc(tree) -> str:
    return json.dumps({"format": "agentgym-trainer-state", "version": 1, "state": {"x": tree}})


# Each is a few hundred bytes of JSON that, read naively, allocates far more than the file holds or
# escapes as an exception that is not TrainerStateError.
BOMBS = {
    "bytes-dtype": _state_doc({"$ndarray": {"dtype": "S100000000", "shape": [2], "data": ["a", "b"]}}),
    "str-dtype": _state_doc({"$ndarray": {"dtype": "<U25000000", "shape": [2], "data": ["a", "b"]}}),
    "subarray-dtype": _state_doc({"$ndarray": {"dtype": "(100000000,)u1", "shape": [1], "data": [0]}}),
    "void-scalar": _state_doc({"$np": {"dtype": "|V8", "value": 100000000}}),
    "shape-not-data": _state_doc({"$ndarray": {"dtype": "<f8", "shape": [100000000], "data": [0.5]}}),
    "nested": '{"format": "agentgym-trainer-state", "version": 1, "state": {"x": ' + "[" * 100000 + "]" * 100000 + "}}",
    "nested-tags": _state_doc(None).replace("null", '{"$tuple": [' * 300 + "1" + "]}" * 300),
    "huge-int": _state_doc(None).replace("null", "9" * 5000),
}


@pytest.mark.parametrize("text", BOMBS.values(), ids=BOMBS.keys())
def test_a_bomb_in_the_trainer_state_is_one_error_before_anything_large_is_allocated(tmp_path, text):
    import tracemalloc

    (tmp_path / "trainer_state.json").write_text(text)
    tracemalloc.start()  # numpy reports its array memory to tracemalloc too
    try:
        with pytest.raises(TrainerStateError) as e:
            read_state(tmp_path, tensors=False)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    message = str(e.value)
    assert "\n" not in message and "trainer_state.json" in message and len(message) < 400, message
    assert peak < 8 * len(text) + 2_000_000, peak


def test_a_trainer_state_larger_than_the_cap_is_refused_unread(tmp_path, monkeypatch):
    from agentgym.train.base import state_file

    write_state(tmp_path, {"step": 1, "extra": {"note": "x" * 5000}})
    monkeypatch.setattr(state_file, "MAX_JSON_BYTES", 4096)
    with pytest.raises(TrainerStateError, match=r"trainer_state.json: \d+ bytes, more than .*4096"):
        read_state(tmp_path)


def test_honest_arrays_and_scalars_still_read_back(tmp_path):
    state = {"a": np.arange(5, dtype=np.uint32), "b": np.array([["x", "yz"]]), "c": np.zeros((0, 3)),
             "d": np.float16(1.5), "e": np.array(True), "f": np.int64(-3), "g": 2 ** 127}
    write_state(tmp_path, state)
    back = read_state(tmp_path)
    for key, value in state.items():
        assert type(back[key]) is type(value) and np.array_equal(back[key], value)
        if isinstance(value, np.ndarray):
            assert back[key].dtype == value.dtype and back[key].shape == value.shape


@pytest.mark.multiproc
def test_agentgym_eval_refuses_a_dtype_bomb_in_one_line_without_allocating_it(tmp_path):
    # what a 151-byte file made `agentgym eval` do: allocate 2 GB, then refuse the checkpoint
    step = tmp_path / "step"
    step.mkdir()
    (step / "config.json").write_text("{}")  # a model directory as far as the flags are checked
    (step / "trainer_state.json").write_text(_state_doc(
        {"$ndarray": {"dtype": "S1000000000", "shape": [2], "data": ["a", "b"]}}))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    probe = ("import resource, subprocess, sys; "
             "out = subprocess.run(sys.argv[1:], capture_output=True, text=True); "
             "sys.stdout.write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)); "
             "sys.stderr.write(out.stderr); sys.exit(out.returncode)")
    out = subprocess.run([sys.executable, "-c", probe, sys.executable, "-m", "agentgym.cli", "eval", "--model",
                          str(step), "--num-episodes", "1"], capture_output=True, text=True, env=env, cwd=tmp_path,
                         timeout=300)
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
    assert int(out.stdout) < 1_000_000, f"peak RSS {int(out.stdout) // 1024} MiB"  # KiB: under 1 GiB
    assert out.stderr.strip().count("\n") == 0 and "trainer_state.json" in out.stderr, out.stderr


@pytest.mark.parametrize("text", ["[" * 100000 + "]" * 100000, '{"recipe": {"seed": ' + "7" * 5000 + "}}",
                                  '{"recipe": ' + '{"a": ' * 500 + "1" + "}" * 500 + "}", "[1, 2]", "{not json"],
                         ids=["nested", "huge-int", "nested-500", "not-an-object", "not-json"])
def test_a_damaged_cold_start_record_is_one_error_naming_it(tmp_path, text):
    from agentgym.train.base.records import RECORD_FILE, is_complete, read_record

    (tmp_path / RECORD_FILE).write_text(text)
    (tmp_path / "config.json").write_text("{}")
    (tmp_path / "tokenizer_config.json").write_text("{}")
    with pytest.raises(TrainerStateError) as e:
        read_record(tmp_path)
    assert "\n" not in str(e.value) and RECORD_FILE in str(e.value) and len(str(e.value)) < 400
    assert not is_complete(tmp_path)  # a cold start whose record is damaged is made again, not reused
    (tmp_path / RECORD_FILE).unlink()
    assert read_record(tmp_path) is None


@pytest.mark.multiproc
def test_agentgym_eval_on_a_nested_cold_start_record_says_one_line(tmp_path):
    from agentgym.train.base.records import RECORD_FILE

    (tmp_path / RECORD_FILE).write_text('{"recipe": ' + "[" * 100000 + "]" * 100000 + "}")
    (tmp_path / "config.json").write_text("{}")  # a model directory as far as the flags are checked
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-m", "agentgym.cli", "eval", "--model", str(tmp_path), "--num-episodes",
                          "1"], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
    assert out.stderr.strip().count("\n") == 0 and RECORD_FILE in out.stderr, out.stderr


def _nested(depth):
    value = 0
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize("value", [10 ** 200, _nested(150), np.array(["x" * 300] + [""] * 300)],
                         ids=["huge-int", "nested", "wide-strings"])
def test_saving_what_would_not_read_back_fails_at_save_time(tmp_path, value):
    with pytest.raises(TypeError, match="would not read back"):
        write_state(tmp_path, {"extra": value})
    assert not (tmp_path / "trainer_state.json").exists()
