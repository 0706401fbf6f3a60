"""RFT on hand-built episodes: which episodes it keeps, the advantages and samples it trains on,
a step without success, and that its loss has the SFT gradient. tests/trainers/test_rft_trainer.py
runs it on the real env."""

import numpy as np
import pytest
import torch

from agentgym.agents.base import Completion
from agentgym.train.base.errors import ConfigError
from agentgym.train.config.optim import LossConfig
from agentgym.train.config.tree import TrainConfig
from agentgym.train.hooks import StepContext
from agentgym.train.methods import BY_NAME, RFT, RFTConfig, recorded_extensions
from agentgym.train.methods.grpo import group_advantages
from agentgym.train.methods.rft import keep_in_group, select
from agentgym.train.optim.loss import policy_loss
from agentgym.train.rollout.episodes import Episode, Turn
from agentgym.train.rollout.samples import episode_samples, per_turn
from agentgym.train.view import RunView


def episode(group, ret, success, turns=1, tokens=3):
    """An episode of ``turns`` model turns of ``tokens`` sampled ids each (after a 2-id prompt)."""
    ep = Episode(group=group, task_id=f"t{group}", group_key=f"t{group}", system_prompt="", seed=group,
                 reset_options={})
    ep.rewards = [0.0] * (turns - 1) + [ret]
    ep.success = success
    ep.turns = [Turn([1, 2], Completion(text="x", token_ids=[10 + group] * tokens)) for _ in range(turns)]
    return ep


def ctx():
    return StepContext(0, None, None, None, None, 4, 2, np.random.default_rng(0), RunView.of(TrainConfig()))


def test_keep_all_keeps_every_success_and_best_the_highest_return_first_on_a_tie():
    assert keep_in_group([True, False, True, True], [0.6, 1.0, 0.9, 0.9]) == [True, False, True, True]
    # the failed episode's higher return does not count: best is among the successes
    assert keep_in_group([True, False, True, True], [0.6, 1.0, 0.9, 0.9], keep="best") == [False, False, True, False]
    assert keep_in_group([False, False], [0.5, 0.7], keep="best") == [False, False]
    assert keep_in_group([True], [0.0], keep="best") == [True]
    with pytest.raises(ValueError, match="keep must be one of"):
        keep_in_group([True], [1.0], keep="some")
    with pytest.raises(ValueError, match="one return per episode"):
        keep_in_group([True, False], [1.0])


def test_select_works_group_by_group_in_played_order():
    eps = [episode(0, 0.2, False), episode(1, 0.9, True), episode(0, 0.8, True), episode(1, 1.0, True),
           episode(2, 0.1, False), episode(2, 0.3, False), episode(0, 0.9, True)]
    kept, with_success = select(eps)
    assert kept == [eps[1], eps[2], eps[3], eps[6]] and with_success == 2
    kept, with_success = select(eps, keep="best")
    assert kept == [eps[3], eps[6]] and with_success == 2
    # a return threshold instead of the success flag
    kept, with_success = select(eps, min_return=0.25)
    assert kept == [eps[1], eps[2], eps[3], eps[5], eps[6]] and with_success == 3
    kept, _ = select(eps, keep="best", min_return=0.25)
    assert kept == [eps[3], eps[5], eps[6]]


def test_only_kept_episodes_become_samples_each_token_with_advantage_one():
    eps = [episode(0, 1.0, True, turns=2, tokens=3), episode(0, 0.0, False, turns=2, tokens=5),
           episode(1, 0.5, True, turns=1, tokens=4), episode(1, 0.5, True, turns=1, tokens=2),
           episode(2, 0.0, False, tokens=7)]
    rft = RFT(RFTConfig())
    kept = rft.after_rollout(ctx(), eps)
    assert kept == [eps[0], eps[2], eps[3]]
    assert rft.metrics() == {"rft/kept_episodes": 3.0, "rft/kept_frac": 0.6, "rft/groups_with_success": 2.0,
                             "rft/groups": 3.0}
    # whatever the group baseline gave them (group 1 ties: 0), every turn trains on A = 1
    grpo = per_turn(kept, group_advantages([ep.ret for ep in kept], [ep.group for ep in kept]))
    adv = rft.transform_advantages(ctx(), grpo, kept)
    assert [a.tolist() for a in adv] == [[1.0, 1.0], [1.0], [1.0]]
    for layout in ("concat", "window"):
        if layout == "concat":  # the whole episode as one sequence, its sampled ids marked
            for ep in kept:
                ep.concat_ids = [1, 2] + [i for t in ep.turns for i in t.completion.token_ids]
                ep.concat_mask = [0, 0] + [1] * (len(ep.concat_ids) - 2)
        samples = episode_samples(kept, adv, layout)
        assert {s.episode for s in samples} == {0, 1, 2}
        assert all(s.advantage == 1.0 and s.token_advantages is None for s in samples)
        # the loss tokens are the kept episodes' sampled ids, nothing of the failed ones
        assert sum(s.num_loss_tokens for s in samples) == 2 * 3 + 4 + 2


def test_a_step_without_success_keeps_nothing_and_says_so():
    rft = RFT(RFTConfig(keep="best"))
    kept = rft.after_rollout(ctx(), [episode(0, 0.4, False), episode(0, 0.9, False), episode(1, 0.0, False)])
    assert kept == []
    assert rft.metrics() == {"rft/kept_episodes": 0.0, "rft/kept_frac": 0.0, "rft/groups_with_success": 0.0,
                             "rft/groups": 2.0}
    assert rft.transform_advantages(ctx(), [], kept) == [] and episode_samples(kept, [], "concat") == []
    # an empty batch (every episode faulted) too
    assert rft.after_rollout(ctx(), []) == [] and rft.metrics()["rft/kept_frac"] == 0.0


def test_with_ratio_one_and_advantage_one_the_loss_has_the_sft_gradient():
    torch.manual_seed(0)
    logits = torch.randn(3, 6, requires_grad=True)
    mask = torch.tensor([[1, 1, 1, 0, 0, 0], [0, 1, 1, 1, 1, 0], [0, 0, 0, 0, 1, 1]], dtype=torch.float32)
    lp = torch.nn.functional.logsigmoid(logits)  # any differentiable log-probabilities
    loss, stats = policy_loss(lp, lp.detach(), torch.ones(3), mask, LossConfig(beta=0.0, aggregation="token-mean"))
    (grad,) = torch.autograd.grad(loss, logits, retain_graph=True)
    sft = -(lp * mask).sum() / mask.sum()
    (sft_grad,) = torch.autograd.grad(sft, logits)
    assert torch.allclose(grad, sft_grad, atol=1e-7) and grad.abs().sum() > 0
    assert loss.item() == pytest.approx(-1.0) and stats["tokens"] == mask.sum().item()


def test_config_checks_name_the_flag_and_a_checkpoint_rebuilds_rft():
    with pytest.raises(ConfigError, match="--rft.keep must be one of all, best"):
        RFTConfig(keep="some").validate()
    with pytest.raises(ConfigError, match="--rft.min-return must be a finite number"):
        RFTConfig(min_return=float("inf")).validate()
    RFTConfig(keep="best", min_return=0.5).validate()
    assert RFTConfig.min_group_size == 1
    assert BY_NAME["rft"] == (RFT, RFTConfig)
    rebuilt = recorded_extensions({"rft": {"keep": "best", "min_return": 0.5}}, {"rft": {}})
    assert [e.name for e in rebuilt.items] == ["rft"]
    assert (rebuilt.items[0].cfg.keep, rebuilt.items[0].cfg.min_return) == ("best", 0.5)
