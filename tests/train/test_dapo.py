import pytest

from agentgym.train.config.optim import LossConfig
from agentgym.train.methods.dapo import DAPO_EPS_HIGH, DAPO_EPS_LOW, dynamic_sampling_mask, has_reward_spread


def test_spread_is_max_minus_min_against_the_tolerance():
    assert has_reward_spread([0.0, 1.0, 0.0])
    assert not has_reward_spread([0.4, 0.4, 0.4])
    assert not has_reward_spread([0.4, 0.4 + 1e-7])          # below the default 1e-6
    assert has_reward_spread([0.4, 0.4 + 1e-5])
    assert not has_reward_spread([0.2, 0.25, 0.3], tol=0.1)    # spread 0.1 is not more than 0.1
    assert has_reward_spread([0.2, 0.25, 0.3], tol=0.09)
    assert has_reward_spread([0.3, 0.3 + 1e-12], tol=0.0)


def test_empty_and_single_groups_have_no_spread():
    assert not has_reward_spread([])
    assert not has_reward_spread([1.0])


def test_negative_tolerance_raises():
    with pytest.raises(ValueError, match="tol must be >= 0"):
        has_reward_spread([0.0, 1.0], tol=-1.0)


def test_mask_keeps_groups_with_spread():
    groups = [[1.0, 1.0, 1.0], [0.0, 1.0, 1.0], [0.0, 0.0], [0.5, 0.5 + 1e-9], [-1.0, 2.0]]
    assert dynamic_sampling_mask(groups) == [False, True, False, False, True]
    assert dynamic_sampling_mask([]) == []


def test_dapo_clip_settings_are_a_valid_loss_config():
    cfg = LossConfig(eps_low=DAPO_EPS_LOW, eps_high=DAPO_EPS_HIGH)
    assert (cfg.eps_low, cfg.eps_high) == (0.2, 0.28)
