import math
import pickle

import numpy as np
import pytest
from scipy.stats import chisquare

from agentgym.train.methods.vspo import (
                                         TaskRecord,
                                         ValueBuffer,
                                         groups_to_replace,
                                         is_zero_advantage,
                                         reuse_scale,
                                         smooth_advantages,
                                         task_value,
                                         )


def test_task_value_by_hand():
    # mean 0.5; deviations +-0.5 -> unbiased var = 4 * 0.25 / 3 = 1/3
    assert task_value([1.0, 0.0, 0.0, 1.0]) == pytest.approx(0.5 * math.sqrt(1 / 3))
    assert task_value([1.0, 0.0, 0.0, 1.0]) == pytest.approx(0.288675, abs=1e-6)
    assert task_value([1.0, 0.0, 0.0, 1.0], sigma="var") == pytest.approx(0.5 / 3)
    # mean 0.2, deviations -0.2, 0.3, -0.1 -> var = (0.04 + 0.09 + 0.01) / 2 = 0.07
    assert task_value([0.0, 0.5, 0.1]) == pytest.approx(0.8 * math.sqrt(0.07))
    # r_max other than 1: returns out of 10, mean 4, std of [2, 6] = sqrt(8)
    assert task_value([2.0, 6.0], r_max=10.0) == pytest.approx(6 * math.sqrt(8))


def test_task_value_is_zero_for_ties_and_single_rewards():
    assert task_value([0.7, 0.7, 0.7]) == 0.0
    assert task_value([1.0]) == 0.0
    assert task_value([1.0], sigma="var") == 0.0


def test_task_value_rejects_bad_input():
    with pytest.raises(ValueError, match="sigma"):
        task_value([1.0, 0.0], sigma="mad")
    with pytest.raises(ValueError, match="at least one reward"):
        task_value([])


def test_zero_advantage_detection_uses_the_tolerance():
    assert is_zero_advantage([0.3, 0.3, 0.3])
    assert is_zero_advantage([0.3, 0.3 + 1e-7, 0.3])       # shaped returns that almost tie
    assert not is_zero_advantage([0.3, 0.3 + 1e-5, 0.3])
    assert is_zero_advantage([0.3, 0.3 + 1e-5], tol=1e-4)
    assert is_zero_advantage([0.0, 0.05], tol=0.1)
    assert is_zero_advantage([])


def test_groups_to_replace_default_drops_zero_advantage_groups():
    groups = [[1.0, 1.0, 1.0], [1.0, 0.0, 1.0], [0.2, 0.2 + 1e-7], [0.0, 0.0]]
    assert groups_to_replace(groups) == [0, 2, 3]
    assert groups_to_replace(groups, tol=0.0) == [0, 3]


def test_groups_to_replace_below_value():
    # values: [1,0] -> 0.5 * sqrt(0.5) = 0.35355; [0,0,0,1] -> 0.75 * 0.5 = 0.375;
    # [1,1,1,0] -> 0.25 * 0.5 = 0.125; [0,0] -> 0
    groups = [[1.0, 0.0], [0.0, 0.0, 0.0, 1.0], [1.0, 1.0, 1.0, 0.0], [0.0, 0.0]]
    assert groups_to_replace(groups, replace_below_value=0.36) == [0, 2, 3]
    assert groups_to_replace(groups, replace_below_value=0.2) == [2, 3]
    assert groups_to_replace(groups, replace_below_value=0.0) == []
    # with var: 0.5 * 0.5 = 0.25, 0.75 * 0.25 = 0.1875, 0.25 * 0.25 = 0.0625, 0
    assert groups_to_replace(groups, replace_below_value=0.2, sigma="var") == [1, 2, 3]


def test_reuse_scale_decays_geometrically():
    assert reuse_scale(0) == 1.0
    assert reuse_scale(1) == pytest.approx(0.7)
    assert reuse_scale(3) == pytest.approx(0.343)
    assert reuse_scale(2, eta=0.5) == 0.25
    with pytest.raises(ValueError, match="reuse_count"):
        reuse_scale(-1)
    with pytest.raises(ValueError, match="eta"):
        reuse_scale(1, eta=1.5)


def test_smooth_advantages_scales_then_clips():
    adv = [2.0, -5.0, 4.0, 4.0]
    out = smooth_advantages(adv, [0, 0, 1, 3])
    # 2; -5 clipped to -3; 4 * 0.7 = 2.8; 4 * 0.343 = 1.372
    assert out.tolist() == pytest.approx([2.0, -3.0, 2.8, 1.372])
    # the scale comes before the clip: 5 * 0.49 = 2.45 is not clipped
    assert smooth_advantages([5.0], [2]).tolist() == pytest.approx([2.45])


def test_smooth_advantages_switches():
    adv = [2.0, -5.0, 4.0]
    assert smooth_advantages(adv, [0, 0, 1], eta=None).tolist() == [2.0, -3.0, 3.0]
    assert smooth_advantages(adv, [0, 0, 1], a_max=None).tolist() == pytest.approx([2.0, -5.0, 2.8])
    assert smooth_advantages(adv, [0, 0, 1], eta=None, a_max=None).tolist() == adv
    with pytest.raises(ValueError, match="a_max"):
        smooth_advantages(adv, [0, 0, 1], a_max=0.0)


def test_smooth_advantages_token_rows_and_ragged_steps():
    rows = np.array([[1.0, -4.0], [2.0, 2.0]])
    out = smooth_advantages(rows, [0, 1])
    assert out.shape == (2, 2)
    assert out == pytest.approx(np.array([[1.0, -3.0], [1.4, 1.4]]))
    steps = [np.array([1.0, 2.0, 10.0]), np.array([-1.0])]
    out = smooth_advantages(steps, [1, 0], eta=0.5)
    assert isinstance(out, list)
    assert out[0].tolist() == [0.5, 1.0, 3.0]
    assert out[1].tolist() == [-1.0]


def test_smooth_advantages_length_mismatch_raises():
    with pytest.raises(ValueError, match="one reuse count per episode"):
        smooth_advantages([1.0, 2.0], [0])
    with pytest.raises(ValueError, match="one reuse count per episode"):
        smooth_advantages([np.array([1.0])], [0, 1])


def test_buffer_ema_over_two_visits():
    buf = ValueBuffer(alpha=0.25)
    rec = buf.update("t", [1.0, 0.0, 0.0, 1.0], {"seed": 3})
    v1 = 0.5 * math.sqrt(1 / 3)
    assert rec.value == pytest.approx(v1)
    assert (rec.mean, rec.visits, rec.reuses) == (0.5, 1, 0)
    # second visit [1, 1, 1, 0]: mean 0.75, std 0.5 -> value 0.125
    rec = buf.update("t", [1.0, 1.0, 1.0, 0.0], {"seed": 3})
    assert rec.value == pytest.approx(0.75 * v1 + 0.25 * 0.125)
    assert rec.mean == 0.75 and rec.std == pytest.approx(0.5)
    assert rec.visits == 2 and rec.request == {"seed": 3}
    assert len(buf) == 1


def test_buffer_alpha_one_keeps_last_value_and_reuses_survive_updates():
    buf = ValueBuffer(alpha=1.0)
    buf.update("t", [1.0, 0.0], {"task_id": "t"})
    buf.mark_reused("t")
    rec = buf.update("t", [0.0, 0.0], {"task_id": "t"})
    assert rec.value == 0.0 and rec.reuses == 1 and rec.visits == 2
    with pytest.raises(KeyError):
        buf.mark_reused("unknown")


def test_buffer_validates_its_knobs():
    with pytest.raises(ValueError, match="alpha must be in"):
        ValueBuffer(alpha=0.0)
    with pytest.raises(ValueError, match="alpha must be in"):
        ValueBuffer(alpha=1.5)
    with pytest.raises(ValueError, match="capacity must be >= 1"):
        ValueBuffer(capacity=0)
    with pytest.raises(ValueError, match="sigma"):
        ValueBuffer(sigma="iqr")


def _buffer_with_values(values):
    """A buffer whose records have exactly the given values."""
    buf = ValueBuffer()
    for i, v in enumerate(values):
        buf.update(f"t{i}", [0.0], {"seed": i})
        buf.get(f"t{i}").value = v
    return buf


def test_sample_draws_proportional_to_value():
    values = [0.1, 0.2, 0.3, 0.4]
    buf = _buffer_with_values(values)
    rng = np.random.default_rng(1234)
    n = 20_000
    counts = {f"t{i}": 0 for i in range(4)}
    for _ in range(n):
        (rec,) = buf.sample(1, rng)
        counts[rec.key] += 1
    observed = [counts[f"t{i}"] for i in range(4)]
    expected = [n * v / sum(values) for v in values]
    assert chisquare(observed, expected).pvalue > 1e-3
    assert observed == pytest.approx(expected, rel=0.05)


def test_sample_is_without_replacement_skips_zero_value_and_excluded():
    buf = _buffer_with_values([0.5, 0.0, 0.25, 0.25])
    rng = np.random.default_rng(0)
    got = buf.sample(10, rng)
    assert sorted(r.key for r in got) == ["t0", "t2", "t3"]     # fewer than asked, never t1
    got = buf.sample(10, rng, exclude={"t0", "t3"})
    assert [r.key for r in got] == ["t2"]
    assert buf.sample(2, rng, exclude=["t0", "t2", "t3"]) == []
    assert buf.sample(0, rng) == []
    assert ValueBuffer().sample(3, rng) == []
    with pytest.raises(ValueError, match="n must be"):
        buf.sample(-1, rng)


def test_capacity_evicts_the_lowest_value():
    buf = ValueBuffer(capacity=2)
    buf.update("a", [1.0, 0.0], {"seed": 0})           # 0.5 * sqrt(0.5) = 0.354
    buf.update("b", [0.0, 0.0, 0.0, 1.0], {"seed": 1})  # 0.375
    buf.update("c", [1.0, 1.0, 1.0, 0.0], {"seed": 2})  # 0.125: lowest, so the new task goes
    assert sorted(r.key for r in buf.sample(5, np.random.default_rng(0))) == ["a", "b"]
    assert "c" not in buf
    buf.update("d", [0.0, 0.0, 1.0, 1.0], {"seed": 3})  # 0.5 * sqrt(1/3) = 0.289: lowest again
    assert "a" in buf and "b" in buf and "d" not in buf
    buf.update("e", [0.0, 0.0, 0.0, 0.0, 1.0], {"seed": 4})  # 0.8 * sqrt(0.2) = 0.358 evicts a
    assert len(buf) == 2 and "a" not in buf and {"b", "e"} <= {r.key for r in buf.sample(5, np.random.default_rng(0))}


def test_capacity_ties_evict_the_oldest():
    buf = ValueBuffer(capacity=2)
    buf.update("a", [0.0, 0.0], {"seed": 0})
    buf.update("b", [1.0, 1.0], {"seed": 1})
    buf.update("c", [0.5, 0.5], {"seed": 2})
    assert "a" not in buf and "b" in buf and "c" in buf


def test_stats():
    assert ValueBuffer().stats() == {"size": 0.0, "value_mean": 0.0, "value_max": 0.0,
                                     "reuse_mean": 0.0, "reuse_max": 0.0}
    buf = _buffer_with_values([0.2, 0.4])
    buf.mark_reused("t1")
    buf.mark_reused("t1")
    st = buf.stats()
    assert st == pytest.approx({"size": 2.0, "value_mean": 0.3, "value_max": 0.4,
                                "reuse_mean": 1.0, "reuse_max": 2.0})


def test_state_round_trip_is_exact():
    buf = ValueBuffer(alpha=0.3, capacity=5)
    buf.update("x", [1.0, 0.0, 0.0], {"seed": 1})
    buf.update("y", [0.1, 0.9], {"task_id": "y", "meta": {"split": "train"}})
    buf.update("x", [1.0, 1.0, 0.0], {"seed": 1})
    buf.mark_reused("y")
    state = pickle.loads(pickle.dumps(buf.state_dict()))
    other = ValueBuffer(alpha=0.3, capacity=5)
    other.load_state_dict(state)
    assert other.state_dict() == buf.state_dict()
    assert [r.key for r in other.sample(2, np.random.default_rng(7))] == \
        [r.key for r in buf.sample(2, np.random.default_rng(7))]
    # the copy is independent of the original
    state["records"][0]["request"]["seed"] = 99
    assert buf.get("y").request == {"task_id": "y", "meta": {"split": "train"}}
    assert other.get("y").request == {"task_id": "y", "meta": {"split": "train"}}
    assert isinstance(other.get("x"), TaskRecord) and other.get("x").visits == 2
