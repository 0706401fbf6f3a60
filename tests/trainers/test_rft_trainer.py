"""RFT on the real ToolQA env with the tiny model: the script's settings, a run that writes its
metrics and checkpoints and resumes exactly, a run where nothing succeeds, and an update that
raises the log-probability of the episodes it kept."""

import json

import pytest
import rft
import torch
from safetensors.torch import load_file
from trainer_helpers import small_config

from agentgym.train.base.checkpoint_record import read_checkpoint
from agentgym.train.base.errors import ConfigError
from agentgym.train.base.flags import build
from agentgym.train.loop import train
from agentgym.train.methods import RFT, RFTConfig, recorded_extensions
from agentgym.train.optim.update import sample_logprobs
from agentgym.train.rollout.samples import episode_samples

VOLATILE = ("time/", "tokens_per_second")
METRICS = ("rft/kept_episodes", "rft/kept_frac", "rft/groups_with_success", "rft/groups")


def rows(path):
    return [json.loads(line) for line in open(path / "run" / "metrics.jsonl")]


def test_rft_trains_like_sft_by_default_and_allows_groups_of_one():
    cfg = rft.defaults()
    assert cfg.optim.loss.beta == 0.0 and cfg.optim.num_epochs == 1 and cfg.optim.num_minibatches == 1
    assert cfg.optim.loss.aggregation == "token-mean" and cfg.run.output_dir == "runs/rft"
    build(rft.RFTTrainConfig, group_size=1, model="tiny", cold_start={"num_steps": 0}).validate()
    with pytest.raises(ConfigError, match="--rft.keep must be one of"):
        build(rft.RFTTrainConfig, model="tiny", cold_start={"num_steps": 0}, rft={"keep": "most"}).validate()


@pytest.mark.learning
def test_rft_logs_checkpoints_and_resumes_exactly(tmp_path, cold_model):
    # the tiny model rarely succeeds on ToolQA: a small return threshold gives it episodes to keep. The
    # run plays the cold start's own view of the env (--preset auto reads it from the checkpoint's record):
    # with another action format its replies hardly ever earn a return at all
    kw = dict(cls=rft.RFTTrainConfig, model=cold_model, num_groups=4, group_size=4, max_new_tokens=48, num_epochs=1,
              num_minibatches=1, beta=0.0, save_every=1, rft={"min_return": 0.01}, preset="auto")
    rft.main(small_config(tmp_path / "full", num_steps=3, **kw))
    rft.main(small_config(tmp_path / "cut", num_steps=2, **kw))
    rft.main(small_config(tmp_path / "cut", num_steps=3, resume="auto", **kw))
    full, cut = rows(tmp_path / "full"), rows(tmp_path / "cut")
    strip = lambda log: [{k: v for k, v in r.items() if not k.startswith(VOLATILE)} for r in log]  # noqa: E731
    assert strip(cut) == strip(full) and [r["step"] for r in cut] == [1, 2, 3]
    for r in full:
        assert all(k in r for k in METRICS) and r["rft/groups"] == 4
        assert r["batch/episodes"] == r["rft/kept_episodes"] == r["rft/kept_frac"] * 16
        assert r["update/skipped"] == (r["rft/kept_episodes"] == 0)
    assert sum(r["rft/kept_episodes"] for r in full) > 0
    step_3 = [tmp_path / run / "run" / "checkpoints" / "step_3" for run in ("full", "cut")]
    a, b = (load_file(str(d / "model.safetensors")) for d in step_3)
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    # agentgym eval rebuilds the extension from the record
    record = read_checkpoint(step_3[1], tensors=False)
    rebuilt = recorded_extensions(record.config, record.state.extension)
    assert [e.name for e in rebuilt.items] == ["rft"] and rebuilt.items[0].cfg.min_return == 0.01


def test_a_step_where_nothing_succeeds_trains_on_nothing(tmp_path, cold_model, capsys):
    result = rft.main(small_config(tmp_path, cls=rft.RFTTrainConfig, model=cold_model, num_steps=2, max_new_tokens=12,
                                   quiet=False))
    lines = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("step ")]
    assert len(result.history) == len(lines) == 2
    for r, line in zip(result.history, lines):
        assert r["success/played_mean"] == 0.0 and r["rft/kept_episodes"] == 0 and r["rft/groups_with_success"] == 0
        assert r["update/skipped"] == 1.0 and r["batch/episodes"] == 0
        assert "update skipped" in line
    assert (tmp_path / "run" / "checkpoints" / "step_2" / "trainer_state.json").exists()


class MarkedSuccess(RFT):
    """RFT whose episodes' success is decided here, not by ToolQA (which the tiny model rarely
    solves): every third episode of the rollout succeeds. It records the model it trains and the
    kept episodes' samples with their log-probabilities before the update."""

    def build(self, run, model):
        self.model, self.pad_id = model, run.pad_token_id
        return []

    def after_rollout(self, ctx, episodes):
        for i, ep in enumerate(episodes):
            ep.success = i % 3 == 0
        self.played = len(episodes)
        return super().after_rollout(ctx, episodes)

    def transform_advantages(self, ctx, advantages, episodes):
        advantages = super().transform_advantages(ctx, advantages, episodes)
        self.samples = episode_samples(episodes, advantages, ctx.run.layout)
        self.before = sample_logprobs(self.model, self.samples, self.pad_id, 8)
        return advantages


def kept_token_logprob(logprobs, samples):
    """Mean log-probability of the samples' loss tokens (position t of a row scores token t + 1)."""
    total = sum(float((lp * torch.tensor(s.loss_mask[1:], dtype=lp.dtype)).sum()) for lp, s in zip(logprobs, samples))
    return total / sum(sum(s.loss_mask[1:]) for s in samples)


@pytest.mark.parametrize("layout", ["concat", "window"])
def test_an_update_raises_the_log_probability_of_the_kept_episodes(tmp_path, cold_model, layout):
    cfg = small_config(tmp_path, cls=rft.RFTTrainConfig, model=cold_model, num_steps=1, num_groups=3, group_size=3,
                       max_new_tokens=24, num_epochs=1, num_minibatches=1, beta=0.0, learning_rate=1e-3,
                       layout=layout, temperature=1.0)
    ext = MarkedSuccess(RFTConfig())
    (m,) = train(cfg, [ext], name="rft").history
    assert ext.played == 9 and m["rft/kept_episodes"] == m["batch/episodes"] == 3
    # the loss covers the kept episodes' sampled tokens and nothing else, at ratio 1 and advantage 1
    assert m["tokens/loss"] == sum(s.num_loss_tokens for s in ext.samples) > 0
    assert m["loss/policy"] == pytest.approx(-1.0) and m["clip_ratio"] == 0.0
    after = sample_logprobs(ext.model, ext.samples, ext.pad_id, 8)
    gain = kept_token_logprob(after, ext.samples) - kept_token_logprob(ext.before, ext.samples)
    assert gain > 0.01, gain
