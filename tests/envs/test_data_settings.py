"""Env settings read from data (a checkpoint's recipe or trainer state, a task set's
environment.yaml, a SkyRL row) pass an allow-list: ScienceWorld's ``java_options`` planted in any of
them never reach the real JVM, on every route a user takes, and a set cannot move the success
criterion; keys that shape the task still travel, and the user's own settings override the file."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import pytest
import yaml

import agentgym  # noqa: F401
from agentgym.envs.data_settings import DataSettingError, check_data_env_kwargs

REPO = Path(__file__).resolve().parents[2]


def planted(marker: Path) -> dict:
    """Env kwargs that, reaching the JVM, run ``touch marker`` as it starts (a 4 MB heap runs out)."""
    return {"java_options": ["-Xmx4m", f"-XX:OnOutOfMemoryError=touch {marker}"], "max_turns": 3}


def run(args, **kw):
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd=REPO, env=env,
                          timeout=600, **kw)


def test_the_allow_list_keeps_task_keys_and_refuses_the_rest_in_one_line(tmp_path):
    shaping = {"max_turns": 4, "split": "test", "observation": "history+admissible", "history": 2,
               "action_format": "choice", "prs_weights": [0.1, 0.1, 0.3, 0.5], "system_prompt": "Act.",
               "data_path": "generated:4000:small", "question_kinds": ["single_hop"], "top_k": 1}
    assert check_data_env_kwargs(shaping, "f") == shaping
    for key, why in [("java_options", "JVM's command line"), ("java_path", "program"), ("judge", "judge"),
                     ("judge_kwargs", "judge"), ("success_threshold", "success criterion"),
                     ("made_up_key", "only shapes the task"), ("cache", "translations")]:
        with pytest.raises(DataSettingError, match=why) as e:
            check_data_env_kwargs({"max_turns": 2, key: "x"}, "DIR/agentgym_sft.json")
        assert "\n" not in str(e.value) and f"'{key}'" in str(e.value) and "DIR/agentgym_sft.json" in str(e.value)
    # the user's own keys override the file's, whatever it says
    assert check_data_env_kwargs({"judge": "openai", "max_turns": 2}, "f", user_keys={"judge"}) == {"max_turns": 2}


def test_paths_are_taken_only_inside_the_datas_own_folder(tmp_path):
    (tmp_path / "qa.jsonl").write_text("")
    inside = check_data_env_kwargs({"dataset": {"train": "qa.jsonl"}, "corpus": str(tmp_path / "c.jsonl")},
                                   "f", folder=tmp_path)
    assert inside == {"dataset": {"train": str(tmp_path.resolve() / "qa.jsonl")},
                      "corpus": str(tmp_path.resolve() / "c.jsonl")}
    for value in ["../elsewhere.jsonl", "/etc/passwd", "$HOME/x.jsonl", "~/x.jsonl", {"test": "../../x"}, 3]:
        with pytest.raises(DataSettingError, match="'dataset'"):
            check_data_env_kwargs({"dataset": value}, "f", folder=tmp_path)
    link = tmp_path / "link"
    link.symlink_to("/etc")
    with pytest.raises(DataSettingError, match="outside"):
        check_data_env_kwargs({"corpus": "link/passwd"}, "f", folder=tmp_path)
    with pytest.raises(DataSettingError, match="no folder of its own"):
        check_data_env_kwargs({"corpus": "c.jsonl"}, "a row")


@pytest.fixture(scope="module")
def scienceworld_set(tmp_path_factory):
    pytest.importorskip("datasets")
    from agentgym.integrations.tasksets import export_tasks

    out = tmp_path_factory.mktemp("sets") / "boil"
    export_tasks("ScienceWorld-v0", "test", str(out), {"task": "boil", "max_turns": 3}, limit=2)
    return out


def plant_in_set(set_dir: Path, tmp_path: Path, extra: dict) -> Path:
    out = tmp_path / "planted-set"
    shutil.copytree(set_dir, out)
    spec = yaml.safe_load((out / "environment.yaml").read_text())
    spec["env_kwargs"].update(extra)
    (out / "environment.yaml").write_text(yaml.safe_dump(spec))
    return out


@pytest.mark.engine
@pytest.mark.multiproc
def test_a_task_set_cannot_start_the_jvm_with_its_own_options(scienceworld_set, tmp_path):
    marker = tmp_path / "ran"
    bad = plant_in_set(scienceworld_set, tmp_path, planted(marker))
    with pytest.raises(DataSettingError, match="'java_options'") as e:
        gym.make("ScienceWorld-v0", tasks=str(bad)).reset(seed=0)
    assert "\n" not in str(e.value) and str(bad) in str(e.value)
    # the same set served to a remote client: the server refuses to start with it
    served = run(["-m", "agentgym.cli", "serve", "ScienceWorld-v0", "--env-kwargs",
                  json.dumps({"tasks": str(bad)}), "--port", "0"])
    assert served.returncode != 0 and "java_options" in served.stderr and "Traceback" not in served.stderr
    assert not marker.exists()
    # the user's own java_options are the user's: the set's are then not read at all
    env = gym.make("ScienceWorld-v0", tasks=str(bad), java_options=["-Xmx512m", "-XX:+UseSerialGC"])
    obs, info = env.reset(seed=0)
    assert info["task_id"].startswith("boil") and env.unwrapped.max_turns == 3
    env.close()
    assert not marker.exists()


def test_a_task_set_cannot_move_the_success_criterion(tmp_path):
    pytest.importorskip("datasets")
    from agentgym.integrations.tasksets import export_tasks

    out = tmp_path / "toolqa"
    export_tasks("ToolQA-v0", "test", str(out), {"question_kinds": ["single_hop"]}, limit=4)
    bad = plant_in_set(out, tmp_path, {"success_threshold": 0})
    with pytest.raises(DataSettingError, match="'success_threshold'.*success criterion"):
        gym.make("ToolQA-v0", tasks=str(bad))
    env = gym.make("ToolQA-v0", tasks=str(out))
    wins = 0
    for seed in range(4):
        env.reset(seed=seed)
        wins += env.step("<answer>I do not know.</answer>")[4]["success"]
    assert wins == 0


@pytest.fixture
def planted_checkpoint(tiny_path, tmp_path):
    """A model directory like a downloaded one: real weights, and a recipe that plants a command."""
    out = tmp_path / "downloaded"
    shutil.copytree(tiny_path, out)
    marker = tmp_path / "ran"
    return out, marker


@pytest.mark.engine
@pytest.mark.multiproc
def test_a_cold_start_recipe_cannot_start_the_jvm_from_eval_train_or_a_board(planted_checkpoint, tmp_path):
    model, marker = planted_checkpoint
    (model / "agentgym_sft.json").write_text(json.dumps(
        {"env_id": "ScienceWorld-v0", "recipe": {"env_id": "ScienceWorld-v0", "env_kwargs": planted(marker)}}))
    ev = run(["-m", "agentgym.cli", "eval", "--model", str(model), "--env-id", "ScienceWorld-v0",
              "--num-episodes", "1"])
    assert ev.returncode == 2 and "Traceback" not in ev.stderr
    assert ev.stderr.strip().count("\n") == 0 and "'java_options'" in ev.stderr and "agentgym_sft.json" in ev.stderr
    train = run(["trainers/grpo.py", "--model", str(model), "--env-id", "ScienceWorld-v0", "--num-steps", "1",
                 "--output-dir", str(tmp_path / "run")])
    assert train.returncode != 0 and "'java_options'" in train.stderr and "Traceback" not in train.stderr
    board = run(["-m", "agentgym.cli", "leaderboard", "--agents", f"dl={model}", "expert", "--envs",
                 "ScienceWorld-v0", "--split", "test", "--limit", "1", "--out", str(tmp_path / "board"),
                 "--no-progress"])
    assert "skipping agent 'dl' on ScienceWorld-v0" in board.stdout + board.stderr
    assert "'java_options'" in board.stdout + board.stderr
    assert not marker.exists()
    # the same checkpoint with the user's own java_options evaluates
    ok = run(["-m", "agentgym.cli", "eval", "--model", str(model), "--env-id", "ScienceWorld-v0",
              "--num-episodes", "1", "--env-kwargs", '{"java_options": ["-Xmx512m"], "task": "boil"}'])
    assert ok.returncode == 0, ok.stderr
    assert "max_turns\": 3" in ok.stdout and not marker.exists()


@pytest.mark.engine
@pytest.mark.multiproc
def test_a_trainer_state_cannot_start_the_jvm(planted_checkpoint, tmp_path):
    from agentgym.train.base.checkpoint_record import CheckpointRecord
    from agentgym.train.base.state import RunState
    from agentgym.train.base.state_file import write_state

    model, marker = planted_checkpoint
    record = CheckpointRecord(RunState(), config={"env": {"env_id": "ScienceWorld-v0"}}, method="grpo",
                              env_kwargs={**planted(marker), "reward_mode": "prs"})
    write_state(model, record.state_dict())
    ev = run(["-m", "agentgym.cli", "eval", "--model", str(model), "--env-id", "ScienceWorld-v0",
              "--num-episodes", "1"])
    assert ev.returncode == 2 and "'java_options'" in ev.stderr and "trainer_state.json" in ev.stderr
    assert "Traceback" not in ev.stderr and not marker.exists()


@pytest.mark.slow
def test_a_board_scores_a_checkpoint_by_the_boards_rules(planted_checkpoint, tmp_path):
    from agentgym.leaderboard.agents import PolicyAgent

    model, _ = planted_checkpoint
    (model / "agentgym_sft.json").write_text(json.dumps(
        {"recipe": {"env_id": "ToolQA-v0", "env_kwargs": {"success_threshold": 0, "judge": "openai",
                                                         "judge_kwargs": {"base_url": "http://x"},
                                                         "prs_weights": [1, 0, 0], "tau_fmt": 0.0, "prs_stage": 0,
                                                         "max_turns": 2, "top_k": 1}}}))
    agent = PolicyAgent(policy=None, name="dl", checkpoint=str(model))
    assert agent.trained_env_kwargs("ToolQA-v0") == {"top_k": 1}


def test_a_skyrl_row_cannot_choose_the_jvms_options(tmp_path):
    pytest.importorskip("skyrl_gym")
    from agentgym.integrations.skyrl import AgentGymSkyRLEnv, row_env_kwargs

    marker = tmp_path / "ran"
    with pytest.raises(DataSettingError, match="the row's extras.env_kwargs sets env setting 'java_options'"):
        AgentGymSkyRLEnv(extras={"env_id": "ScienceWorld-v0", "env_kwargs": planted(marker)})
    assert not marker.exists()
    # the env config is the user's: its keys win over the row's, and a row's task keys still apply
    config = {"env_kwargs": {"java_options": ["-Xmx512m"], "max_turns": 5}}
    row = {"env_kwargs": json.dumps({"java_options": ["-Xmx4m"], "max_turns": 2, "task": "boil"})}
    assert row_env_kwargs(config, row) == {"task": "boil", "java_options": ["-Xmx512m"], "max_turns": 5}


def test_an_export_refuses_a_setting_a_set_may_not_carry(tmp_path):
    pytest.importorskip("datasets")
    from agentgym.integrations.tasksets import export_tasks

    with pytest.raises(ValueError, match=r"'java_options' does not \(it reaches the JVM's command line\)"):
        export_tasks("ScienceWorld-v0", "test", str(tmp_path / "s"), {"java_options": ["-Xmx512m"]}, limit=1)
    with pytest.raises(ValueError, match="'success_threshold' does not"):
        export_tasks("ToolQA-v0", "test", str(tmp_path / "t"), {"success_threshold": 0.0}, limit=1)
    assert not (tmp_path / "s").exists() and not (tmp_path / "t").exists()
