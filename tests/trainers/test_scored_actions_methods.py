"""Scored actions through every trainer, ``agentgym eval`` and the leaderboard: an ALFWorld env made
with ``scored_actions=True`` has each method play only listed actions (chosen whole), and the SFT
cold start raises the expert's action among them."""

import json

import pytest

from agentgym.train.command import main as train_main
from agentgym.train.evaluate import main as eval_main
from agentgym.train.methods import METHODS

pytest.importorskip("alfworld")

SCORED = json.dumps({"data_path": "generated:8:tiny", "max_turns": 3, "observation": "history", "history": 1,
                     "scored_actions": True})


def rows(path):
    return [json.loads(line) for line in open(path)]


def common(out, model):
    return ["--model", model, "--env-id", "ALFWorld-v0", "--env-kwargs", SCORED, "--layout", "window",
            "--output-dir", str(out), "--quiet", "--no-progress", "--no-tensorboard", "--cpu-threads", "1"]


@pytest.mark.learning
@pytest.mark.parametrize("name", list(METHODS))
def test_every_method_trains_on_scored_actions(name, tmp_path, tiny_path):
    out = tmp_path / name
    if METHODS[name].cold_start:
        assert train_main([name, *common(out, tiny_path), "--num-episodes", "4", "--num-steps", "6",
                           "--batch-size", "4", "--learning-rate", "3e-3"]) == 0
        logged = rows(out / "metrics.jsonl")
        # every step trained the expert's action against the listed others
        assert all("accuracy/scored_top1" in r for r in logged)
        assert logged[-1]["loss/sft"] < logged[0]["loss/sft"]
        return
    assert train_main([name, *common(out, tiny_path), "--num-steps", "1", "--eval-episodes", "0", "--num-groups", "2",
                       "--group-size", "2"]) == 0
    (logged,) = rows(out / "metrics.jsonl")
    assert "reward/played_mean" in logged
    # every reply trained on was a listed action (DAPO and VSPO may drop every tied group of a step)
    assert logged.get("action/valid_rate", 1.0) == 1.0


@pytest.mark.learning
def test_eval_and_the_leaderboard_play_a_scored_checkpoint_with_its_recorded_kwargs(tmp_path, tiny_path):
    from agentgym.leaderboard.specs import make_agent

    out = tmp_path / "grpo"
    assert train_main(["grpo", *common(out, tiny_path), "--num-steps", "1", "--eval-episodes", "0",
                       "--num-groups", "2", "--group-size", "2"]) == 0
    checkpoint = out / "checkpoints" / "step_1"
    report = tmp_path / "eval.json"
    assert eval_main(["--model", str(checkpoint), "--env-id", "ALFWorld-v0", "--num-episodes", "2", "--split", "train",
                      "--output", str(report)]) == 0
    result = json.loads(report.read_text())
    assert result["terms"]["valid"] == 1.0  # it chose among the listed actions, as it was trained to
    agent = make_agent(str(checkpoint), ("ALFWorld-v0",))  # a board's checkpoint agent plays as it was trained
    assert agent.trained_env_kwargs("ALFWorld-v0").get("scored_actions") is True
