"""A user's own env, named ``module:EnvId`` as gymnasium spells it, goes on the board and into a
task set like agentgym's envs: its tasks are what its ``task_refs`` lists, played in worker
processes that import its module."""

import json
import os

import gymnasium as gym
import pytest

from agentgym.cli import main
from agentgym.leaderboard.tasks import OTHER, enumerate_tasks, family

USER_ENV = "user_env:Parity-v0"


def board_rows(board):
    with open(os.path.join(board, "summary.json")) as f:
        return {(row["agent"], row["split"]): row for row in json.load(f)}


def played_tasks(board, agent, split):
    with open(os.path.join(board, "episodes", f"{agent}__Parity-v0__{split}.jsonl")) as f:
        return [json.loads(line) for line in f if line.strip()]


def test_a_users_env_plays_every_task_of_each_split_in_worker_processes(tmp_path):
    board = str(tmp_path / "board")
    assert main(["leaderboard", "--agents", "expert", "random", "--envs", USER_ENV, "--split", "test", "train",
                 "--env-kwargs", json.dumps({USER_ENV: {"max_turns": 2}}), "--repeats", "2",
                 "--out", board, "--no-progress"]) == 0
    rows = board_rows(board)
    assert family("Parity-v0") == OTHER
    for split, n in (("test", 8), ("train", 12)):
        assert rows[("expert", split)]["episodes"] == rows[("expert", split)]["expected_episodes"] == 2 * n
        assert rows[("expert", split)]["success"] == 1.0
        episodes = played_tasks(board, "random", split)
        assert sorted(e["task_id"] for e in episodes) == sorted(2 * [t.task_id for t in enumerate_tasks(
            "Parity-v0", split, {})])
        assert {e["max_turns"] for e in episodes} == {2}  # --env-kwargs keyed by the id as typed
    # a random even/odd guesser is right on some tasks and wrong on others, over 40 episodes
    assert 0.0 < rows[("random", "train")]["success"] + rows[("random", "test")]["success"] < 2.0


def test_a_users_env_exports_a_task_set_that_names_its_module(tmp_path):
    pytest.importorskip("datasets")
    import datasets

    from agentgym.integrations.tasksets import load_tasks

    out = str(tmp_path / "parity")
    assert main(["export-tasks", USER_ENV, "--split", "test", "--out", out, "--tasks", "small"]) == 0
    rows = datasets.load_dataset(out, split="test")
    env = gym.make("Parity-v0")
    for row in rows:
        assert row["task_type"] == "small"
        assert env.reset(options=json.loads(row["options"]))[1]["instruction"] == row["instruction"]
    assert rows["instruction"][0].startswith("say whether 1")
    with open(os.path.join(out, "README.md")) as f:
        card = f.read()
    assert "license: other" in card and "- other" not in card and "import user_env  # registers Parity-v0" in card
    tasks = load_tasks(out)
    assert (tasks.env_id, tasks.split) == ("Parity-v0", "test")
    assert f"--envs {USER_ENV}" in tasks.spec["run"]["leaderboard"] and "user_env" in tasks.spec["run"]["python"]
    # it plays on no engine of agentgym's: the set names none (it listed textworld, alfworld and scienceworld)
    assert "engines" not in tasks.spec and "engine versions" not in card and "the engines" not in card

    board = str(tmp_path / "board")
    assert main(["leaderboard", "--agents", "expert", "--envs", USER_ENV, "--split", "test", "--tasks", out,
                 "--out", board, "--no-progress"]) == 0
    assert sorted(e["task_id"] for e in played_tasks(board, "expert", "test")) == sorted(tasks.task_ids)
    made = gym.make("Parity-v0", tasks=out)
    assert made.reset(seed=3)[1]["task_id"] in tasks.task_ids


@pytest.mark.slow
def test_the_cli_plays_and_evaluates_a_users_env_by_module_and_id(tiny_path, capsys):
    assert main(["demo", USER_ENV, "--seed", "3"]) == 0
    assert "success=True" in capsys.readouterr().out
    assert main(["eval", "--model", tiny_path, "--env-id", USER_ENV, "--split", "test", "--num-episodes", "4",
                 "--batch-size", "2"]) == 0
    assert "Parity-v0 [test] 4 episodes: success" in capsys.readouterr().out
    for argv in (["demo", "no_such_module_xyz:Parity-v0"],
                 ["eval", "--model", tiny_path, "--env-id", "no_such_module_xyz:Parity-v0"]):
        with pytest.raises(SystemExit) as e:
            main(argv)
        assert "cannot import 'no_such_module_xyz'" in str(e.value) + capsys.readouterr().err
