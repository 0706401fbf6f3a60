"""A checkpoint's trainer state read as one typed record: every checkpoint written so far reads back,
and writes back under the same keys; what is missing or malformed is one error naming the file."""

import random

import numpy as np
import pytest
import torch

from agentgym.train.base.checkpoint_record import read_checkpoint
from agentgym.train.base.state import RunState
from agentgym.train.base.state_file import TrainerStateError, read_state, write_state
from agentgym.train.methods import recorded_extensions

MISTAKES = ["the action was invalid", "the query repeated an earlier one"]


def saved_tree(**extra):
    """A trainer state exactly as the loop wrote it before the record existed (a GCD run on two ranks)."""
    rng = {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()}
    gcd_state = {"gcd": {"correction": {"mistakes": MISTAKES, "refreshed_at": 4, "critiques": ["x"]}}}
    tree = {"step": 6, "optimizer": {"state": {0: {"step": torch.tensor(6.0), "exp_avg": torch.ones(2)}},
                                     "param_groups": [{"lr": 1e-5, "params": [0]}]},
            "rng": rng,
            "extra": {"data_position": 14, "prs_schedule": {"stage": 1.0}, "extension": gcd_state,
                      "config": {"env": {"env_id": "ToolQA-v0", "env_kwargs": '{"max_turns": 1}',
                                         "reward_mode": "binary"},
                                 "gcd": {"correction": True, "lam": 0.5, "k": 2}},
                      "evaluation": {"before": {"success_rate": 0.25, "prs_return": 0.5}},
                      "eval_curve": [{"step": 0, "episodes": 0, "seconds": 0.0, "success": 0.25, "return": 0.5}],
                      "episodes_played": 48, "train_seconds": 12.5, "cold_start_tasks": ["t1", "t2"],
                      "method": "gcd-grpo", "per_rank": [{"extension": gcd_state, "rng": rng},
                                                         {"extension": {"gcd": {}}, "rng": rng}]}}
    tree["extra"].update(extra)
    return tree


def same(a, b):
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, torch.Tensor):
        return torch.equal(a, b)
    if isinstance(a, np.ndarray):
        return np.array_equal(a, b)
    return a == b


def test_a_checkpoint_of_the_untyped_layout_reads_as_a_record_and_writes_back_unchanged(tmp_path):
    write_state(tmp_path, saved_tree())
    record = read_checkpoint(tmp_path)
    assert (record.step, record.method, record.cold_start_tasks, record.path) == (6, "gcd-grpo", ["t1", "t2"], tmp_path)
    assert record.state == RunState(step=6, data_position=14, episodes=48, seconds=12.5,
                                    evaluation={"before": {"success_rate": 0.25, "prs_return": 0.5}},
                                    curve=saved_tree()["extra"]["eval_curve"], schedule={"stage": 1.0},
                                    extension=saved_tree()["extra"]["extension"])
    assert torch.equal(record.optimizer["state"][0]["exp_avg"], torch.ones(2))
    # the same tree comes back: a checkpoint rewritten from its record keeps every key and value
    assert same(record.state_dict(), read_state(tmp_path))
    # each rank's own extension state and streams; a rank the checkpoint did not have gets rank 0's state
    assert record.rank_state(1) == ({"gcd": {}}, record.per_rank[1]["rng"])
    assert record.rank_state(2) == (record.state.extension, None)


def test_env_kwargs_are_read_only_where_the_checkpoint_records_them(tmp_path):
    write_state(tmp_path, saved_tree())
    unrecorded = read_checkpoint(tmp_path, tensors=False)
    assert unrecorded.env_kwargs is None and unrecorded.optimizer["state"][0]["exp_avg"] is None
    assert unrecorded.trained_env_kwargs("ToolQA-v0") is None  # never rebuilt from the config's flags
    assert unrecorded.trained_env_kwargs("ALFWorld-v0") is None
    write_state(tmp_path, saved_tree(env_kwargs={"reward_mode": "prs", "top_k": 2}))
    assert read_checkpoint(tmp_path).trained_env_kwargs("ToolQA-v0") == {"reward_mode": "prs", "top_k": 2}


def test_a_minimal_state_reads_with_the_defaults_older_runs_had(tmp_path):
    write_state(tmp_path, {"step": 2, "optimizer": {}, "rng": {}, "extra": {"data_position": 20}})
    record = read_checkpoint(tmp_path)
    assert record.state == RunState(step=2, data_position=20)
    assert (record.config, record.method, record.per_rank, record.env_id) == ({}, "", [], None)


@pytest.mark.parametrize("tree,message", [
    ({"step": 2, "optimizer": {}, "rng": {}, "extra": {}}, "lacks 'data_position'"),
    ({"step": 2, "rng": {}, "extra": {"data_position": 1}}, "lacks 'optimizer'"),
    ({"step": 2, "optimizer": {}, "extra": {"data_position": 1}}, "lacks 'rng'"),
    ({"optimizer": {}, "rng": {}, "extra": {"data_position": 1}}, "lacks 'step'"),
    ({"step": "two", "optimizer": {}, "rng": {}, "extra": {"data_position": 1}}, "step must be an integer >= 0"),
    ({"step": 2, "optimizer": {}, "rng": {}, "extra": {"data_position": 1, "per_rank": [3]}}, "malformed"),
    ({"step": 2, "optimizer": {}, "rng": {}, "extra": [1]}, "malformed"),
])
def test_a_state_that_cannot_resume_is_one_error_naming_the_file(tmp_path, tree, message):
    write_state(tmp_path, tree)
    with pytest.raises(TrainerStateError, match=message) as caught:
        read_checkpoint(tmp_path)
    assert str(tmp_path) in str(caught.value)


def test_evaluation_rebuilds_the_recorded_extensions_and_their_prompt(tmp_path):
    write_state(tmp_path, saved_tree(extension={"gcd": saved_tree()["extra"]["extension"]["gcd"], "mine": {"x": 1}}))
    record = read_checkpoint(tmp_path, tensors=False)
    extensions = recorded_extensions(record.config, record.state.extension)
    assert [e.name for e in extensions.items] == ["gcd"]  # a user's own extension is not rebuilt
    gcd = extensions.items[0]
    assert gcd.cfg.lam == 0.5 and gcd.correction.mistakes == MISTAKES and gcd.correction.refreshed_at == 4
    assert extensions.system_prompt_note() == 'GCD "Common mistakes" list (2 items) appended'
    prompt = extensions.system_prompt("Act.")
    assert prompt.startswith("Act.") and all(m in prompt for m in MISTAKES)
    off = {**record.config, "gcd": {**record.config["gcd"], "correction": False}}
    plain = recorded_extensions(off, record.state.extension)
    assert plain.system_prompt("Act.") == "Act." and plain.system_prompt_note() is None


def test_recorded_extension_settings_rebuild_as_groups():
    # a checkpoint records nested groups as dicts (GCD's judge loss); a key this version does not know is left out
    state = {"gcd": {}, "gigpo": {}}
    now = recorded_extensions({"gcd": {"lam": 0.5, "judge_loss": {"beta": 0.1, "eps_high": 0.3}, "base": "gigpo"},
                               "gigpo": {"step_std_normalize": False, "gone": 1}}, state)
    for extensions in (now,):
        gcd = next(e for e in extensions.items if e.name == "gcd")
        gigpo = next(e for e in extensions.items if e.name == "gigpo")
        loss = gcd.cfg.judge_loss
        # the settings not recorded keep the judge's own defaults (seq-mean), not a plain LossConfig's
        assert (loss.beta, loss.eps_high, loss.eps_low, loss.aggregation) == (0.1, 0.3, 0.2, "seq-mean")
        assert gcd.cfg.loss_config() is loss and gigpo.cfg.step_std_normalize is False


def _edited(tmp_path, old: str, new: str) -> None:
    """The state ``saved_tree`` writes, with one value replaced in its JSON as a person would."""
    write_state(tmp_path, saved_tree())
    path = tmp_path / "trainer_state.json"
    doc = path.read_text()
    assert old in doc
    path.write_text(doc.replace(old, new, 1))


# (the text written in place of the saved value, the field named, what it takes)
HAND_EDITS = {
    "step-1e999": ('"step": 6,', '"step": 1e999,', "step", "an integer >= 0, got inf"),
    "step-string": ('"step": 6,', '"step": "6",', "step", "an integer >= 0, got '6'"),
    "position-inf": ('"data_position": 14', '"data_position": {"$float": "inf"}', "extra.data_position",
                     "an integer >= 0, got inf"),
    "position-negative": ('"data_position": 14', '"data_position": -3', "extra.data_position",
                          "an integer >= 0, got -3"),
    "episodes-inf": ('"episodes_played": 48', '"episodes_played": Infinity', "extra.episodes_played",
                     "an integer >= 0, got inf"),
    "seconds-inf": ('"train_seconds": 12.5', '"train_seconds": {"$float": "inf"}', "extra.train_seconds",
                    "a finite number >= 0, got inf"),
    "stage-inf": ('"prs_schedule": {"stage": 1.0}', '"prs_schedule": {"stage": {"$float": "inf"}}',
                  "extra.prs_schedule.stage", "a finite number >= 0, got inf"),
    "short-task-row": ('"method"', '"task_success": {"t1": [4, 1]}, "method"', "extra.task_success['t1']",
                       "[played, solved, last_played, last_solved]"),
    "task-row-zero-last": ('"method"', '"task_success": {"t1": [4, 1, 0, 0]}, "method"',
                           "extra.task_success['t1']", "[played, solved, last_played, last_solved]"),
    "curve-not-a-list": ('"eval_curve": [', '"eval_curve": 3, "x": [', "extra.eval_curve", "a list"),
}


@pytest.mark.parametrize("old,new,field,expected", HAND_EDITS.values(), ids=HAND_EDITS.keys())
def test_a_hand_edited_state_is_one_error_naming_the_file_the_field_and_what_it_takes(tmp_path, old, new, field,
                                                                                      expected):
    _edited(tmp_path, old, new)
    with pytest.raises(TrainerStateError) as caught:
        read_checkpoint(tmp_path)
    message = str(caught.value)
    assert message.startswith(f"{tmp_path / 'trainer_state.json'}: {field} must be "), message
    assert expected in message and "\n" not in message and len(message) < 300, message
    # read for its settings only (agentgym eval, the leaderboard): the same refusal
    with pytest.raises(TrainerStateError, match="must be"):
        read_checkpoint(tmp_path, tensors=False)
