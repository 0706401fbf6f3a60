"""``--async-steps K``: a rollout thread plays up to K steps ahead of the learner. Runs are
reproducible, the lag follows the schedule and never exceeds K, a killed run resumes as if it never
stopped, every method trains, and the ratio's denominator is what the sampler recorded."""

import json

import dapo
import gcd
import grpo
import pytest
import torch
import vspo
from safetensors.torch import load_file
from trainer_helpers import small_config

from agentgym.train.base.errors import ConfigError
from agentgym.train.hooks import TrainerExtension
from agentgym.train.loop import train

VOLATILE = ("time/", "tokens_per_second")


def rows(run_dir):
    return [json.loads(line) for line in open(run_dir / "run" / "metrics.jsonl")]


def stable(log):
    return [{k: v for k, v in r.items() if not k.startswith(VOLATILE)} for r in log]


def lags(log):
    return [r["async/version_lag"] for r in log]


@pytest.mark.learning
def test_an_async_run_is_reproducible_and_its_lag_follows_the_schedule(tmp_path, cold_model):
    kw = dict(model=cold_model, num_steps=5, num_groups=2, group_size=4, max_new_tokens=40, save_every=3,
              async_steps=1)
    grpo.main(small_config(tmp_path / "a", **kw))
    grpo.main(small_config(tmp_path / "b", **kw))
    a, b = rows(tmp_path / "a"), rows(tmp_path / "b")
    assert stable(a) == stable(b)
    # batch b is played with version max(b - 1, the last checkpoint step <= b): step 3 is a checkpoint
    assert lags(a) == [0.0, 1.0, 1.0, 0.0, 1.0]
    # played with older weights, the ratio is no longer exactly one, and PPO's clip sees it
    assert any(abs(r["ratio/mean"] - 1.0) > 1e-6 for r, lag in zip(a, lags(a)) if lag > 0)
    assert all(r["async/samples_without_behaviour_logprobs"] == 0 for r in a if not r["update/skipped"])
    grpo.main(small_config(tmp_path / "k2", **{**kw, "async_steps": 2, "save_every": 0}))
    assert lags(rows(tmp_path / "k2")) == [0.0, 1.0, 2.0, 2.0, 2.0]


@pytest.mark.learning
def test_a_killed_async_run_resumes_as_if_it_never_stopped(tmp_path, cold_model):
    kw = dict(model=cold_model, num_groups=2, group_size=4, max_new_tokens=40, save_every=2, async_steps=1)
    grpo.main(small_config(tmp_path / "full", num_steps=4, **kw))
    grpo.main(small_config(tmp_path / "cut", num_steps=2, **kw))
    grpo.main(small_config(tmp_path / "cut", num_steps=4, resume="auto", **kw))
    full, resumed = rows(tmp_path / "full"), rows(tmp_path / "cut")
    assert [r["step"] for r in resumed] == [1, 2, 3, 4]
    assert stable(resumed) == stable(full)  # no episode lost or played twice: the same counts, the same rewards
    a = load_file(str(tmp_path / "full" / "run" / "checkpoints" / "step_4" / "model.safetensors"))
    b = load_file(str(tmp_path / "cut" / "run" / "checkpoints" / "step_4" / "model.safetensors"))
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


@pytest.mark.learning
def test_vspo_resamples_and_dapo_oversamples_with_the_batch_version(tmp_path, cold_model):
    kw = dict(model=cold_model, num_steps=3, num_groups=4, group_size=4, max_new_tokens=40, num_epochs=1,
              num_minibatches=1, save_every=0, async_steps=1)
    vspo.main(small_config(tmp_path / "vspo", cls=vspo.VSPOTrainConfig, **kw))
    log = rows(tmp_path / "vspo")
    assert sum(r["vspo/groups_replaced"] for r in log) > 0 and lags(log) == [0.0, 1.0, 1.0]
    for r in log:  # the resampled groups are costed in the step that played them
        assert r.get("rollout/groups_resample", 0.0) == r["vspo/extra_groups"]
    dapo.main(small_config(tmp_path / "dapo", cls=dapo.DAPOTrainConfig, **kw))
    assert lags(rows(tmp_path / "dapo")) == [0.0, 1.0, 1.0]


@pytest.mark.learning
def test_gcd_judge_samples_take_the_current_weights_as_their_denominator(tmp_path, cold_model):
    cfg = small_config(tmp_path, cls=gcd.GCDTrainConfig, model=cold_model, num_steps=2, num_groups=2, group_size=4,
                       max_new_tokens=40, num_epochs=1, num_minibatches=1, save_every=0, async_steps=1)
    gcd.main(cfg)
    log = rows(tmp_path)
    assert lags(log) == [0.0, 1.0]
    # judge samples are drawn by the learner from its current weights: no recorded log-probabilities
    for r in log:
        assert r["async/samples_without_behaviour_logprobs"] == r.get("gcd/judge_samples", 0.0)


class _Broken(TrainerExtension):
    name = "broken"

    def after_rollout(self, ctx, episodes):
        if ctx.step == 1:
            raise ValueError("after_rollout broke on step 1")
        return episodes


def test_an_error_on_the_rollout_thread_ends_the_run_with_that_error(tmp_path):
    with pytest.raises(ValueError, match="broke on step 1"):
        train(small_config(tmp_path, num_steps=3, save_every=0, async_steps=1), [_Broken()])
    assert len(rows(tmp_path)) == 1  # step 1 trained and logged; step 2 never came


def test_async_steps_settings_that_cannot_work_are_clear_errors(tmp_path):
    with pytest.raises(ConfigError, match="async-steps"):
        small_config(tmp_path, async_steps=-1).validate()
    with pytest.raises(ConfigError, match="generator vllm engine sleeps"):
        small_config(tmp_path, async_steps=1, generator="vllm").rollout.validate()


def test_the_timeline_says_who_was_busy_when(tmp_path):
    result = grpo.main(small_config(tmp_path, num_steps=2, save_every=0, async_steps=1))
    spans = result.timeline
    assert {(s["who"], s["what"]) for s in spans} >= {("rollout", "generate"), ("rollout", "env"),
                                                      ("learner", "update"), ("learner", "wait")}
    assert all(0 <= s["start"] <= s["end"] for s in spans)
    assert sum(s["what"] == "update" for s in spans) == 2


def test_an_episode_budget_stops_the_rollout_thread_too(tmp_path):
    result = grpo.main(small_config(tmp_path, num_steps=50, max_episodes=8, save_every=0, async_steps=2))
    log = rows(tmp_path)
    # 2 groups x 2 episodes a step: the budget is spent after step 2
    assert [r["episodes/total"] for r in log] == [4.0, 8.0]
    # the untrained model's replies are never valid answers: every episode plays both turns, one
    # policy call each, so two calls per batch; none was played past the budget
    assert all(r["episode/turns"] == 2.0 for r in log)
    assert sum(s["what"] == "generate" for s in result.timeline) == 2 * len(log)
