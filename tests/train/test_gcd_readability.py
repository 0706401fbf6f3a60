"""The readability test of a "Common mistakes" list: text a freshly built tiny model samples and
the garble a small trained one writes score low; lists a capable model writes score high."""

import gymnasium as gym
import pytest
import torch

import agentgym  # noqa: F401  (registers the envs)
from agentgym.train.methods.gcd.readability import MIN_ITEM_WORDS, Vocabulary, words

THRESHOLD = 0.85  # --gcd.correction-min-readability's default

# A small model's garble, as GCD runs on the built-in tiny models write it: subword pieces run
# together, stutters, lone tokens, markup.
GARBLED = [
    "the action solveim the environment did the runrk here",
    'The action action the taskept"<judge>good</answer>" was thettt',
    "the was was n",
    'the kulsep that itedi voyage "<answer>the was n n voyage not completelmoth',
    "x",
]

# Lists a capable model writes; none of their words were used to draw up the vocabulary.
TOOLQA_LIST = ["Always look up both companies before comparing their founding years.",
               "When a search returns nothing, rephrase the query using the exact name from the question.",
               "Subtract the two years rather than estimating the gap.",
               "Reply with only the number, without extra words.",
               "Stop searching once the needed facts are found and submit the answer."]
ALFWORLD_TEXT = ("-= Welcome to TextWorld, ALFRED! =- You are in the middle of a room. Looking quickly around "
                 "you, you see a cabinet 1, a countertop 1, a fridge 1, a microwave 1, a sinkbasin 1, and a "
                 "toaster 1. Your task is to: put a hot apple in fridge.")
ALFWORLD_LIST = ["Heat the apple with the microwave before putting it in the fridge.",
                 "Examine each countertop instead of opening the same cabinet twice.",
                 "After picking up an object, go directly to the target receptacle.",
                 "Don't revisit locations you have already searched."]


@pytest.fixture(scope="module")
def toolqa_text():
    env = gym.make("ToolQA-v0")
    texts = []
    for seed in range(4):
        obs, info = env.reset(seed=seed)
        texts += [obs, info["instruction"], info["system_prompt"]]
    return texts


def test_words_are_letter_runs_and_inflections_of_known_words_are_real():
    assert words("Don't open drawer 3 -- the agent's KEY!") == ["don't", "open", "drawer", "the", "agent's", "key"]
    vocab = Vocabulary(["a drawer, a shelf; stop"])
    for word in ["drawers", "shelves", "opened", "opening", "stopped", "stopping", "carefully", "agent's", "don't"]:
        assert vocab.is_real(word), word
    for word in ["drawerx", "solveim", "runrk", "n", "zq"]:
        assert not vocab.is_real(word), word
    assert vocab.is_real("shelf") and Vocabulary(["zorp 2"]).is_real("zorps")
    assert not Vocabulary(["q"]).is_real("q")  # a lone letter of the env's text is no word


def test_realistic_garble_scores_below_the_threshold(toolqa_text):
    vocab = Vocabulary(toolqa_text)
    for item in GARBLED:
        assert vocab.item_score(item) < THRESHOLD, item
    assert vocab.list_score(GARBLED) < 0.7
    assert vocab.item_score("check the door") == 1.0
    assert vocab.item_score("check the the the door") == 0.6  # a stutter is not text
    assert len(words("x")) < MIN_ITEM_WORDS and vocab.item_score("x") == 0.0
    assert vocab.list_score([]) == 0.0 and vocab.list_score(["", "42 17"]) == 0.0


def test_text_sampled_from_a_freshly_built_tiny_model_is_not_readable(tiny, toolqa_text):
    from agentgym.agents import HFPolicy, SamplingConfig
    from agentgym.train.methods.gcd.correction import mistakes_summary_prompt
    from agentgym.train.rollout.chat import ChatEncoder

    model, tokenizer = tiny
    ids = ChatEncoder(tokenizer).prompt_ids(mistakes_summary_prompt(["The action was invalid. Nothing changed."]))
    torch.manual_seed(0)
    samples = HFPolicy(model, tokenizer).generate([ids] * 5, SamplingConfig(max_new_tokens=24, temperature=1.0))
    items = ["- " + " ".join(c.text.split()) for c in samples]
    assert sum(len(words(i)) for i in items) >= 20  # it did write words
    assert Vocabulary(toolqa_text).list_score(items) < 0.5


def test_lists_a_capable_model_writes_score_above_the_threshold(toolqa_text):
    assert Vocabulary(toolqa_text).list_score(TOOLQA_LIST) >= 0.9
    assert Vocabulary([ALFWORLD_TEXT]).list_score(ALFWORLD_LIST) >= 0.9
    # the env's words count: without them the ALFWorld list reads worse
    assert Vocabulary().list_score(ALFWORLD_LIST) < Vocabulary([ALFWORLD_TEXT]).list_score(ALFWORLD_LIST)
