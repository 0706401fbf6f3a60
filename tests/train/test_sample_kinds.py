"""Extra sample kinds: each kind's loss has its own settings and weight, in one backward pass."""

import copy

import torch

from agentgym.train.config.optim import LossConfig
from agentgym.train.optim.update import train_step
from agentgym.train.rollout.samples import Sample


def step_metrics(model, samples, **kw):
    """One update on a copy of the model; a huge clip bound reports the gradient norm unclipped."""
    model = copy.deepcopy(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.0)
    return train_step(model, opt, samples, LossConfig(beta=0.0), 0, micro_batch_size=2, max_grad_norm=1e9, **kw)


def test_a_kind_gets_its_own_weight_and_loss_settings(tiny):
    model, _ = tiny
    policy = [Sample([5, 6, 7, 8], [0, 1, 1, 1], 1.0), Sample([5, 9, 10], [0, 1, 1], -1.0)]
    judge = [Sample([11, 12, 13, 14, 15], [0, 0, 1, 1, 1], 0.5, kind="judge"),
             Sample([11, 12, 16], [0, 0, 1], -0.5, kind="judge")]
    torch.manual_seed(0)
    base = step_metrics(model, policy)
    token = step_metrics(model, policy + judge, loss_weights={"judge": 2.0})
    seq = step_metrics(model, policy + judge, loss_weights={"judge": 2.0},
                loss_configs={"judge": LossConfig(beta=0.0, aggregation="seq-mean")})
    assert token["loss/policy"] == base["loss/policy"] == seq["loss/policy"]
    # token-mean over the judge's 4 loss tokens vs seq-mean over its 2 sequences: different values
    assert token["loss/judge"] != seq["loss/judge"]
    assert abs(token["loss/judge"] - (-(3 * 0.5 - 1 * 0.5) / 4)) < 1e-6   # ratio 1 at the first update
    assert abs(seq["loss/judge"] - (-(0.5 - 0.5) / 2)) < 1e-6
    # one backward pass: the judge term moves the gradient by its weight, and weight 0 removes it
    off = step_metrics(model, policy + judge, loss_weights={"judge": 0.0})
    assert abs(off["grad_norm"] - base["grad_norm"]) < 1e-6 and abs(token["grad_norm"] - base["grad_norm"]) > 1e-4
