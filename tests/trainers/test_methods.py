"""VSPO, GiGPO and DAPO trainers on the real envs with the tiny model: smoke runs, VSPO's
resampling, exact resume, and the cold-start / RL task split."""

import json
import subprocess
import sys

import dapo
import gigpo
import grpo
import pytest
import torch
import vspo
from safetensors.torch import load_file
from trainer_helpers import TOOLQA_SMALL, small_config

from agentgym.train.base.records import read_record
from agentgym.train.base.state_file import read_state
from agentgym.train.rollout.tasks import TaskStream

VOLATILE = ("time/", "tokens_per_second")


def rows(path):
    return [json.loads(line) for line in open(path / "run" / "metrics.jsonl")]


@pytest.mark.learning
def test_vspo_replaces_zero_advantage_groups_and_trains_on_none(tmp_path, cold_model):
    cfg = small_config(tmp_path, cls=vspo.VSPOTrainConfig, model=cold_model, num_steps=3, num_groups=4,
                       group_size=4, max_new_tokens=40, num_epochs=1, num_minibatches=1)
    vspo.main(cfg)
    log = rows(tmp_path)
    assert sum(r["vspo/groups_dropped"] for r in log) > 0
    assert sum(r["vspo/groups_replaced"] for r in log) > 0
    for r in log:
        assert r["vspo/groups_replaced"] + r["vspo/shortfall"] == r["vspo/groups_dropped"]
        if r["vspo/shortfall"] == 0:
            assert r["vspo/zero_std_frac_after"] == 0.0 and r["groups/zero_advantage_frac"] == 0.0
        # the extra rollouts are costed, not hidden in the step
        assert r.get("rollout/groups_resample", 0.0) == r["vspo/extra_groups"]
    assert any(r.get("tokens/generated_resample", 0) > 0 for r in log)


def test_a_vspo_step_whose_groups_all_tie_logs_what_it_played_and_says_the_update_was_skipped(tmp_path, capsys):
    # greedy sampling: every episode of a group plays alike, so every group (and every resample) ties
    cfg = small_config(tmp_path, cls=vspo.VSPOTrainConfig, num_steps=2, temperature=0.0, max_new_tokens=6,
                       quiet=False, vspo={"max_resample_rounds": 1})
    vspo.main(cfg)
    log, lines = rows(tmp_path), [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("step ")]
    assert len(log) == len(lines) == 2
    for r, line in zip(log, lines):
        assert r["update/skipped"] == 1.0 and r["batch/episodes"] == 0
        assert r["vspo/shortfall"] == r["vspo/groups_dropped"] == 2
        # the episodes it played: the batch's 2 groups and the resampled 2, 2 episodes each
        assert r["episodes/played"] == 8 and r["groups/played_tied_frac"] == 1.0
        assert 0.0 <= r["reward/played_mean"] <= 1.0 and r["success/played_mean"] == 0.0
        assert "update skipped: all groups tied" in line and "nan" not in line
        assert f"played reward {r['reward/played_mean']:.3f}" in line


@pytest.mark.learning
def test_vspo_resume_with_its_value_buffer_matches_an_uninterrupted_run_bitwise(tmp_path, cold_model):
    kw = dict(cls=vspo.VSPOTrainConfig, model=cold_model, num_groups=2, group_size=4, max_new_tokens=24)
    vspo.main(small_config(tmp_path / "full", **kw))
    vspo.main(small_config(tmp_path / "cut", num_steps=2, **kw))
    vspo.main(small_config(tmp_path / "cut", resume="auto", **kw))
    full, cut = rows(tmp_path / "full"), rows(tmp_path / "cut")
    strip = lambda log: [{k: v for k, v in r.items() if not k.startswith(VOLATILE)} for r in log]  # noqa: E731
    assert strip(cut) == strip(full) and [r["step"] for r in cut] == [1, 2, 3, 4]
    assert full[-1]["vspo/buffer_size"] > 0
    a = load_file(str(tmp_path / "full" / "run" / "checkpoints" / "step_4" / "model.safetensors"))
    b = load_file(str(tmp_path / "cut" / "run" / "checkpoints" / "step_4" / "model.safetensors"))
    assert all(torch.equal(a[k], b[k]) for k in a)
    state = read_state(tmp_path / "cut" / "run" / "checkpoints" / "step_4")
    assert state["extra"]["extension"]["vspo"]["buffer"]["records"]


@pytest.mark.learning
@pytest.mark.parametrize("trainer,cls", [(gigpo, "GiGPOTrainConfig"), (dapo, "DAPOTrainConfig")])
def test_gigpo_and_dapo_smoke_on_toolqa(tmp_path, cold_model, trainer, cls):
    result = trainer.main(small_config(tmp_path, cls=getattr(trainer, cls), model=cold_model, num_steps=2,
                                       max_new_tokens=24))
    assert len(result.history) == 2
    prefix = trainer.__name__
    assert any(k.startswith(prefix + "/") for k in result.history[0])


@pytest.mark.engine
@pytest.mark.learning
@pytest.mark.parametrize("trainer", [grpo, vspo, gigpo, dapo])
def test_every_trainer_runs_alfworld_in_the_window_layout(tmp_path, trainer):
    cls = {grpo: None, vspo: vspo.VSPOTrainConfig, gigpo: gigpo.GiGPOTrainConfig, dapo: dapo.DAPOTrainConfig}[trainer]
    kw = {"cls": cls} if cls else {}
    result = trainer.main(small_config(tmp_path, env_id="ALFWorld-v0", env_kwargs='{"max_turns": 3}', layout="window",
                                       window=1, num_groups=1, group_size=2, num_steps=2, max_new_tokens=12,
                                       num_epochs=1, num_minibatches=1, **kw))
    assert len(result.history) == 2
    assert (tmp_path / "run" / "checkpoints" / "step_2" / "trainer_state.json").exists()


@pytest.mark.learning
def test_rl_never_trains_on_the_cold_start_tasks(tmp_path, cold_model):
    record = read_record(cold_model)
    assert record["env_id"] == "ToolQA-v0" and len(set(record["task_ids"])) == 64
    import gymnasium as gym

    env = gym.make("ToolQA-v0", **json.loads(TOOLQA_SMALL)).unwrapped
    stream = TaskStream(0, env.task_ids("train"), record["task_ids"])
    seen = {stream.request(p).options["task_id"] for p in range(3 * len(stream.pool))}
    assert seen == set(env.task_ids("train")) - set(record["task_ids"])
    # the trainer logs and checkpoints what it left out, and plays none of it
    result = grpo.main(small_config(tmp_path, model=cold_model, num_steps=2, save_every=1))
    assert result.history[0]["data/excluded_tasks"] == 64
    state = read_state(tmp_path / "run" / "checkpoints" / "step_2")
    assert sorted(state["extra"]["cold_start_tasks"]) == sorted(record["task_ids"])


def run_script(*args):
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("flags,message", [
    (["--group-size", "1"], "--group-size must be >= 2"),
    (["--num-steps", "0"], "--num-steps must be >= 1"),
    (["--learning-rate", "nan"], "--learning-rate must be a finite number"),
    (["--learning-rate", "-0.1"], "--learning-rate must be > 0"),
    (["--env-id", "Nope-v0"], "--env-id: unknown env id 'Nope-v0'; `agentgym list` shows the env ids"),
    (["--vspo.eta-decay", "0.5"], "unknown flag --vspo.eta-decay; did you mean --vspo.eta?"),
    (["--model", "/no/such/dir"], "--model '/no/such/dir' is not a directory"),
    (["--vspo.eta", "1.5"], "--vspo.eta must be in (0, 1]"),
    (["--split", "nosuchsplit"], "--split 'nosuchsplit': unknown split"),
    (["--env-kwargs", '{"foo": 1}'], "--env-kwargs: ToolQA-v0 has no argument 'foo'"),
])
def test_a_bad_flag_is_one_line_naming_it(flags, message):
    import os

    script = os.path.join(os.path.dirname(grpo.__file__), "vspo.py")
    got = run_script(script, *flags)
    assert got.returncode == 2
    assert message in got.stderr and "Traceback" not in got.stderr


def test_bare_resume_means_auto_and_env_kwargs_default_per_env():
    from agentgym.train.config.cli import parse
    from agentgym.train.config.tree import TrainConfig

    assert parse(TrainConfig, ["--resume"]).run.resume == "auto"
    assert parse(TrainConfig, ["--resume", "--num-steps", "3"]).run.resume == "auto"
    alf = parse(TrainConfig, ["--env-id", "ALFWorld-v0", "--layout", "window"])
    assert "question_kinds" not in alf.env.kwargs(alf.model.model)
    tiny = parse(TrainConfig, [])  # the built-in tiny model: the tiny preset
    assert tiny.env.kwargs(tiny.model.model)["question_kinds"] == ["single_hop"]
