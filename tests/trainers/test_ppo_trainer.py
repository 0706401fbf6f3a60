"""PPO with a value head on the real ToolQA env and the tiny model: the head is built into the
optimizer and trains with the policy, a resumed run is bitwise the same (the head included), and
``python trainers/ppo.py`` runs end to end."""

import json
import math
import os
import subprocess
import sys

import ppo
import pytest
import torch
from safetensors.torch import load_file
from trainer_helpers import small_config

from agentgym.train.base.checkpoint_record import read_checkpoint
from agentgym.train.base.errors import ConfigError
from agentgym.train.base.flags import build
from agentgym.train.config.tree import TrainConfig
from agentgym.train.loop import train
from agentgym.train.methods import PPO, recorded_extensions

VOLATILE = ("time/", "tokens_per_second")
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def rows(path):
    return [json.loads(line) for line in open(path / "run" / "metrics.jsonl")]


def test_group_size_one_is_allowed_for_ppo_and_refused_for_group_advantages():
    assert ppo.defaults().rollout.group_size == 1
    build(ppo.PPOTrainConfig, group_size=1, model="tiny", cold_start={"num_steps": 0}).validate()
    with pytest.raises(ConfigError, match="--group-size must be >= 2"):
        build(TrainConfig, group_size=1, model="tiny", cold_start={"num_steps": 0}).validate()


def test_ppo_under_fsdp_is_refused_when_the_flags_are_parsed(monkeypatch):
    monkeypatch.setenv("WORLD_SIZE", "2")
    with pytest.raises(ConfigError, match="--fsdp does not shard the value head"):
        build(ppo.PPOTrainConfig, fsdp=True, model="tiny", cold_start={"num_steps": 0}).validate()


@pytest.mark.learning
def test_the_value_head_is_in_the_optimizer_and_trains_with_the_policy(tmp_path, cold_model):
    # window layout, 2 epochs x 2 minibatches: the clipped value loss has values that moved to clip
    cfg = small_config(tmp_path, cls=ppo.PPOTrainConfig, model=cold_model, num_steps=2, num_groups=4, group_size=1,
                       max_new_tokens=24, layout="window", save_every=1, ppo={"value_clip": 0.01}, preset="auto")
    ext = PPO(cfg.ppo)
    result = train(cfg, [ext], name="ppo")
    ckpt = tmp_path / "run" / "checkpoints"
    first, last = read_checkpoint(ckpt / "step_1"), read_checkpoint(ckpt / "step_2")
    groups = first.optimizer["param_groups"]
    assert len(groups) == 2 and len(groups[1]["params"]) == 2  # the head's weight and bias
    assert groups[1]["lr"] == pytest.approx(10 * cfg.optim.learning_rate)
    assert all(first.optimizer["state"][i]["exp_avg"].abs().sum() > 0 for i in groups[1]["params"])
    heads = [r.state.extension["ppo"]["value_head"] for r in (first, last)]
    assert heads[0]["weight"].abs().sum() > 0  # moved from its zero start in the first step
    assert not torch.equal(heads[0]["weight"], heads[1]["weight"])  # and again in the second
    assert torch.equal(heads[1]["weight"], ext.head.weight.detach().cpu())
    for m in result.history:
        assert math.isfinite(m["loss/value"]) and m["loss/value"] > 0
        assert 0 < m["ppo/value_clip_frac"] <= 1
        assert {"ppo/value_mean", "ppo/explained_variance", "ppo/advantage_std"} <= set(m)
    # agentgym eval rebuilds the extension from the record without the head's tensors
    rebuilt = recorded_extensions(last.config, read_checkpoint(ckpt / "step_2", tensors=False).state.extension)
    assert [e.name for e in rebuilt.items] == ["ppo"]


@pytest.mark.learning
def test_ppo_resume_matches_an_uninterrupted_run_bitwise_value_head_included(tmp_path, cold_model):
    # 2 epochs x 2 minibatches with KL (small_config): old log-probabilities, the reference and the
    # head's optimizer moments all carry over the cut
    kw = dict(cls=ppo.PPOTrainConfig, model=cold_model, num_steps=2, save_every=1, num_groups=4, group_size=1,
              max_new_tokens=24, preset="auto")
    ppo.main(small_config(tmp_path / "full", **kw))
    ppo.main(small_config(tmp_path / "cut", **{**kw, "num_steps": 1}))
    ppo.main(small_config(tmp_path / "cut", resume="auto", **kw))
    full, cut = rows(tmp_path / "full"), rows(tmp_path / "cut")
    strip = lambda log: [{k: v for k, v in r.items() if not k.startswith(VOLATILE)} for r in log]  # noqa: E731
    assert strip(cut) == strip(full) and [r["step"] for r in cut] == [1, 2]
    assert full[-1]["loss/value"] > 0
    step_2 = [tmp_path / run / "run" / "checkpoints" / "step_2" for run in ("full", "cut")]
    a, b = (load_file(str(d / "model.safetensors")) for d in step_2)
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    heads = [read_checkpoint(d).state.extension["ppo"]["value_head"] for d in step_2]
    assert heads[0]["weight"].abs().sum() > 0
    assert all(torch.equal(heads[0][k], heads[1][k]) for k in ("weight", "bias"))


@pytest.mark.learning
@pytest.mark.multiproc
def test_trainers_ppo_runs_on_toolqa_and_evaluates(tmp_path, cold_model):
    out = subprocess.run([sys.executable, os.path.join(ROOT, "trainers", "ppo.py"), "--model", cold_model,
                          "--num-steps", "3", "--num-groups", "8", "--max-new-tokens", "24", "--eval-episodes", "8",
                          "--output-dir", str(tmp_path / "run"), "--no-progress", "--no-tensorboard",
                          "--cpu-threads", "1"],
                         capture_output=True, text=True, timeout=600, env={**os.environ, "PYTHONPATH": ROOT})
    assert out.returncode == 0, out.stderr[-2000:]
    lines = out.stdout.splitlines()
    assert [ln.split()[1] for ln in lines if ln.startswith("step ")] == ["1", "2", "3"]
    assert "held-out episodes: success" in lines[-1]
    log = rows(tmp_path)
    assert len(log) == 4 and all(r["batch/groups"] == 8 and r["batch/episodes"] == 8 for r in log[:3])
    assert all(math.isfinite(r["loss/value"]) for r in log[:3])
