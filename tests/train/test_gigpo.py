import math

import numpy as np
import pytest

from agentgym.train.methods.gigpo import combine_advantages, discounted_returns, step_group_advantages

# Task "A": three episodes that start in the same room and meet again later; task "B": one episode
# whose first observation has the same text as A's but must not join A's step group.
GROUP_IDS = ["A", "A", "A", "B"]
ANCHORS = [
    ["start", "hall", "kitchen"],
    ["start", "hall", "hall"],      # stuck: the hall twice
    ["start", "kitchen"],
    ["start"],
]
REWARDS = [[0.0, 0.0, 1.0], [0.0, 0.0, 0.0], [0.0, 1.0], [1.0]]
# gamma 0.5 returns: ep0 [0.25, 0.5, 1], ep1 [0, 0, 0], ep2 [0.5, 1], ep3 [1]


def test_discounted_returns_by_hand():
    assert discounted_returns([0.0, 0.0, 1.0], 0.5).tolist() == [0.25, 0.5, 1.0]
    assert discounted_returns([1.0, 2.0, 3.0], 1.0).tolist() == [6.0, 5.0, 3.0]
    assert discounted_returns([1.0, 2.0], 0.0).tolist() == [1.0, 2.0]
    assert discounted_returns([], 0.9).tolist() == []
    with pytest.raises(ValueError, match="gamma"):
        discounted_returns([1.0], 1.5)


def test_step_groups_by_hand():
    adv, stats = step_group_advantages(GROUP_IDS, ANCHORS, REWARDS, gamma=0.5, eps=0.0)
    # (A, start): returns 0.25, 0, 0.5 -> mean 0.25, std sqrt((0 + 0.0625 + 0.0625) / 2) = 0.25
    # (A, hall): returns 0.5, 0, 0 -> mean 1/6, var (1/9 + 1/36 + 1/36) / 2 = 1/12
    # (A, kitchen): returns 1, 1 -> tie -> 0;  (B, start): alone -> 0
    s_hall = math.sqrt(1 / 12)
    assert adv[0] == pytest.approx([0.0, (1 / 3) / s_hall, 0.0])
    assert adv[1] == pytest.approx([-1.0, (-1 / 6) / s_hall, (-1 / 6) / s_hall])
    assert adv[2] == pytest.approx([1.0, 0.0])
    assert adv[3].tolist() == [0.0]
    assert [len(a) for a in adv] == [3, 3, 2, 1]
    assert stats["step_groups"] == 3
    assert stats["step_group_size"] == pytest.approx((3 + 3 + 2) / 3)
    assert stats["singleton_frac"] == pytest.approx(1 / 9)


def test_same_text_in_another_task_is_not_grouped():
    # if B's "start" joined A's, that group would be 0.25, 0, 0.5, 1 and ep0's first step would
    # fall below the mean; B alone must also stay at 0
    adv, _ = step_group_advantages(GROUP_IDS, ANCHORS, REWARDS, gamma=0.5, eps=0.0)
    assert adv[0][0] == 0.0 and adv[3][0] == 0.0
    merged, stats = step_group_advantages(["A"] * 4, ANCHORS, REWARDS, gamma=0.5, eps=0.0)
    assert merged[0][0] < 0 and merged[3][0] > 0 and stats["singleton_frac"] == 0.0


def test_mean_centring_only():
    adv, _ = step_group_advantages(GROUP_IDS, ANCHORS, REWARDS, gamma=0.5, normalize_std=False)
    assert adv[0] == pytest.approx([0.0, 1 / 3, 0.0])
    assert adv[1] == pytest.approx([-0.25, -1 / 6, -1 / 6])
    assert adv[2] == pytest.approx([0.25, 0.0])
    assert adv[3].tolist() == [0.0]


def test_default_eps_is_close_to_exact():
    exact, _ = step_group_advantages(GROUP_IDS, ANCHORS, REWARDS, gamma=0.5, eps=0.0)
    soft, _ = step_group_advantages(GROUP_IDS, ANCHORS, REWARDS, gamma=0.5)
    for e, s in zip(exact, soft):
        assert s == pytest.approx(e, rel=1e-4)


def test_no_shared_states_gives_zero_and_empty_stats():
    adv, stats = step_group_advantages([0, 0], [["a", "b"], ["c"]], [[1.0, 0.0], [0.0]])
    assert [a.tolist() for a in adv] == [[0.0, 0.0], [0.0]]
    assert stats == {"step_groups": 0.0, "step_group_size": 0.0, "singleton_frac": 1.0}
    adv, stats = step_group_advantages([], [], [])
    assert adv == [] and stats["singleton_frac"] == 0.0


def test_mismatched_inputs_raise():
    with pytest.raises(ValueError, match="one anchor list and one reward list per episode"):
        step_group_advantages([0, 0], [["a"]], [[1.0], [0.0]])
    with pytest.raises(ValueError, match="episode 1: 2 anchors for 1 step rewards"):
        step_group_advantages([0, 0], [["a"], ["a", "b"]], [[1.0], [0.0]])


def test_combine_advantages_by_hand():
    steps = [np.array([0.0, 2.0, 0.0]), np.array([-1.0, -0.5])]
    out = combine_advantages([0.5, -1.0], steps, omega=0.5)
    assert out[0].tolist() == [0.5, 1.5, 0.5]
    assert out[1].tolist() == [-1.5, -1.25]
    assert combine_advantages(np.array([0.5, -1.0]), steps, omega=0.0)[1].tolist() == [-1.0, -1.0]
    # per-step episode advantages are added element-wise
    per_step = combine_advantages([np.array([1.0, 2.0])], [np.array([1.0, 1.0])])
    assert per_step[0].tolist() == [2.0, 3.0]
    with pytest.raises(ValueError, match="one episode advantage per episode"):
        combine_advantages([0.5], steps)
