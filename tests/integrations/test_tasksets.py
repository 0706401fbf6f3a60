"""A split exported as a Hugging Face dataset plays back exactly the same tasks."""

import json
import os

import gymnasium as gym
import pytest

pytest.importorskip("datasets")
import datasets  # noqa: E402

import agentgym  # noqa: E402,F401
from agentgym.cli import main  # noqa: E402
from agentgym.integrations.tasksets import load_tasks  # noqa: E402
from agentgym.leaderboard.tasks import enumerate_tasks  # noqa: E402

TOOLQA = {"question_kinds": ["single_hop", "bridge"]}


def test_a_toolqa_split_round_trips_through_the_dataset_and_plays_only_its_tasks(tmp_path, capsys):
    out = str(tmp_path / "toolqa-test")
    assert main(["export-tasks", "ToolQA-v0", "--split", "test", "--out", out, "--env-kwargs", json.dumps(TOOLQA),
                 "--limit", "6"]) == 0
    assert capsys.readouterr().out.startswith("wrote 6 tasks of ToolQA-v0 (test)")
    expected = enumerate_tasks("ToolQA-v0", "test", TOOLQA, limit=6)
    assert sorted(os.listdir(out)) == ["README.md", "data", "environment.yaml"]

    # Hugging Face's own loader reads the folder as a dataset (the card says where the parquet is)
    loaded = datasets.load_dataset(out, split="test")
    assert loaded["task_id"] == [t.task_id for t in expected]
    assert [json.loads(o) for o in loaded["options"]] == [t.options for t in expected]

    tasks = load_tasks(out)
    assert (tasks.env_id, tasks.env_kwargs, tasks.split) == ("ToolQA-v0", TOOLQA, "test")
    assert tasks.task_ids == [t.task_id for t in expected]
    assert tasks.spec["agentgym_version"] == agentgym.__version__ and "--tasks" in tasks.spec["run"]["leaderboard"]

    env = tasks.make(expert=True)
    seen = set()
    for seed in range(30):
        obs, info = env.reset(seed=seed)
        seen.add(info["task_id"])
        assert info["split"] == "test"
    assert seen <= set(tasks.task_ids) and len(seen) > 3
    # the same seed is the same task and the same episode as the plain env playing that task
    obs, info = env.reset(seed=4)
    plain = gym.make("ToolQA-v0", **TOOLQA, expert=True)
    assert plain.reset(seed=4, options={"task_id": info["task_id"], "split": "test"})[0] == obs
    with pytest.raises(ValueError, match="is not in the task set at"):
        env.reset(options={"task_id": "no-such-task"})


def test_the_leaderboard_plays_exactly_the_exported_tasks(tmp_path):
    out = str(tmp_path / "tasks")
    main(["export-tasks", "ToolQA-v0", "--split", "valid", "--out", out, "--tasks", "single-*", "--limit", "3"])
    board = str(tmp_path / "board")
    assert main(["leaderboard", "--agents", "expert", "--envs", "ToolQA-v0", "--split", "valid",
                 "--tasks", out, "--out", board, "--no-progress"]) == 0
    played = set()
    for root, _, files in os.walk(board):
        for name in files:
            if name.endswith(".jsonl"):
                with open(os.path.join(root, name)) as f:
                    played |= {json.loads(line)["task_id"] for line in f if line.strip()}
    assert played == set(load_tasks(out).task_ids)
    summary = json.load(open(os.path.join(board, "summary.json")))
    assert summary[0]["episodes"] == summary[0]["expected_episodes"] == 3 and summary[0]["success"] == 1.0


def test_a_scienceworld_split_exports_without_an_engine_and_bad_input_is_refused(tmp_path):
    pytest.importorskip("scienceworld")
    out = str(tmp_path / "sw")
    main(["export-tasks", "ScienceWorld-v0", "--split", "dev", "--out", out, "--limit", "5"])
    tasks = load_tasks(out)
    assert tasks.task_ids == [t.task_id for t in enumerate_tasks("ScienceWorld-v0", "dev", limit=5)]
    assert all(t.options["split"] == "dev" for t in tasks.tasks)
    with pytest.raises(ValueError, match="holds ScienceWorld-v0 tasks"):
        tasks.refs_for("ToolQA-v0", "dev")

    with pytest.raises(ValueError, match="is not a task set"):
        load_tasks(str(tmp_path))
    spec = os.path.join(out, "environment.yaml")
    text = open(spec).read()
    open(spec, "w").write(text.replace(tasks.spec["task_list_hash"], "0" * 16))
    with pytest.raises(ValueError, match="do not match the task_list_hash"):
        load_tasks(out)
    with pytest.raises(SystemExit, match="unknown env id"):
        main(["export-tasks", "Nope-v0", "--split", "test", "--out", out])
