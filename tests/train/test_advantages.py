import math

import numpy as np
import pytest

from agentgym.train.methods.grpo import group_advantages


def test_grpo_advantages_match_hand_computation():
    # group 0: rewards 1, 0, 0 -> mean 1/3, unbiased std sqrt(1/3)
    adv = group_advantages([1.0, 0.0, 0.0, 0.2, 0.6], [0, 0, 0, 1, 1], eps=0.0)
    s0 = math.sqrt(((2 / 3) ** 2 + 2 * (1 / 3) ** 2) / 2)
    assert adv[:3] == pytest.approx([(2 / 3) / s0, -(1 / 3) / s0, -(1 / 3) / s0])
    s1 = math.sqrt((0.2 ** 2 + 0.2 ** 2) / 1)
    assert adv[3:] == pytest.approx([-0.2 / s1, 0.2 / s1])


def test_dr_grpo_no_std_only_centres():
    adv = group_advantages([1.0, 0.0, 0.5, 0.25], [7, 7, 7, 7], normalize_std=False)
    assert adv.tolist() == pytest.approx([0.5625, -0.4375, 0.0625, -0.1875])


def test_tied_group_gets_zero_advantage_not_nan():
    adv = group_advantages([0.3, 0.3, 0.3], ["a", "a", "a"])
    assert np.all(adv == 0.0)


def test_groups_need_not_be_contiguous():
    a = group_advantages([1.0, 5.0, 0.0, 5.0], ["x", "y", "x", "y"], eps=0.0)
    assert a[1] == a[3] == 0.0 and a[0] == -a[2] > 0


def test_mismatched_lengths_raise():
    with pytest.raises(ValueError):
        group_advantages([1.0, 2.0], [0])
