import random

import numpy as np
import pytest

from agentgym.train.methods.gcd.labels import balance_labels, step_label_reasons, step_labels


def test_repeated_observation_marks_every_step_that_went_nowhere():
    # a -> b -> a -> c: step 0 started at "a" and "a" starts step 2 again
    obs = ["a", "b", "a", "c", "end"]
    assert step_labels(obs, [True] * 4, success=False) == ["bad", None, None, None]


def test_a_loop_of_two_repeats_marks_both_steps_in_it():
    obs = ["a", "b", "a", "b", "c"]
    assert step_labels(obs, [True] * 4, success=False) == ["bad", "bad", None, None]


def test_only_step_starts_count_not_the_final_observation():
    assert step_labels(["a", "b", "a"], [True, True], success=False) == [None, None]


def test_invalid_action_is_bad_and_reported_as_invalid():
    reasons = step_label_reasons(["a", "b", "c"], [True, False], success=False)
    assert reasons == [(None, None), ("bad", "invalid")]


def test_final_step_of_success_is_good_and_of_failure_unlabelled():
    obs = ["a", "b", "c", "done"]
    assert step_labels(obs, [True] * 3, success=True) == [None, None, "good"]
    assert step_labels(obs, [True] * 3, success=False) == [None, None, None]


def test_bad_wins_over_good_on_an_invalid_final_step():
    assert step_label_reasons(["a", "b"], [False], success=True) == [("bad", "invalid")]


def test_invalid_wins_over_revisit_as_the_reason():
    assert step_label_reasons(["a", "a", "b"], [False, True], success=False) == [("bad", "invalid"), (None, None)]


def test_state_keys_replace_the_observation_text():
    # the text repeats ("Nothing happens.") but the state does not, and the other way round
    obs = ["Nothing happens.", "x", "Nothing happens.", "y"]
    assert step_labels(obs, [True] * 3, success=False, state_keys=[1, 2, 3]) == [None, None, None]
    assert step_labels(["p", "q", "r"], [True] * 3, success=True, state_keys=[(0, 0), (0, 1), (0, 0)]) == \
        ["bad", None, "good"]


def test_observations_without_the_final_one_are_accepted():
    assert step_labels(["a", "b", "a"], [True] * 3, success=True) == ["bad", None, "good"]


def test_empty_episode_and_length_mismatches():
    assert step_labels([], [], success=True) == []
    assert step_labels(["only reset"], [], success=False) == []
    with pytest.raises(ValueError, match="observations"):
        step_labels(["a"], [True, True, True], success=False)
    with pytest.raises(ValueError, match="state keys"):
        step_labels(["a", "b"], [True], success=False, state_keys=[1, 2, 3])


def test_balance_downsamples_the_larger_class_keeping_input_order():
    items = [("bad", i) for i in range(6)] + [("good", "g1"), (None, "u"), ("good", "g2")]
    kept, stats = balance_labels(items, random.Random(1))
    assert stats == {"good_before": 2, "bad_before": 6, "unlabelled": 1, "good": 2, "bad": 2,
                     "method": "downsample"}
    assert [label for label, _ in kept].count("good") == 2
    positions = [items.index(item) for item in kept]
    assert positions == sorted(positions)


def test_balance_is_reproducible_for_both_rng_kinds():
    items = [("good", i) for i in range(10)] + [("bad", i) for i in range(3)]
    for make in (random.Random, np.random.default_rng):
        first, _ = balance_labels(items, make(7))
        again, _ = balance_labels(items, make(7))
        assert first == again and len(first) == 6


def test_balance_keeps_nothing_when_a_class_is_empty():
    kept, stats = balance_labels([("bad", 1), ("bad", 2), (None, 3)], random.Random(0))
    assert kept == [] and stats["method"] == "one_class_empty"
    assert (stats["bad_before"], stats["good"], stats["bad"]) == (2, 0, 0)


def test_balance_none_keeps_every_labelled_item():
    items = [("bad", 1), (None, 2), ("bad", 3), ("good", 4)]
    kept, stats = balance_labels(items, random.Random(0), mode="none")
    assert kept == [("bad", 1), ("bad", 3), ("good", 4)] and stats["method"] == "none"


def test_balance_rejects_bad_settings():
    with pytest.raises(ValueError, match="mode"):
        balance_labels([], random.Random(0), mode="upsample")
    with pytest.raises(ValueError, match="labels"):
        balance_labels([("fine", 1)], random.Random(0))
    with pytest.raises(TypeError, match="rng"):
        balance_labels([("good", 1), ("bad", 2), ("bad", 3)], 0)
