"""benchmarks/fresh_games.py: checkpoints on the RL stream's tasks past the ones a run played,
none of them the cold start's, every model on the same tasks and seeds."""

import json
import os
import sys

import gymnasium as gym
import pytest

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

import fresh_games  # noqa: E402


@pytest.mark.learning
def test_fresh_games_are_the_streams_later_tasks_and_pair_the_models(cold_model, tmp_path):
    out = tmp_path / "fresh.json"
    first = fresh_games.main(["--models", cold_model, cold_model, "--cold-start", cold_model, "--seed", "3",
                              "--skip", "0", "--episodes", "6", "--batch-size", "4", "--output", str(out)])
    assert json.loads(out.read_text())["tasks"] == first["tasks"]
    record = json.load(open(os.path.join(cold_model, "agentgym_sft.json")))
    tasks = first["tasks"]
    assert len(set(tasks)) == 6 and not set(tasks) & set(record["task_ids"])  # none is the cold start's
    env = gym.make(record["env_id"], **record["recipe"]["env_kwargs"])
    assert set(tasks) <= set(env.unwrapped.task_ids(record["split"]))
    env.close()
    a, b = first["models"]
    # the same model from the same seeds plays the same episodes, in the stream's task order
    assert [e["task_id"] for e in a["episodes"]] == tasks and a["episodes"] == b["episodes"]
    assert b["success_minus_first"][0] == 0.0
    later = fresh_games.main(["--models", cold_model, "--cold-start", cold_model, "--seed", "3", "--skip", "2",
                              "--episodes", "4"])
    assert later["tasks"] == tasks[2:]  # --skip moves along the same stream
    other_seed = fresh_games.main(["--models", cold_model, "--cold-start", cold_model, "--seed", "4", "--skip", "0",
                                   "--episodes", "6"])
    assert other_seed["tasks"] != tasks


def test_a_directory_without_a_cold_start_record_is_refused_by_name(tmp_path):
    with pytest.raises(SystemExit, match="has no agentgym_sft.json"):
        fresh_games.fresh_tasks(str(tmp_path), 0, 0, 4)
