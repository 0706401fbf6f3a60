"""Env presets (agentgym.train.config.presets): a real checkpoint trains on the env's own defaults, the
built-in tiny models on the `tiny` preset, `--env-kwargs` merges over the preset key by key, and
the kwargs a run resolved are printed and replayed by evaluation."""

import json
import os
import shutil
import subprocess
import sys

import gymnasium as gym
import pytest

import agentgym  # noqa: F401  registers the envs
from agentgym.train.base.flags import build
from agentgym.train.config.cli import parse
from agentgym.train.config.presets import TINY_MODELS, preset_kwargs
from agentgym.train.config.tree import SFTRunConfig, TrainConfig

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TINY_TOOLQA = preset_kwargs("tiny", "ToolQA-v0")


@pytest.fixture(scope="module")
def checkpoint(tiny_path, tmp_path_factory):
    """A model directory like a user's checkpoint: the tiny builder's output under another name."""
    out = tmp_path_factory.mktemp("ckpt") / "Qwen2.5-1.5B-Instruct"
    shutil.copytree(tiny_path, out)
    assert str(out) not in TINY_MODELS
    return str(out)


def resolved(flags):
    config = parse(TrainConfig, flags)
    return config.env.resolve(config.model.model), config.env.describe(config.model.model)


def test_a_checkpoint_directory_trains_on_the_envs_own_defaults(checkpoint):
    (preset, kwargs), line = resolved(["--model", checkpoint])
    assert (preset, kwargs) == ("none", {})
    assert line == 'ToolQA-v0, preset none (auto), env kwargs {"reward_mode": "prs"}'
    # the env the trainer makes is gym.make's: the same task, prompt and tools
    ours, theirs = gym.make("ToolQA-v0", **kwargs), gym.make("ToolQA-v0")
    (obs_a, info_a), (obs_b, info_b) = ours.reset(seed=5), theirs.reset(seed=5)
    assert obs_a == obs_b and info_a["system_prompt"] == info_b["system_prompt"] and info_a["tools"] == info_b["tools"]
    assert info_a["system_prompt"] != TINY_TOOLQA["system_prompt"]


def test_the_tiny_models_get_the_tiny_preset_and_env_kwargs_override_one_key():
    (preset, kwargs), line = resolved([])
    assert (preset, kwargs) == ("tiny", TINY_TOOLQA)
    assert line.startswith("ToolQA-v0, preset tiny (auto), env kwargs {") and '"top_k": 1' in line
    (preset, kwargs), _ = resolved(["--env-kwargs", '{"top_k": 2}'])
    assert kwargs == {**TINY_TOOLQA, "top_k": 2} and preset == "tiny"
    # a JSON null removes a key: the env's own default applies
    (_, kwargs), _ = resolved(["--model", "tiny", "--env-kwargs", '{"system_prompt": null, "max_turns": 3}'])
    assert kwargs == {k: v for k, v in {**TINY_TOOLQA, "max_turns": 3}.items() if k != "system_prompt"}


def test_preset_none_on_a_tiny_model_gives_gym_make_defaults():
    (preset, kwargs), line = resolved(["--preset", "none"])
    assert (preset, kwargs) == ("none", {}) and line.endswith('preset none, env kwargs {"reward_mode": "prs"}')
    (_, kwargs), _ = resolved(["--preset", "none", "--env-kwargs", '{"top_k": 2}'])
    assert kwargs == {"top_k": 2}


def test_an_explicit_preset_applies_to_any_model(checkpoint):
    (preset, kwargs), _ = resolved(["--model", checkpoint, "--preset", "tiny"])
    assert (preset, kwargs) == ("tiny", TINY_TOOLQA)


def test_an_env_a_preset_does_not_list_gets_its_own_defaults():
    config = build(TrainConfig, env_id="ScienceWorld-v0")
    assert config.env.resolve(config.model.model) == ("tiny", {})


def test_an_unknown_preset_is_one_line_naming_the_choices(capsys):
    for cls in (TrainConfig, SFTRunConfig):
        with pytest.raises(SystemExit) as e:
            parse(cls, ["--preset", "small"])
        assert e.value.code == 2
        err = capsys.readouterr().err
        assert err == "error: --preset 'small' is not a preset; choose one of auto, none, tiny, tiny-rooms, tiny-rooms-scored, tiny-find-scored\n"


def test_the_alfworld_tiny_preset_is_made_by_the_env_and_wants_the_window_layout(capsys):
    kwargs = preset_kwargs("tiny", "ALFWorld-v0")
    env = gym.make("ALFWorld-v0", **kwargs)  # every key is an argument the env takes
    try:
        obs, info = env.reset(seed=0)
        assert info["system_prompt"] == kwargs["system_prompt"] and "1." in obs
    finally:
        env.close()
    config = parse(TrainConfig, ["--env-id", "ALFWorld-v0", "--layout", "window"])
    assert config.env.resolve(config.model.model) == ("tiny", kwargs)
    with pytest.raises(SystemExit):
        parse(TrainConfig, ["--env-id", "ALFWorld-v0"])
    err = capsys.readouterr().err
    assert err.startswith("error: --preset tiny gives ALFWorld-v0 observation='history+admissible'")
    assert "use --layout window" in err and err.rstrip().endswith("or --preset none")


def test_the_tiny_rooms_preset_is_made_by_the_env_with_a_constrained_choice_and_a_small_l0():
    kwargs = {**preset_kwargs("tiny-rooms", "ALFWorld-v0"), "data_path": "generated:40:tiny", "l0_every": 2}
    env = gym.make("ALFWorld-v0", split="L0", **kwargs)  # every key is an argument the env takes
    try:
        obs, info = env.reset(seed=0)
        assert info["allowed_replies"] == [str(k) for k in range(1, len(info["admissible_actions"]) + 1)]
        assert len(env.unwrapped.task_ids("L0")) < len(env.unwrapped.task_ids("train"))
    finally:
        env.close()
    assert preset_kwargs("tiny-rooms", "ToolQA-v0") == {}


@pytest.mark.learning
def test_a_cold_start_output_starts_rl_and_eval_on_the_env_it_recorded(tmp_path, capsys):
    """`auto` with a model directory that records env kwargs (a cold start of the tiny model)
    replays them, so RL from it plays what the cold start played."""
    from agentgym.train.coldstart.sft import run_sft
    from agentgym.train.evaluate import trained_env_kwargs

    final = run_sft(build(SFTRunConfig, model="tiny", env_kwargs='{"top_k": 2}', num_steps=1, num_episodes=2,
                          batch_size=2, micro_batch_size=2, output_dir=str(tmp_path), progress=False,
                          tensorboard=False))
    recorded = {**TINY_TOOLQA, "top_k": 2}
    printed = json.dumps({"reward_mode": "prs", **recorded})
    assert f"sft: env ToolQA-v0, preset tiny (auto), env kwargs {printed}" in capsys.readouterr().out
    (preset, kwargs), line = resolved(["--model", final])
    assert (preset, kwargs) == ("recorded", recorded) and "preset recorded (auto" in line
    (_, kwargs), _ = resolved(["--model", final, "--env-kwargs", '{"max_turns": 3}'])
    assert kwargs == {**recorded, "max_turns": 3}
    assert resolved(["--model", final, "--preset", "none"])[0] == ("none", {})
    assert trained_env_kwargs(final, "ToolQA-v0") == recorded
    assert trained_env_kwargs(final, "ALFWorld-v0") == {}  # it records nothing for another env


@pytest.mark.learning
@pytest.mark.multiproc
def test_vspo_on_a_checkpoint_directory_prints_and_records_the_envs_defaults(checkpoint, tmp_path):
    """`trainers/vspo.py --model DIR`, one step: the startup line names the preset and the env
    kwargs, the checkpoint records them, and `agentgym eval` replays them."""
    from agentgym.train.base.records import recorded_env_kwargs

    env = {**os.environ, "PYTHONPATH": ROOT}
    run = subprocess.run([sys.executable, os.path.join(ROOT, "trainers", "vspo.py"), "--model", checkpoint,
                          "--num-steps", "1", "--num-groups", "1", "--group-size", "2", "--max-new-tokens", "8",
                          "--micro-batch-size", "2", "--eval-episodes", "0", "--cpu-threads", "1", "--no-progress",
                          "--no-tensorboard", "--output-dir", str(tmp_path / "run")],
                         capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.splitlines()[0] == 'env: ToolQA-v0, preset none (auto), env kwargs {"reward_mode": "prs"}'
    step = str(tmp_path / "run" / "checkpoints" / "step_1")
    assert recorded_env_kwargs(step, "ToolQA-v0") == {}
    evaluated = subprocess.run([sys.executable, "-m", "agentgym.cli", "eval", "--model", step, "--num-episodes", "1",
                                "--batch-size", "1", "--max-new-tokens", "4", "--env-kwargs", '{"max_turns": 1}'],
                               capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert evaluated.returncode == 0, evaluated.stderr[-2000:]
    assert evaluated.stdout.splitlines()[0] == ('env: ToolQA-v0, preset recorded (auto: the model directory\'s '
                                                'record), env kwargs {"max_turns": 1}')
