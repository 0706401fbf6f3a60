"""Real trainer runs keep their episodes (``--log-episodes``) without training any differently, keep
them across a resume, and carry each method's own signals."""

import json
import os

import gcd
import gigpo
import grpo
import ppo
import pytest
import torch
import vspo
from safetensors.torch import load_file
from trainer_helpers import small_config

VOLATILE = ("time/", "tokens_per_second")


def _rows(path):
    return [json.loads(line) for line in open(path, encoding="utf-8")]


def _stable(rows):
    return [{k: v for k, v in r.items() if not k.startswith(VOLATILE)} for r in rows]


def _weights(run):
    return load_file(str(run / "checkpoints" / "step_4" / "model.safetensors"))


@pytest.mark.learning
def test_logging_episodes_trains_the_same_and_a_resume_keeps_the_earlier_files(tmp_path):
    kw = dict(num_steps=4, eval_episodes=2, eval_every=2, save_every=2)
    grpo.main(small_config(tmp_path / "off", log_episodes=0, **kw))
    assert not (tmp_path / "off" / "run" / "episodes").exists()

    # the same run with logging on, killed after its step-2 checkpoint, then resumed
    on = tmp_path / "on" / "run"
    grpo.main(small_config(tmp_path / "on", log_episodes=1, **{**kw, "num_steps": 2}))
    folder = on / "episodes"
    kept = {name: (folder / name).read_bytes() for name in os.listdir(folder)}
    assert sorted(kept) == ["eval_step_0_valid.jsonl", "eval_step_2_valid.jsonl", "step_1.jsonl", "step_2.jsonl"]
    mtimes = {name: os.stat(folder / name).st_mtime_ns for name in kept}
    (folder / "step_3.jsonl").write_text("{}\n")  # a step the killed run logged past its checkpoint
    grpo.main(small_config(tmp_path / "on", log_episodes=1, resume="auto", **kw))

    assert sorted(os.listdir(folder)) == sorted([*kept, "step_3.jsonl", "step_4.jsonl", "eval_step_4_valid.jsonl"])
    assert {name: (folder / name).read_bytes() for name in kept} == kept
    assert {name: os.stat(folder / name).st_mtime_ns for name in kept} == mtimes
    assert _rows(folder / "step_3.jsonl")[0]["step"] == 3

    # training is unchanged by logging: the same metrics and the same weights
    assert _stable(_rows(on / "metrics.jsonl")) == _stable(_rows(tmp_path / "off" / "run" / "metrics.jsonl"))
    a, b = _weights(tmp_path / "off" / "run"), _weights(on)
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)

    # one group of the step (group size 2), every evaluation episode
    step = _rows(folder / "step_4.jsonl")
    assert len(step) == 2 and len({r["group"] for r in step}) == 1
    assert {r["version"] for r in step} == {3} and {r["lag"] for r in step} == {0}
    for r in step:
        assert r["turns"] and all(t["advantage"] is not None and "terms" in t for t in r["turns"])
        assert r["system_prompt"].startswith("You answer questions") and r["task_id"]
    assert len(_rows(folder / "eval_step_4_valid.jsonl")) == 2


@pytest.mark.parametrize("trainer, cls, kw, episode_signals, turn_signals", [
    (vspo, "VSPOTrainConfig", {}, {"vspo/resampled", "vspo/task_value", "vspo/visits"}, set()),
    (gigpo, "GiGPOTrainConfig", {}, set(), {"gigpo/step_advantage"}),
    (gcd, "GCDTrainConfig", {"gcd": {"k": 2, "max_judged_steps": 2, "balance": "none"}}, set(),
     {"gcd/label", "gcd/reason"}),
    (ppo, "PPOTrainConfig", {"group_size": 1}, set(), {"ppo/value"}),
])
def test_each_method_leaves_its_signals_on_the_saved_episodes(tmp_path, trainer, cls, kw, episode_signals,
                                                              turn_signals):
    trainer.main(small_config(tmp_path, cls=getattr(trainer, cls), num_steps=1, num_epochs=1, num_minibatches=1,
                              log_episodes=4, **kw))
    rows = _rows(tmp_path / "run" / "episodes" / "step_1.jsonl")
    assert rows
    for r in rows:
        assert episode_signals <= set(r["signals"])
        for turn in r["turns"]:
            assert turn_signals <= set(turn.get("signals", {}))
    if trainer is gcd:  # the judged steps carry the k verdicts the judge gave them
        verdicts = [t["signals"]["gcd/verdicts"] for r in rows for t in r["turns"] if t["signals"].get("gcd/verdicts")]
        assert verdicts and all(len(v) == 2 for v in verdicts)


def test_an_async_run_records_the_weights_version_and_lag(tmp_path):
    grpo.main(small_config(tmp_path, num_steps=3, async_steps=1, save_every=0, num_epochs=1, num_minibatches=1))
    lags = [_rows(tmp_path / "run" / "episodes" / f"step_{n}.jsonl")[0]["lag"] for n in (1, 2, 3)]
    versions = [_rows(tmp_path / "run" / "episodes" / f"step_{n}.jsonl")[0]["version"] for n in (1, 2, 3)]
    assert lags == [0, 1, 1] and versions == [0, 0, 1]
