import json
import os

import grpo
import pytest
import torch
from safetensors.torch import load_file
from trainer_helpers import TOOLQA_SMALL, small_config

from agentgym.train.loop import run_eval

VOLATILE = ("time/", "tokens_per_second")


def small_args(tmp_path, **kw):
    return small_config(tmp_path, **kw)


def stable(rows):
    return [{k: v for k, v in r.items() if not k.startswith(VOLATILE)} for r in rows]


def read_jsonl(path):
    return [json.loads(line) for line in open(path)]


def test_grpo_smoke_logs_every_documented_metric(tmp_path):
    history = grpo.main(small_args(tmp_path, num_steps=2, num_epochs=1, num_minibatches=1))
    rows = read_jsonl(tmp_path / "run" / "metrics.jsonl")
    assert [r["step"] for r in rows] == [1, 2]
    for key in ("reward/mean", "success/mean", "loss/policy", "kl", "tokens_per_second", "grad_norm",
                "terms/format", "prs/stage", "groups/zero_advantage_frac", "groups/tied_frac", "pool/success",
                "pool/played_frac", "pool/always_frac", "pool/never_frac"):
        assert key in rows[0], key
    # per task of the stream: every episode played is counted once, and the pool metrics read it
    table = json.loads((tmp_path / "run" / "task_success.json").read_text())
    assert sum(t["played"] for t in table.values()) == sum(r["episodes/played"] for r in rows)
    assert rows[-1]["pool/played_frac"] == len(table) / rows[-1]["data/task_pool"]
    assert rows[-1]["pool/success"] == pytest.approx(
        sum(t["last_solved"] / t["last_played"] for t in table.values()) / len(table))
    assert rows[0]["tokens_per_second"] > 0
    assert os.listdir(tmp_path / "run" / "tensorboard")
    ckpt = tmp_path / "run" / "checkpoints"
    assert (ckpt / "latest").read_text() == "step_2"
    assert (ckpt / "step_2" / "config.json").exists() and (ckpt / "step_2" / "trainer_state.json").exists()
    assert len(history) == 2


@pytest.mark.learning
def test_resume_matches_an_uninterrupted_run_bitwise(tmp_path):
    full_dir, cut_dir = tmp_path / "full", tmp_path / "cut"
    grpo.main(small_args(full_dir))
    grpo.main(small_args(cut_dir, num_steps=2))
    # a run killed during step 3 may have logged it before dying: resume must drop that line
    with open(cut_dir / "run" / "metrics.jsonl", "a") as f:
        f.write(json.dumps({"step": 3, "reward/mean": 123.0}) + "\n")
    grpo.main(small_args(cut_dir, resume="auto"))
    full = read_jsonl(full_dir / "run" / "metrics.jsonl")
    resumed = read_jsonl(cut_dir / "run" / "metrics.jsonl")
    assert [r["step"] for r in resumed] == [1, 2, 3, 4]
    assert stable(resumed) == stable(full)  # the pool/* metrics too: the per-task record is resumed
    assert (full_dir / "run" / "task_success.json").read_text() == (cut_dir / "run" / "task_success.json").read_text()
    a = load_file(str(full_dir / "run" / "checkpoints" / "step_4" / "model.safetensors"))
    b = load_file(str(cut_dir / "run" / "checkpoints" / "step_4" / "model.safetensors"))
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_bad_resume_path_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="--resume .* does not exist"):
        grpo.main(small_args(tmp_path, resume=str(tmp_path / "nothing")))
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="no checkpoint"):
        grpo.main(small_args(tmp_path, resume=str(tmp_path / "empty")))


def test_resume_auto_passes_over_a_hostile_latest_and_overwrites_no_earlier_checkpoint(tmp_path, capsys):
    grpo.main(small_args(tmp_path, num_steps=2, save_every=1, num_epochs=1, num_minibatches=1))
    ckpt = tmp_path / "run" / "checkpoints"
    before = (ckpt / "step_1" / "model.safetensors").read_bytes()
    (ckpt / "latest").write_text("../../../etc")
    result = grpo.main(small_args(tmp_path, num_steps=3, save_every=1, num_epochs=1, num_minibatches=1, resume="auto"))
    assert [h["step"] for h in result.history] == [3]
    assert "resuming from" in capsys.readouterr().err
    assert (ckpt / "latest").read_text() == "step_3" and (ckpt / "step_1" / "model.safetensors").read_bytes() == before
    assert [r["step"] for r in read_jsonl(tmp_path / "run" / "metrics.jsonl")] == [1, 2, 3]


@pytest.mark.learning
def test_a_checkpoint_error_ends_a_trainer_script_with_one_line(tmp_path):
    import subprocess
    import sys

    (tmp_path / "run" / "checkpoints" / "step_1").mkdir(parents=True)
    (tmp_path / "run" / "checkpoints" / "latest").write_text("step_1")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    out = subprocess.run([sys.executable, os.path.join(root, "trainers", "grpo.py"), "--model", "tiny",
                          "--output-dir", str(tmp_path / "run"), "--resume", "--cold-start.num-steps", "0",
                          "--eval-episodes", "0", "--no-progress"],
                         capture_output=True, text=True, timeout=600, env={**os.environ, "PYTHONPATH": root})
    assert out.returncode != 0 and "Traceback" not in out.stderr
    assert out.stderr.strip().splitlines()[-1].startswith("error: cannot resume from")


def test_resume_over_hand_edited_run_files_is_one_error_naming_the_file_and_field(tmp_path):
    from agentgym.train.base.errors import ConfigError

    grpo.main(small_args(tmp_path, num_steps=2, num_epochs=1, num_minibatches=1))
    run = tmp_path / "run"
    metrics, state = run / "metrics.jsonl", run / "checkpoints" / "step_2" / "trainer_state.json"
    saved_metrics, saved_state = metrics.read_text(), state.read_text()

    def refused(match):
        with pytest.raises(ConfigError, match=match) as caught:
            grpo.main(small_args(tmp_path, num_steps=3, resume="auto"))
        assert "\n" not in str(caught.value)

    metrics.write_text(saved_metrics.replace('"step": 1,', '"step": "1",', 1))
    refused(r'metrics.jsonl:1: "step" must be an integer >= 0 .*got \'1\'')
    metrics.write_text(saved_metrics)
    (run / "episodes" / "step_9.jsonl").mkdir()
    refused(r"episodes/step_9.jsonl is a folder, not an episode file")
    (run / "episodes" / "step_9.jsonl").rmdir()
    state.write_text(saved_state.replace('"data_position": 4', '"data_position": {"$float": "inf"}', 1))
    refused(r"cannot resume from .*step_2/trainer_state.json: extra.data_position must be an integer >= 0, got inf")
    assert metrics.read_text() == saved_metrics  # nothing of the run was cut on the way out


def test_evaluation_reports_before_and_after_and_leaves_the_random_streams_as_they_were(tmp_path, tiny_path):
    import random

    import numpy as np

    from agentgym.agents import HFPolicy, SamplingConfig
    from agentgym.train.base.device import seed_everything
    from agentgym.train.base.models import load_model, load_tokenizer

    args = small_args(tmp_path, eval_episodes=4, max_new_tokens=8)
    policy = HFPolicy(load_model(tiny_path, "cpu", trainable=False), load_tokenizer(tiny_path),
                      SamplingConfig(max_new_tokens=8))
    env_kwargs = {"reward_mode": args.env.reward_mode, **json.loads(TOOLQA_SMALL)}

    def draws():
        return torch.rand(4).tolist(), np.random.random(), random.random()

    seed_everything(7)
    expected = draws()
    seed_everything(7)
    result = run_eval(args, policy, env_kwargs)
    assert draws() == expected
    assert 0.0 <= result["success_rate"] <= 1.0 and 0.0 <= result["prs_return"] <= 1.0
    # the same held-out tasks and sampling seed every time: the same numbers again
    assert run_eval(args, policy, env_kwargs) == result

    grpo.main(small_args(tmp_path / "logged", num_steps=1, num_epochs=1, num_minibatches=1, eval_episodes=4))
    last = read_jsonl(tmp_path / "logged" / "run" / "metrics.jsonl")[-1]
    for key in ("eval/success/before", "eval/return/before", "eval/success/after", "eval/return/after"):
        assert 0.0 <= last[key] <= 1.0, key


@pytest.mark.learning
def test_resume_survives_a_partial_last_metrics_line_and_keeps_the_before_evaluation(tmp_path):
    import warnings

    grpo.main(small_args(tmp_path, num_steps=2, num_epochs=1, num_minibatches=1, eval_episodes=2, max_new_tokens=6))
    with open(tmp_path / "run" / "metrics.jsonl", "a") as f:
        f.write('{"step": 3, "reward/me')  # power lost mid-write
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = grpo.main(small_args(tmp_path, num_steps=3, num_epochs=1, num_minibatches=1, eval_episodes=2,
                                      max_new_tokens=6, resume="auto"))
    assert any("not valid JSON" in str(w.message) for w in caught)
    assert [r["step"] for r in read_jsonl(tmp_path / "run" / "metrics.jsonl")] == [1, 2, 3, 3]
    # the before evaluation came back from the checkpoint: the summary has both ends
    assert set(result.evaluation) == {"before", "after"}
    last = read_jsonl(tmp_path / "run" / "metrics.jsonl")[-1]
    assert "eval/success/before" in last and "eval/success/after" in last


def test_a_half_written_cold_start_is_rebuilt_not_loaded(tmp_path):
    from agentgym.train.base.flags import build
    from agentgym.train.base.records import is_complete
    from agentgym.train.coldstart.sft import reusable, run_sft
    from agentgym.train.config.tree import SFTRunConfig

    cfg = build(SFTRunConfig, model="tiny", env_kwargs=TOOLQA_SMALL, num_steps=2, num_episodes=4, batch_size=4,
                output_dir=str(tmp_path / "sft"), quiet=True, progress=False, tensorboard=False)
    final = run_sft(cfg)
    assert is_complete(final) and reusable(final, cfg)
    # killed after the weights, before the tokenizer and record: not reusable, and rebuilt
    (tmp_path / "sft" / "final" / "tokenizer_config.json").unlink()
    (tmp_path / "sft" / "final" / "agentgym_sft.json").unlink()
    assert not reusable(final, cfg)
    cfg_other = build(SFTRunConfig, model="tiny", env_kwargs=TOOLQA_SMALL, num_steps=3, num_episodes=4, batch_size=4,
                      output_dir=str(tmp_path / "sft"), quiet=True, progress=False, tensorboard=False)
    run_sft(cfg)
    assert reusable(final, cfg) and not reusable(final, cfg_other)


@pytest.mark.learning
def test_eval_every_logs_a_held_out_curve_that_survives_resume(tmp_path):
    kw = dict(num_epochs=1, num_minibatches=1, eval_episodes=2, max_new_tokens=6, eval_every=2)
    full = grpo.main(small_args(tmp_path / "full", num_steps=4, **kw))
    assert [p["step"] for p in full.curve] == [0, 2, 4]
    assert full.curve[0]["success"] == full.evaluation["before"]["success_rate"]
    assert full.curve[-1]["return"] == full.evaluation["after"]["prs_return"]
    rows = read_jsonl(tmp_path / "full" / "run" / "metrics.jsonl")
    assert [r["step"] for r in rows if "eval/success" in r] == [2, 4]
    grpo.main(small_args(tmp_path / "cut", num_steps=2, **kw))
    resumed = grpo.main(small_args(tmp_path / "cut", num_steps=4, resume="auto", **kw))
    # step 2 came back from the checkpoint; every point equals the uninterrupted run's
    timeless = [{k: v for k, v in p.items() if k != "seconds"} for p in resumed.curve]
    assert timeless == [{k: v for k, v in p.items() if k != "seconds"} for p in full.curve]
    assert [p["seconds"] for p in resumed.curve] == sorted(p["seconds"] for p in resumed.curve)


@pytest.mark.learning
def test_several_eval_splits_score_each_split_as_if_it_were_evaluated_alone(tmp_path):
    kw = dict(num_epochs=1, num_minibatches=1, eval_episodes=3, max_new_tokens=6, num_steps=2)
    both = grpo.main(small_args(tmp_path / "both", eval_split="valid,test", eval_every=1, **kw))
    alone = {split: grpo.main(small_args(tmp_path / split, eval_split=split, **kw)).evaluation
             for split in ("valid", "test")}
    for when in ("before", "after"):
        res = both.evaluation[when]
        # the headline is the first split's whole result; each split's scores equal a one-split run's
        assert {k: v for k, v in res.items() if k != "splits"} == alone["valid"][when]
        for split in ("valid", "test"):
            assert res["splits"][split] == {k: alone[split][when][k] for k in ("success_rate", "prs_return")}
    assert [sorted(p) for p in both.curve] == [sorted(["step", "episodes", "seconds", "success", "return",
                                                       "valid/success", "valid/return", "test/success",
                                                       "test/return"])] * 3
    rows = read_jsonl(tmp_path / "both" / "run" / "metrics.jsonl")
    assert [r["eval/test/success"] for r in rows if "eval/test/success" in r] == [p["test/success"] for p in both.curve[1:]]
    assert rows[-1]["eval/test/return/after"] == both.evaluation["after"]["splits"]["test"]["prs_return"]


@pytest.mark.learning
def test_max_episodes_stops_at_the_budget_counting_extra_rollouts_and_resumes(tmp_path):
    import vspo

    kw = dict(num_epochs=1, num_minibatches=1, eval_episodes=2, max_new_tokens=6, num_steps=50)
    # 2 groups x 2 episodes a step: a budget of 12 ends after the 3rd step
    result = grpo.main(small_args(tmp_path / "grpo", max_episodes=12, **kw))
    assert len(result) == 3 and result.history[-1]["episodes/total"] == 12
    last = result.curve[-1]
    assert (last["step"], last["episodes"], last["success"], last["return"]) == (
        3, 12, result.evaluation["after"]["success_rate"], result.evaluation["after"]["prs_return"])
    assert last["seconds"] == pytest.approx(sum(h["time/step"] for h in result.history), abs=0.01)
    assert read_jsonl(tmp_path / "grpo" / "run" / "metrics.jsonl")[-1]["step"] == 3
    # resuming a run whose budget is spent trains nothing more and reports the same evaluation
    again = grpo.main(small_args(tmp_path / "grpo", max_episodes=12, resume="auto", **kw))
    assert len(again) == 0 and again.evaluation == result.evaluation
    # VSPO's resampled groups count against the budget: never more than one step past it
    v = vspo.main(small_args(tmp_path / "vspo", cls=vspo.VSPOTrainConfig, max_episodes=30, **kw))
    totals = [h["episodes/total"] for h in v.history]
    assert len(totals) >= 2 and totals[-1] >= 30 and totals[-2] < 30
    assert any(h["episodes/played"] > 4 for h in v.history)  # the untrained model ties: VSPO resamples


def test_update_metrics_average_every_minibatch_step(tmp_path):
    grpo.main(small_args(tmp_path, num_steps=1, num_epochs=2, num_minibatches=2))
    row = read_jsonl(tmp_path / "run" / "metrics.jsonl")[0]
    assert row["update/optimizer_steps"] == 4
    # loss tokens of one pass over the batch: every generated token of the batch is trained on
    assert row["tokens/loss"] == row["tokens/generated"]
    assert all(row[k] is not None for k in ("loss/policy", "kl", "grad_norm", "clip_ratio"))


def test_a_binary_reward_run_is_evaluated_on_the_prs_return(tmp_path):
    from agentgym.agents.base import Completion, Policy

    class Searcher(Policy):  # always a well-formed search: format and tool terms, never the answer
        def generate(self, prompts, sampling=None):
            call = '<tool_call>{"name": "search", "arguments": {"query": "founded"}}</tool_call>'
            return [Completion(text=call) for _ in prompts]

    policy = Searcher()
    kwargs = json.loads(TOOLQA_SMALL)
    prs = run_eval(small_args(tmp_path, eval_episodes=4, max_new_tokens=8), policy, {"reward_mode": "prs", **kwargs})
    binary = run_eval(small_args(tmp_path, eval_episodes=4, max_new_tokens=8, reward_mode="binary"), policy,
                      {"reward_mode": "binary", **kwargs})
    assert binary == prs and prs["prs_return"] > 0.0 and prs["success_rate"] == 0.0


@pytest.mark.learning
def test_rollout_mode_reaches_the_collector_and_in_process_envs_play_it_as_lockstep(tmp_path):
    # on the sync backend nothing steps concurrently, so overlapped batches are lockstep's exactly
    # and even sampled runs match; on the process backend the overlapped run trains too
    lock = grpo.main(small_args(tmp_path / "lock", num_steps=2, save_every=0, tensorboard=False))
    over = grpo.main(small_args(tmp_path / "over", num_steps=2, save_every=0, tensorboard=False,
                                rollout_mode="overlapped"))
    assert stable(over.history) == stable(lock.history)
    proc = grpo.main(small_args(tmp_path / "proc", num_steps=1, save_every=0, tensorboard=False,
                                rollout_mode="overlapped", backend="process"))
    row = proc.history[0]
    assert row["episodes/played"] == 4 and row["time/rollout"] > 0 and torch.isfinite(torch.tensor(row["loss/policy"]))


def test_a_split_no_larger_than_the_evaluation_is_played_whole():
    from collections import Counter

    from agentgym.train.evaluate import whole_split

    kwargs = {"question_kinds": ["single_hop"], "max_turns": 2}
    tasks = whole_split("ToolQA-v0", kwargs, "valid", 700)  # 309 questions: each twice, the first 82 three times
    counts = Counter(tasks)
    assert len(tasks) == 700 and len(counts) == 309 and sorted(Counter(counts.values()).items()) == [(2, 227), (3, 82)]
    assert tasks[:309] == tasks[309:618]  # in the env's own order, pass after pass
    assert whole_split("ToolQA-v0", kwargs, "valid", 256) is None  # a larger split: seeded draws, as before
