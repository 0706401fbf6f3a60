"""The update computes logprobs at the loss positions only and micro-batches samples by length: the
same step as every position through the output layer in sample order, and finite where the old or
reference logprobs were not computed."""

import copy
import random

import pytest
import torch
from transformers import AutoModelForCausalLM

import agentgym.train.optim.update as update
from agentgym.train.config.optim import LossConfig
from agentgym.train.optim.update import _micro_batches, logprobs_and_hidden, sample_logprobs, token_logprobs, train_step
from agentgym.train.rollout.samples import Sample


def _window_samples(vocab: int, n: int = 12, seed: int = 0) -> list[Sample]:
    """Windowed-style samples: prompts of very different lengths, then a reply of 2-3 tokens."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        prompt, reply = rng.randint(5, 40), rng.randint(2, 3)
        ids = [rng.randrange(3, vocab) for _ in range(prompt + reply)]
        out.append(Sample(ids, [0] * prompt + [1] * reply, rng.choice([-1.0, -0.5, 0.5, 1.0]), episode=i))
    return out


def _step(model, samples, cfg=None, **kw):
    """One SGD step on a copy of ``model``: its metrics and the updated weights."""
    model = copy.deepcopy(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    metrics = train_step(model, opt, samples, cfg or LossConfig(beta=0.0), 0, micro_batch_size=3, **kw)
    return metrics, [p.detach().clone() for p in model.parameters()]


def test_logprobs_at_kept_positions_equal_the_full_forward_and_the_rest_are_zero(tiny_path):
    model = AutoModelForCausalLM.from_pretrained(tiny_path).train()
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(1, model.config.vocab_size, (3, 14), generator=g)
    attention = torch.ones_like(ids)
    attention[1, 10:] = 0
    keep = torch.zeros(3, 13, dtype=torch.bool)
    keep[0, 5:9], keep[1, 7:9], keep[2, 12] = True, True, True
    full = token_logprobs(model, ids, attention, temperature=0.7)
    sparse, hidden = logprobs_and_hidden(model, ids, attention, temperature=0.7, keep=keep)
    assert hidden is None
    assert torch.allclose(sparse[keep], full[keep], atol=1e-5)
    assert torch.all(sparse[~keep] == 0)
    sparse[keep].sum().backward()
    mine = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    full = token_logprobs(model, ids, attention, temperature=0.7)
    full[keep].sum().backward()
    assert all(torch.allclose(a, p.grad, atol=1e-5) for a, p in zip(mine, model.parameters()))


def test_micro_batches_keep_kinds_apart_hold_every_sample_once_and_group_by_length():
    samples = [Sample([1] * n, [0] * (n - 1) + [1], 1.0, kind=k)
               for n, k in [(9, "policy"), (3, "judge"), (30, "policy"), (4, "policy"), (12, "judge"), (20, "policy")]]
    batches = _micro_batches(samples, 2)
    assert sorted(i for b in batches for i in b) == list(range(len(samples)))
    assert all(len({samples[i].kind for i in b}) == 1 for b in batches)
    assert [b for b in batches if samples[b[0]].kind == "policy"] == [[3, 0], [5, 2]]
    assert [samples[b[0]].kind for b in batches] == ["policy", "policy", "judge"]  # kinds in order of first appearance


def test_the_update_is_the_full_forward_one_whatever_the_sample_order(tiny, monkeypatch):
    model, _ = tiny
    samples = _window_samples(model.config.vocab_size)
    torch.manual_seed(0)
    metrics, weights = _step(model, samples)
    shuffled = samples[:]
    random.Random(1).shuffle(shuffled)
    metrics_shuffled, weights_shuffled = _step(model, shuffled)
    # the reference: logprobs at every position through the full forward, micro-batches in sample order
    every_position = update.logprobs_and_hidden
    monkeypatch.setattr(update, "logprobs_and_hidden", lambda *a, keep=None, **kw: every_position(*a, **kw))
    monkeypatch.setattr(update, "_micro_batches", lambda s, size: [list(range(len(s)))[j:j + size]
                                                                  for j in range(0, len(s), size)])
    metrics_full, weights_full = _step(model, samples)
    for other, w in ((metrics_shuffled, weights_shuffled), (metrics_full, weights_full)):
        assert other["loss/policy"] == pytest.approx(metrics["loss/policy"], abs=1e-6)
        assert other["grad_norm"] == pytest.approx(metrics["grad_norm"], rel=1e-5)
        assert all(torch.allclose(a, b, atol=1e-6) for a, b in zip(weights, w))


def test_old_and_reference_logprobs_outside_the_loss_mask_cannot_poison_the_loss(tiny):
    model, _ = tiny
    samples = _window_samples(model.config.vocab_size, n=6)
    old = sample_logprobs(model, samples, 0, micro_batch_size=3)
    for s, row in zip(samples, old):
        loss_positions = torch.tensor(s.loss_mask[1:], dtype=torch.bool)
        assert torch.all(row[loss_positions] < 0)
        row[~loss_positions] = -1e4  # whatever sits where the loss does not look: exp(-lp) overflows
    cfg = LossConfig(beta=0.04)
    metrics, weights = _step(model, samples, cfg, old_logprobs=old, ref_logprobs=old)
    assert all(torch.isfinite(torch.tensor(v)) for v in metrics.values())
    assert all(torch.isfinite(w).all() for w in weights)
    assert metrics["ratio/mean"] == pytest.approx(1.0, abs=1e-5)  # old = current weights at the loss positions
    assert metrics["kl"] == pytest.approx(0.0, abs=1e-5)


def test_episode_mean_update_is_the_mean_over_episodes_of_each_episodes_token_mean(tiny_path):
    """Window samples of one episode share its weight across micro-batches: the step equals the loss
    written out by hand, an average over episodes of each episode's token-mean."""
    model = AutoModelForCausalLM.from_pretrained(tiny_path)
    samples = _window_samples(model.config.vocab_size, n=12)
    for i, s in enumerate(samples):
        s.episode = i % 3                        # 3 episodes of 4 turns, spread over micro-batches
    samples[0].episode = samples[3].episode = 5  # and one of 2 turns
    cfg = LossConfig(beta=0.0, aggregation="episode-mean")
    metrics, after = _step(model, samples, cfg)

    by_hand = copy.deepcopy(model)
    opt = torch.optim.SGD(by_hand.parameters(), lr=0.1)
    episodes: dict[int, list[Sample]] = {}
    for s in samples:
        episodes.setdefault(s.episode, []).append(s)
    total = 0.0
    for group in episodes.values():
        terms, tokens = 0.0, 0
        for s in group:
            ids = torch.tensor([s.input_ids])
            lp = token_logprobs(by_hand, ids, torch.ones_like(ids), 1.0)[0]
            m = torch.tensor(s.loss_mask[1:], dtype=torch.float32)
            # on-policy PPO: -ratio * A with ratio = exp(lp - lp.detach())
            terms = terms + (-torch.exp(lp - lp.detach()) * s.advantage * m).sum()
            tokens += int(m.sum())
        total = total + terms / tokens
    loss = total / len(episodes)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(by_hand.parameters(), 1.0)
    opt.step()
    assert metrics["loss/policy"] == pytest.approx(float(loss), rel=1e-4, abs=1e-6)
    for a, b in zip(after, by_hand.parameters()):
        assert torch.allclose(a, b.detach(), atol=1e-6)
