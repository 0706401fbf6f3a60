import math

import pytest
import torch

from agentgym.train.config.optim import LossConfig
from agentgym.train.optim.loss import k3_kl, policy_loss


def test_on_policy_loss_is_minus_mean_advantage_and_gradient_is_advantage_weighted():
    lp = torch.tensor([[-1.0, -2.0, -0.5]], requires_grad=True)
    mask = torch.tensor([[1.0, 1.0, 0.0]])
    loss, stats = policy_loss(lp, lp.detach(), torch.tensor([2.0]), mask, LossConfig(beta=0.0))
    assert loss.item() == pytest.approx(-2.0)
    loss.backward()
    # d(-ratio*A)/d(logp) = -A * ratio = -2 on the two loss tokens, averaged over 2 tokens
    assert lp.grad[0].tolist() == pytest.approx([-1.0, -1.0, 0.0])
    assert stats["tokens"] == 2


def test_clipping_by_hand():
    old = torch.zeros(1, 4)
    # ratios e^0.5=1.65, e^-0.5=0.61, e^0.1=1.105, e^-0.1=0.905
    lp = torch.tensor([[0.5, -0.5, 0.1, -0.1]])
    cfg = LossConfig(eps_low=0.2, eps_high=0.3, beta=0.0)
    mask = torch.ones(1, 4)
    loss_pos, st = policy_loss(lp, old, torch.tensor([1.0]), mask, cfg)
    # A > 0: min(r, clip(r, 0.8, 1.3)) -> 1.3, 0.6065, 1.105, 0.905
    expect = -(1.3 + math.exp(-0.5) + math.exp(0.1) + math.exp(-0.1)) / 4
    assert float(loss_pos) == pytest.approx(expect, rel=1e-6)
    assert st["clipped_sum"] == 1
    loss_neg, st = policy_loss(lp, old, torch.tensor([-1.0]), mask, cfg)
    # A < 0: -min(-r, -clip(r)) = max(r, clip(r)) -> 1.6487, 0.8, 1.105, 0.905
    expect = (math.exp(0.5) + 0.8 + math.exp(0.1) + math.exp(-0.1)) / 4
    assert float(loss_neg) == pytest.approx(expect, rel=1e-6)
    assert st["clipped_sum"] == 1


def test_k3_kl_by_hand_and_nonnegative():
    lp = torch.tensor([[-1.0, -2.0]])
    ref = torch.tensor([[-1.5, -2.0]])
    d = -0.5
    assert k3_kl(lp, ref)[0, 0].item() == pytest.approx(math.exp(d) - d - 1)
    assert k3_kl(lp, ref)[0, 1].item() == 0.0
    loss, st = policy_loss(lp, lp, torch.tensor([0.0]), torch.ones(1, 2), LossConfig(beta=0.1), ref_logprobs=ref)
    assert float(loss) == pytest.approx(0.1 * (math.exp(d) - d - 1) / 2)
    with pytest.raises(ValueError):
        policy_loss(lp, lp, torch.tensor([0.0]), torch.ones(1, 2), LossConfig(beta=0.1))


def test_token_mean_vs_seq_mean():
    lp = torch.zeros(2, 4)
    mask = torch.tensor([[1.0, 0, 0, 0], [1.0, 1, 1, 1]])
    adv = torch.tensor([1.0, -1.0])
    tok, _ = policy_loss(lp, lp, adv, mask, LossConfig(beta=0.0))
    seq, _ = policy_loss(lp, lp, adv, mask, LossConfig(beta=0.0, aggregation="seq-mean"))
    assert float(tok) == pytest.approx((-1 + 4) / 5)   # long sequence dominates
    assert float(seq) == pytest.approx((-1 + 1) / 2)   # each sequence counts once


def test_episode_mean_weighs_each_episode_once_whatever_its_turns():
    # episode 0: one turn of 1 token, A = +1; episode 1: three turns of 1 token each, A = -1 (window samples)
    lp = torch.zeros(4, 2)
    mask = torch.tensor([[0.0, 1], [0, 1], [0, 1], [0, 1]])
    adv = torch.tensor([1.0, -1.0, -1.0, -1.0])
    cfg = LossConfig(beta=0.0, aggregation="episode-mean")
    tok, _ = policy_loss(lp, lp, adv, mask, LossConfig(beta=0.0))
    ep, _ = policy_loss(lp, lp, adv, mask, cfg, normalizer=2, sample_weights=torch.tensor([1.0, 1 / 3, 1 / 3, 1 / 3]))
    assert float(tok) == pytest.approx((-1 + 3) / 4)   # the three-turn episode weighs three times
    assert float(ep) == pytest.approx(0.0, abs=1e-6)     # each episode counts once: (-1 + 1) / 2
    alone, _ = policy_loss(lp, lp, adv, mask, cfg)      # no weights: each sequence is its own episode
    assert float(alone) == pytest.approx(float(policy_loss(lp, lp, adv, mask, LossConfig(beta=0.0, aggregation="seq-mean"))[0]))


def test_explicit_normalizer_makes_microbatches_add_up():
    torch.manual_seed(0)
    lp = torch.randn(4, 6)
    old = lp + 0.1 * torch.randn(4, 6)
    mask = (torch.rand(4, 6) > 0.3).float()
    adv = torch.randn(4)
    cfg = LossConfig(beta=0.0)
    full, _ = policy_loss(lp, old, adv, mask, cfg)
    n = float(mask.sum())
    parts = sum(float(policy_loss(lp[i:i + 2], old[i:i + 2], adv[i:i + 2], mask[i:i + 2], cfg, normalizer=n)[0])
                for i in (0, 2))
    assert parts == pytest.approx(float(full), rel=1e-6)


def test_bad_config_raises():
    with pytest.raises(ValueError):
        LossConfig(aggregation="sum")
    with pytest.raises(ValueError):
        LossConfig(eps_low=1.5)


def test_cispo_value_and_gradient_by_hand():
    old = torch.full((1, 4), -1.0)
    # log-ratios 0.5, -0.5, 0.1, -0.1; the last token is masked out
    lp = torch.tensor([[-0.5, -1.5, -0.9, -1.1]], requires_grad=True)
    mask = torch.tensor([[1.0, 1.0, 1.0, 0.0]])
    cfg = LossConfig(eps_low=0.2, eps_high=0.3, beta=0.0, loss_type="cispo")
    # weights clip(r, 0.8, 1.3): 1.3, 0.8, e^0.1, (e^-0.1, masked)
    w = [1.3, 0.8, math.exp(0.1)]
    for adv in (2.0, -2.0):
        lp.grad = None
        loss, st = policy_loss(lp, old, torch.tensor([adv]), mask, cfg)
        expect = -(w[0] * adv * -0.5 + w[1] * adv * -1.5 + w[2] * adv * -0.9) / 3
        assert loss.item() == pytest.approx(expect, rel=1e-6)
        loss.backward()
        # the weight is detached: d/dlogp = -clip(r) * A * mask / normalizer, clipped tokens included
        assert lp.grad[0].tolist() == pytest.approx([-w[0] * adv / 3, -w[1] * adv / 3, -w[2] * adv / 3, 0.0])
        # both out-of-range weights count as clipped whatever the sign of A
        assert st["clipped_sum"] == 2


def test_cispo_per_token_advantages_seq_mean_and_normalizer():
    old = torch.zeros(2, 2)
    lp = torch.tensor([[-0.1, 0.0], [0.0, -0.4]], requires_grad=True)
    adv = torch.tensor([[1.0, 3.0], [-1.0, 0.5]])
    mask = torch.tensor([[1.0, 0.0], [1.0, 1.0]])
    cfg = LossConfig(eps_low=0.2, eps_high=0.2, beta=0.0, aggregation="seq-mean", loss_type="cispo")
    loss, _ = policy_loss(lp, old, adv, mask, cfg, normalizer=4.0)
    # weights: e^-0.1 = 0.905 (in range), 1, 1, e^-0.4 = 0.670 -> 0.8
    w00 = math.exp(-0.1)
    seq0 = -(w00 * 1.0 * -0.1)                          # one loss token
    seq1 = -(1.0 * -1.0 * 0.0 + 0.8 * 0.5 * -0.4) / 2   # two loss tokens
    assert loss.item() == pytest.approx((seq0 + seq1) / 4, rel=1e-6)
    loss.backward()
    assert lp.grad.tolist()[0] == pytest.approx([-w00 * 1.0 / 4, 0.0])
    assert lp.grad.tolist()[1] == pytest.approx([1.0 / 2 / 4, -0.8 * 0.5 / 2 / 4])


def test_cispo_gradient_matches_ppo_on_policy():
    torch.manual_seed(0)
    lp0 = torch.randn(3, 5)
    adv = torch.randn(3)
    mask = (torch.rand(3, 5) > 0.3).float()
    grads = []
    for loss_type in ("ppo", "cispo"):
        lp = lp0.clone().requires_grad_(True)
        loss, _ = policy_loss(lp, lp0, adv, mask, LossConfig(beta=0.0, loss_type=loss_type))
        loss.backward()
        grads.append(lp.grad)
    assert torch.allclose(grads[0], grads[1], atol=1e-6)


def test_unknown_loss_type_raises():
    with pytest.raises(ValueError, match=r"loss_type must be one of \('ppo', 'cispo'\), got 'grpo'"):
        LossConfig(loss_type="grpo")
    assert LossConfig().loss_type == "ppo"
