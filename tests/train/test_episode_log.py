"""The saved episodes (``--log-episodes``): what one line holds, which groups a step keeps, and how
the files are written, kept on resume and dropped on a fresh run."""

import json
import os
from types import SimpleNamespace

import numpy as np
import pytest

from agentgym.agents.base import Completion
from agentgym.train.rollout.episodes import Episode, Turn
from agentgym.train.run import episode_log
from agentgym.train.run.episode_log import MAX_TEXT_CHARS, EpisodeLog, episode_record, file_step, spread


def _episode(group=0, task="t0", reply="<answer>apple</answer>", success=True, turns=2):
    ep = Episode(group=group, task_id=task, group_key=f"k/{task}", system_prompt="Answer.", seed=7,
                 instruction=f"find {task}", observations=[f"obs {t}" for t in range(turns + 1)])
    for t in range(turns):
        ep.turns.append(Turn([1, 2], Completion(text=f"{reply} {t}", token_ids=[3, 4, 5], logprobs=[-1.0] * 3)))
        ep.actions.append(f"{reply} {t}")
        ep.rewards.append(0.5)
        ep.step_infos.append({"reward_terms": {"format": 1.0, "tool": np.float32(0.5)}, "action_valid": t > 0,
                              "parse_error": None if t else "no action", "admissible_actions": ["x"] * 1000})
    ep.terminated, ep.success = True, success
    ep.episode_terms = {"answer": 1.0}
    return ep


def _batch(groups=4, group_size=2, step=3, version=3):
    episodes = [_episode(g, f"t{g}") for g in range(groups) for _ in range(group_size)]
    return SimpleNamespace(episodes=episodes, played=list(episodes), step=step, version=version)


def _read(path):
    return [json.loads(line) for line in open(path, encoding="utf-8")]


def test_a_line_holds_the_task_every_turn_its_terms_and_advantages_and_the_methods_signals():
    ep = _episode()
    ep.signals["vspo/task_value"] = np.float64(0.25)
    ep.turn_signals["gigpo/step_advantage"] = [0.1, -0.2]
    ep.turn_signals["gcd/label"] = [None, "good"]
    rec = json.loads(json.dumps(episode_record(ep, np.array([1.0, -1.0]), step=4, split="train")))
    assert rec["step"] == 4 and rec["task_id"] == "t0" and rec["group_key"] == "k/t0" and rec["group"] == 0
    assert rec["system_prompt"] == "Answer." and rec["instruction"] == "find t0"
    assert rec["return"] == 1.0 and rec["success"] is True and rec["episode_terms"] == {"answer": 1.0}
    assert rec["advantage"] == 0.0 and rec["signals"] == {"vspo/task_value": 0.25}
    first, second = rec["turns"]
    assert first["observation"] == "obs 0" and first["reply"] == "<answer>apple</answer> 0"
    assert first["terms"] == {"format": 1.0, "tool": 0.5} and first["action_valid"] is False
    assert first["advantage"] == 1.0 and second["advantage"] == -1.0 and first["tokens"] == 3
    assert first["parse_error"] == "no action" and "parse_error" not in second
    assert "admissible_actions" not in first  # only the listed info keys
    assert first["signals"] == {"gigpo/step_advantage": 0.1, "gcd/label": None}
    assert second["signals"] == {"gigpo/step_advantage": -0.2, "gcd/label": "good"}
    assert rec["final_observation"] == "obs 2"
    # an evaluation episode trained on nothing
    assert episode_record(ep)["turns"][0]["advantage"] is None and episode_record(ep)["advantage"] is None


def test_a_scored_turn_says_how_many_actions_it_was_chosen_among_not_which():
    ep = _episode(turns=1)
    ep.turns[0] = Turn([1, 2], Completion(text="look", token_ids=[3, 4], logprobs=[-0.5, -1.0],
                                          candidate_ids=[[3, 4], [5, 4], [6, 7, 4]]))
    (turn,) = json.loads(json.dumps(episode_record(ep)))["turns"]
    assert turn["candidates"] == 3 and turn["logprob"] == -1.5 and "candidate_ids" not in turn
    assert "candidates" not in episode_record(_episode())["turns"][0]


def test_long_texts_are_cut_with_a_note_and_odd_values_stay_json():
    ep = _episode(reply="x" * 50_000)
    ep.metrics = {"nan": float("nan"), "obj": object()}
    rec = episode_record(ep, [0.0, 0.0])
    reply = rec["turns"][0]["reply"]
    assert len(reply) < MAX_TEXT_CHARS + 100 and reply.endswith("[cut: 50002 chars in all]")
    assert rec["metrics"]["nan"] is None and isinstance(rec["metrics"]["obj"], str)
    json.dumps(rec, allow_nan=False)


def test_a_step_keeps_k_groups_spread_over_the_batch_with_version_and_lag(tmp_path):
    log = EpisodeLog(tmp_path, groups=2)
    batch = _batch(groups=5, step=3, version=1)
    adv = [np.full(2, float(i)) for i in range(len(batch.episodes))]
    log.step(4, batch, adv)
    rows = _read(tmp_path / "episodes" / "step_4.jsonl")
    assert [r["group"] for r in rows] == [0, 0, 4, 4]
    assert [r["turns"][0]["advantage"] for r in rows] == [0.0, 1.0, 8.0, 9.0]
    assert {(r["step"], r["split"], r["version"], r["lag"]) for r in rows} == {(4, "train", 1, 2)}
    assert log.bytes_written == os.path.getsize(tmp_path / "episodes" / "step_4.jsonl")
    assert spread(5, 2) == [0, 4] and spread(5, 3) == [0, 2, 4] and spread(1, 2) == [0]
    assert {r["trained"] for r in rows} == {True}


def test_a_step_that_trains_on_fewer_groups_shows_groups_the_method_dropped(tmp_path):
    batch = _batch(groups=3)
    trained = batch.episodes[2:4]  # the method kept group 1 only
    batch.episodes = trained
    EpisodeLog(tmp_path, groups=2).step(1, batch, [np.ones(2), np.ones(2)])
    rows = _read(tmp_path / "episodes" / "step_1.jsonl")
    assert [(r["group"], r["trained"]) for r in rows] == [(1, True), (1, True), (0, False), (0, False)]
    assert rows[2]["advantage"] is None and rows[2]["turns"][0]["advantage"] is None


def test_an_evaluation_keeps_every_episode_per_split(tmp_path):
    log = EpisodeLog(tmp_path, groups=1)
    keep = log.keeper(6)
    keep("valid", [_episode(0, "a"), _episode(1, "b")])
    keep("L0/x", [_episode(0, "c")])
    assert [r["task_id"] for r in _read(tmp_path / "episodes" / "eval_step_6_valid.jsonl")] == ["a", "b"]
    assert _read(tmp_path / "episodes" / "eval_step_6_L0_x.jsonl")[0]["split"] == "L0/x"


def test_log_episodes_0_writes_nothing(tmp_path):
    log = EpisodeLog(tmp_path, groups=0)
    log.step(1, _batch(), [np.zeros(2)] * 8)
    assert log.keeper(0) is None
    assert not (tmp_path / "episodes").exists()
    EpisodeLog.off().step(1, _batch(), [np.zeros(2)] * 8)


def test_resume_keeps_the_files_up_to_its_checkpoint_and_a_fresh_run_starts_empty(tmp_path):
    folder = tmp_path / "episodes"
    folder.mkdir()
    names = ["step_1.jsonl", "step_2.jsonl", "step_3.jsonl", "eval_step_0_valid.jsonl", "eval_step_2_valid.jsonl",
             "eval_step_3_valid.jsonl", "notes.txt"]
    for name in names:
        (folder / name).write_text("{}\n")
    EpisodeLog(tmp_path, groups=2, resume_step=2)
    assert sorted(os.listdir(folder)) == sorted(["step_1.jsonl", "step_2.jsonl", "eval_step_0_valid.jsonl",
                                                 "eval_step_2_valid.jsonl", "notes.txt"])
    EpisodeLog(tmp_path, groups=0)  # a fresh run, logging or not: no episode of an older run is left
    assert os.listdir(folder) == ["notes.txt"]
    assert file_step("eval_step_12_L0.jsonl") == 12 and file_step("step_3.jsonl.tmp") is None


@pytest.mark.parametrize("resume_step", [2, None], ids=["resume", "fresh"])
def test_a_folder_where_the_run_keeps_an_episode_file_is_one_error_naming_it(tmp_path, resume_step):
    from agentgym.train.base.errors import RunFileError

    (tmp_path / "episodes" / "step_9.jsonl").mkdir(parents=True)
    (tmp_path / "episodes" / "step_1.jsonl").write_text("{}\n")
    with pytest.raises(RunFileError) as caught:
        EpisodeLog(tmp_path, groups=2, resume_step=resume_step)
    assert str(caught.value).startswith(f"{tmp_path / 'episodes' / 'step_9.jsonl'} is a folder, not an episode file")
    assert "\n" not in str(caught.value)
    assert (tmp_path / "episodes" / "step_1.jsonl").exists()  # refused before anything was removed


def test_a_file_named_episodes_is_one_error_when_the_run_keeps_episodes(tmp_path):
    from agentgym.train.base.errors import RunFileError

    (tmp_path / "episodes").write_text("notes\n")
    with pytest.raises(RunFileError, match=r"episodes is a file, not the folder the run keeps its episodes in"):
        EpisodeLog(tmp_path, groups=2, resume_step=2)
    EpisodeLog(tmp_path, groups=0, resume_step=2)  # --log-episodes 0 writes nothing there: no refusal


def test_a_file_is_written_whole_or_not_at_all(tmp_path, monkeypatch):
    log = EpisodeLog(tmp_path, groups=8)
    log.step(1, _batch(), [np.zeros(2)] * 8)
    before = (tmp_path / "episodes" / "step_1.jsonl").read_bytes()

    def broken_replace(src, dst):
        raise OSError("disk gone")

    monkeypatch.setattr(episode_log.os, "replace", broken_replace)
    with pytest.raises(OSError, match="disk gone"):
        log.step(1, _batch(groups=2), [np.ones(2)] * 4)
    # the earlier file is untouched and no temporary file is left behind
    assert (tmp_path / "episodes" / "step_1.jsonl").read_bytes() == before
    assert os.listdir(tmp_path / "episodes") == ["step_1.jsonl"]
