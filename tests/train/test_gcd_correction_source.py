"""Which "Common mistakes" list a refresh installs, for each --gcd.correction-source."""

import pytest

from agentgym.train.methods.gcd.correction_source import choose_mistakes, env_text, is_praise
from agentgym.train.methods.gcd.judge import rule_critique
from agentgym.train.rollout.episodes import Episode

ENV = ["You are in a kitchen. You see a fridge 1 and a drawer 2. Your task is to: put a cold apple on the table."]
CRITIQUES = ([rule_critique("o", "open drawer 2", "bad", "invalid")] * 3
             + ["The actoin solveim the runrk here. <judge>"] * 4  # garbled, and the most frequent
             + ["Went back to the kitchen. Nothing new."] * 2
             # a small model opens critiques of bad steps with the praise its cold start taught for good ones
             + [rule_critique("o", "answer 3", "good", "solved")] * 5 + ["The was solved the task, it. Bad."])
GARBLED_LIST = ["the action solveim the environment did the runrk here", "Thettt taskept taskept"]
READABLE_LIST = ["Take the apple from the fridge before going to the table.", "Do not open the drawer twice."]


def choose(model_list, mode, writer="self"):
    return choose_mistakes(CRITIQUES, model_list, writer, mode=mode, env_texts=ENV, max_items=5)


def test_auto_keeps_a_readable_model_list():
    choice = choose(READABLE_LIST, "auto")
    assert (choice.mistakes, choice.source, choice.fallback, choice.dropped) == (READABLE_LIST, "self", None, 0)
    assert choice.readability == 1.0
    assert choose(READABLE_LIST, "auto", writer="external").source == "external"


def test_auto_replaces_a_garbled_list_by_the_count_of_readable_critiques():
    choice = choose(GARBLED_LIST, "auto")
    assert choice.source == "offline" and choice.readability < 0.85
    # the praise and the garbled critique are the most frequent, and are left out; the others are counted
    assert choice.mistakes == ["the action was invalid", "went back to the kitchen"] and choice.dropped == 10
    assert choice.fallback.startswith("is not readable text (readability 0.")
    no_list = choose([], "auto")
    assert no_list.mistakes == choice.mistakes and no_list.readability == 0.0 and no_list.fallback == "holds no list"
    # nothing readable at all: an empty list, so nothing is injected
    assert choose_mistakes(CRITIQUES[3:7] + CRITIQUES[9:], GARBLED_LIST, "self", env_texts=ENV).mistakes == []


def test_praise_of_a_good_step_garbled_or_not_names_no_mistake():
    for phrase in ["the action solved the task", "the was solved the task",
                   "The action moves the agent toward the goal", "the action action task"]:
        assert is_praise(phrase), phrase
    for phrase in ["the action did not solve the task", "the action doesn't move the agent toward the goal",
                   "the action was invalid", "the action does not help with the task",
                   "the agent moves away from the goal", "", "42"]:
        assert not is_praise(phrase), phrase


def test_model_keeps_the_models_list_whatever_it_reads_like():
    choice = choose(GARBLED_LIST, "model")
    assert choice.mistakes == GARBLED_LIST and choice.source == "self" and choice.readability < 0.85
    # a reply without a list falls back to counting every critique, as before the readability test
    no_list = choose([], "model")
    assert no_list.source == "offline" and no_list.fallback is None
    assert no_list.mistakes == ["the action solved the task", "the actoin solveim the runrk here",
                                "the action was invalid", "went back to the kitchen", "the was solved the task, it"]


def test_offline_counts_every_critique_and_asks_no_model():
    choice = choose(None, "offline")
    assert choice.source == "offline" and choice.readability is None and choice.dropped == 0
    assert choice.mistakes[:2] == ["the action solved the task", "the actoin solveim the runrk here"]
    assert choose(READABLE_LIST, "offline").mistakes == choice.mistakes
    with pytest.raises(ValueError, match="mode must be one of"):
        choose(READABLE_LIST, "always")


def test_env_text_is_the_envs_own_words_without_the_list_or_echoed_actions():
    from agentgym.train.methods.gcd.correction import inject_mistakes

    ep = Episode(group=0, task_id="t", group_key="t", system_prompt=inject_mistakes("Answer briefly.", ["zorp"]),
                 instruction="find the key", observations=["A hall.", "No passages match 'kulsep'."])
    assert env_text([ep]) == ["Answer briefly.", "find the key", "A hall."]
