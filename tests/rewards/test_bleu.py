import math

import pytest

from agentgym.rewards.bleu import length_aware_bleu
from agentgym.rewards.qa_metrics import exact_match, normalize_answer, token_f1


def test_exact_match_scores_one_after_normalization():
    assert length_aware_bleu("The Eiffel Tower.", ["eiffel tower"]) == 1.0
    assert length_aware_bleu("2750500", ["2,750,500"]) == 1.0
    assert length_aware_bleu("The Paris.", ["Paris"]) == 1.0  # two words as written: within 2x


def test_wrong_word_scores_zero():
    assert length_aware_bleu("London", ["Paris"]) == 0.0
    assert length_aware_bleu("", ["Paris"]) == 0.0


def test_one_word_answer_is_scored_on_unigrams():
    # plain BLEU-4 would give 0 to any one-word hypothesis; here a brevity-penalized partial hit
    assert length_aware_bleu("Obama", ["Barack Obama"]) == pytest.approx(math.exp(1 - 2 / 1))


def test_verbose_answer_containing_gold_scores_between_zero_and_one():
    verbose = length_aware_bleu("the answer is definitely paris in france", ["Paris"])
    assert 0.0 < verbose < 1.0
    # precision 1/6 (after dropping "the"); verbosity counts the 7 words as written: exp(1 - 7 / (2 * 1))
    assert verbose == pytest.approx((1 / 6) * math.exp(1 - 7 / 2))


@pytest.mark.parametrize("padded", ["the the the the Paris", "Paris . . . . . . .", "a an the Paris ! !"])
def test_padding_that_normalization_drops_still_costs_score(padded):
    assert normalize_answer(padded) == "paris"
    written = len(padded.split())
    assert length_aware_bleu(padded, ["Paris"]) == pytest.approx(math.exp(1 - written / 2))


def test_padding_within_lambda_times_reference_is_not_penalized_beyond_precision():
    assert length_aware_bleu("Paris France", ["Paris"]) == pytest.approx(0.5)
    assert length_aware_bleu("Paris France", ["Paris"], lam=0.5) < 0.5


def test_best_alias_counts():
    assert length_aware_bleu("Kuche", ["Somewhere Else", "Kuche"]) == 1.0


def test_word_order_matters_for_multiword_answers():
    right = length_aware_bleu("new york city", ["new york city"])
    shuffled = length_aware_bleu("city york new", ["new york city"])
    assert right == 1.0 and 0.0 < shuffled < right


def test_rejects_bad_lambda():
    with pytest.raises(ValueError):
        length_aware_bleu("a", ["a"], lam=0)


def test_em_and_f1():
    assert normalize_answer("An Apple, a day!") == "apple day"
    assert exact_match("the paris", ["Paris"]) == 1.0
    assert token_f1("paris france", ["paris"]) == pytest.approx(2 / 3)
    assert token_f1("london", ["paris"]) == 0.0


@pytest.mark.parametrize("metric", [length_aware_bleu, exact_match, token_f1])
def test_one_string_for_the_gold_answers_is_refused_not_scored_letter_by_letter(metric):
    with pytest.raises(TypeError, match=r"must be a list of gold answers, not one string: pass \['Paris'\]"):
        metric("Paris", "Paris")
    assert metric("Paris", ["Paris"]) == metric("Paris", ("Paris",)) == 1.0
