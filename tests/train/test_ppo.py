"""PPO's math (GAE over turns, whitening, the value loss) on hand-computed numbers, its settings,
and where its value head reads each turn's value."""

import numpy as np
import pytest
import torch

from agentgym.agents.base import Completion
from agentgym.train.base.errors import ConfigError
from agentgym.train.methods.ppo import PPOConfig, explained_variance, gae, value_loss, value_positions, whiten
from agentgym.train.rollout.episodes import Episode, Turn
from agentgym.train.rollout.samples import episode_samples


def test_gae_over_three_turns_matches_the_hand_computed_numbers():
    # delta_2 = 0.6 - 0.5 = 0.1; delta_1 = 0 + 0.9 * 0.5 - 0.4 = 0.05; delta_0 = 0.1 + 0.9 * 0.4 - 0.2 = 0.26
    # A_2 = 0.1; A_1 = 0.05 + 0.72 * 0.1 = 0.122; A_0 = 0.26 + 0.72 * 0.122 = 0.34784; R = A + V
    adv, ret = gae([0.1, 0.0, 0.6], [0.2, 0.4, 0.5], gamma=0.9, lam=0.8)
    assert np.allclose(adv, [0.34784, 0.122, 0.1], atol=1e-12)
    assert np.allclose(ret, [0.54784, 0.522, 0.6], atol=1e-12)
    # zero values and lam = gamma = 1: the return to go
    assert np.allclose(gae([0.1, 0.0, 0.6], [0.0] * 3, 1.0, 1.0)[0], [0.7, 0.6, 0.6])
    assert gae([], [])[0].shape == (0,)
    with pytest.raises(ValueError, match="one value per reward"):
        gae([0.0, 1.0], [0.5])


def test_whitening_uses_the_batch_totals_and_explained_variance_reads_the_fit():
    a = [np.array([0.5, -0.5]), np.array([1.5])]
    out = whiten(a, 3, 1.5, 0.25 + 0.25 + 2.25)
    both = np.concatenate(out)
    assert abs(both.mean()) < 1e-9 and abs(both.std() - 1) < 1e-6
    assert whiten(a, 0, 0.0, 0.0)[0].tolist() == [0.5, -0.5]  # nothing to whiten over: as they were
    assert np.isnan(explained_variance(np.zeros(2), np.ones(2)))
    assert explained_variance(np.array([0.0, 0.5]), np.array([0.0, 1.0])) == pytest.approx(0.75)


def test_the_clipped_value_loss_keeps_the_larger_of_both_losses():
    v = torch.tensor([1.0, 0.55], requires_grad=True)
    old, ret = torch.tensor([0.5, 0.5]), torch.tensor([0.6, 0.6])
    loss = value_loss(v, old, ret, clip=0.2)
    # item 0 moved 0.5 from its old value: clipped to 0.7, which is nearer R, so the unclipped loss
    # (0.5 * 0.4^2) counts; item 1 moved within the clip: both losses equal
    assert loss.tolist() == pytest.approx([0.08, 0.00125])
    loss.sum().backward()
    assert v.grad.tolist() == pytest.approx([0.4, -0.05])


@pytest.mark.parametrize("flags,message", [
    ({"gae_gamma": 1.5}, "--ppo.gae-gamma must be in"), ({"gae_lambda": -0.1}, "--ppo.gae-lambda must be in"),
    ({"value_coef": -1.0}, "--ppo.value-coef"), ({"value_clip": 0.0}, "--ppo.value-clip"),
    ({"value_lr_scale": 0.0}, "--ppo.value-lr-scale")])
def test_bad_ppo_settings_are_one_line_naming_the_flag(flags, message):
    with pytest.raises(ConfigError, match=message):
        PPOConfig(**flags).validate()


def test_a_recorded_config_rebuilds_its_settings():
    from agentgym.train.base.flags import from_recorded

    cfg = from_recorded(PPOConfig, {"gae_gamma": 0.9, "gae_lambda": 0.8, "value_clip": 0.2})
    assert (cfg.gae_gamma, cfg.gae_lambda, cfg.value_clip) == (0.9, 0.8, 0.2)


def _episode(prompts, completions, spans=None):
    ep = Episode(group=0, task_id="t", group_key="t", system_prompt="")
    ep.turns = [Turn(p, Completion("x", c)) for p, c in zip(prompts, completions)]
    ep.rewards = [0.0] * len(prompts)
    if spans is not None:
        ep.concat_ids = [9] * spans[-1][1]
        ep.concat_mask = [0] * spans[-1][1]
        ep.turn_spans = spans
    return ep


def test_a_turns_value_is_read_at_the_last_token_of_its_prompt_in_both_layouts():
    window = _episode([[1, 2, 3], [1, 2, 3, 4, 5, 6]], [[7, 8], [7]])
    samples = episode_samples([window], [np.zeros(2)], "window")
    assert [s.turn for s in samples] == [0, 1]
    assert [value_positions(s, [window]) for s in samples] == [[(0, 2)], [(1, 5)]]
    # concat: turn 0 samples ids 3..5 after a prompt of 3, turn 1 ids 8..9 after the env's turn
    concat = _episode([[1, 2, 3], []], [[7, 8], [7]], spans=[(3, 5), (8, 9)])
    (sample,) = episode_samples([concat], [np.zeros(2)], "concat")
    assert sample.turn == -1 and value_positions(sample, [concat]) == [(0, 2), (1, 7)]
    concat.turn_spans = concat.turn_spans[:1]
    with pytest.raises(ValueError, match="turn's span"):
        value_positions(sample, [concat])
