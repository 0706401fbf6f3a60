import pytest

from agentgym.rewards.prs import EMBODIED_PRS, TOOLQA_PRS, PRSSchedule, PRSSpec, PRSTracker


def test_step_rewards_sum_to_episode_return():
    tracker = PRSTracker(TOOLQA_PRS)
    rewards = [tracker.add({"format": 1, "tool": 0.5}), tracker.add({"format": 1, "tool": 1.0}),
               tracker.add({"format": 1, "answer": 0.8})]
    expected = 0.1 * 1 + 0.2 * 0.75 + 0.7 * 0.8
    assert sum(rewards) == pytest.approx(expected)
    assert tracker.episode_return == pytest.approx(expected)
    assert tracker.episode_terms() == pytest.approx({"format": 1.0, "tool": 0.75, "answer": 0.8})


def test_format_gate_blocks_later_stages():
    tracker = PRSTracker(TOOLQA_PRS)
    tracker.add({"format": 0.0})
    tracker.add({"format": 1.0, "answer": 1.0})
    # format = 0.5 < tau 1.0: only the format term pays
    assert tracker.episode_return == pytest.approx(0.1 * 0.5)
    loose = TOOLQA_PRS.with_weights(tau_fmt=0.5)
    t2 = PRSTracker(loose)
    t2.add({"format": 0.0})
    t2.add({"format": 1.0, "answer": 1.0})
    assert t2.episode_return == pytest.approx(0.05 + 0.7)


def test_aggregate_override_keeps_the_best_progress():
    # ScienceWorld's failure drops progress to 0; with "max" the episode keeps what it reached
    steps = [{"format": 1, "valid": 1, "progress": 0.2}, {"format": 1, "valid": 1, "progress": 0.0}]
    returns = {}
    for how in ("last", "max"):
        tracker = PRSTracker(EMBODIED_PRS.with_aggregate({"progress": how}))
        rewards = [tracker.add(step) for step in steps]
        assert sum(rewards) == pytest.approx(tracker.episode_return)
        returns[how] = tracker.episode_return
    assert returns == pytest.approx({"last": 0.2, "max": 0.2 + 0.3 * 0.2})
    assert EMBODIED_PRS.with_aggregate(None) is EMBODIED_PRS
    assert EMBODIED_PRS.with_aggregate({"progress": "max"}).aggregate["success"] == "max"
    for bad, says in (({"progres": "max"}, "unknown PRS terms"), ({"progress": "min"}, "one of"),
                      (["max"], "a mapping")):
        with pytest.raises(ValueError, match=says):
            EMBODIED_PRS.with_aggregate(bad)


def test_bad_turn_lowers_that_steps_reward():
    tracker = PRSTracker(TOOLQA_PRS)
    first = tracker.add({"format": 1.0, "tool": 1.0})
    second = tracker.add({"format": 0.0})
    assert first > 0 and second < 0


def test_stages_renormalize_and_interpolate():
    assert TOOLQA_PRS.stage_weights(0) == {"format": 1.0, "tool": 0.0, "answer": 0.0}
    assert TOOLQA_PRS.stage_weights(1) == pytest.approx({"format": 1 / 3, "tool": 2 / 3, "answer": 0.0})
    assert TOOLQA_PRS.stage_weights(None) == pytest.approx({"format": 0.1, "tool": 0.2, "answer": 0.7})
    half = TOOLQA_PRS.stage_weights(1.5)
    assert half["answer"] == pytest.approx(0.35) and sum(half.values()) == pytest.approx(1.0)
    assert EMBODIED_PRS.stage_weights(1) == pytest.approx({"format": 0.5, "valid": 0.5, "progress": 0, "success": 0})


def test_stage_zero_pays_only_format():
    tracker = PRSTracker(TOOLQA_PRS, stage=0)
    tracker.add({"format": 1.0, "tool": 0.0})
    tracker.add({"format": 1.0, "answer": 0.0})
    assert tracker.episode_return == pytest.approx(1.0)


def test_weights_and_specs_validate():
    with pytest.raises(ValueError, match="unknown PRS terms"):
        TOOLQA_PRS.with_weights({"bogus": 1.0})
    with pytest.raises(ValueError, match="expected 3"):
        TOOLQA_PRS.with_weights([1.0, 2.0])
    assert TOOLQA_PRS.with_weights([0.2, 0.3, 0.5]).weights["tool"] == 0.3
    with pytest.raises(ValueError):
        PRSSpec(stages=(("tool",),), weights={"tool": 1.0}, aggregate={"tool": "mean"})
    with pytest.raises(KeyError):
        PRSTracker(TOOLQA_PRS).add({"valid": 1.0})


def test_schedules():
    linear = PRSSchedule(TOOLQA_PRS, kind="linear", num_steps=10)
    assert [linear.stage_at(s) for s in (0, 5, 10, 20)] == [0.0, 1.0, 2.0, 2.0]
    threshold = PRSSchedule(TOOLQA_PRS, kind="threshold", threshold=0.8)
    assert threshold.update(0.5) == 0.0
    assert threshold.update(0.9) == 1.0
    assert threshold.update(0.95) == 2.0 and threshold.update(1.0) == 2.0
    restored = PRSSchedule(TOOLQA_PRS, kind="threshold")
    restored.load_state_dict(threshold.state_dict())
    assert restored.stage_at(0) == 2.0
    with pytest.raises(ValueError):
        PRSSchedule(TOOLQA_PRS, kind="cosine")


def test_threshold_schedule_advances_on_the_current_stages_gate_not_the_format_gate():
    from agentgym.rewards.prs import TOOLQA_PRS, PRSSchedule, stage_pass_rate

    schedule = PRSSchedule(TOOLQA_PRS, kind="threshold", threshold=0.8)
    batch = [{"format": 1.0, "tool": 0.5, "answer": 0.0}] * 10   # everyone parses; no search found the answer
    stages = []
    for _ in range(5):
        stage = schedule.stage_at(0)
        stages.append(schedule.update(stage_pass_rate(batch, TOOLQA_PRS, stage)))
    # the format gate passes once (stage 0 -> 1); the tool gate never does, so the stage stays 1
    assert stages == [1.0, 1.0, 1.0, 1.0, 1.0]
    batch = [{"format": 1.0, "tool": 1.0, "answer": 0.0}] * 10
    assert schedule.update(stage_pass_rate(batch, TOOLQA_PRS, schedule.stage_at(0))) == 2.0
