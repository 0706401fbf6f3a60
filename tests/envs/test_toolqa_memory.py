"""Long answers do not grow the process: what is scored, and what scoring caches, is bounded."""
import gc
import random

import gymnasium as gym
import psutil
import pytest

import agentgym  # noqa: F401
from agentgym.rewards.qa_metrics import MAX_SCORED_CHARS

_VOCABULARY = [f"w{i}" for i in range(5000)]


def _long_answer(episode: int, chars: int = 96_000) -> str:
    """A different ~96k-character answer each episode, as a sampling policy gives."""
    words = random.Random(episode).choices(_VOCABULARY, k=chars // 5)
    return " ".join(words)[:chars]


def _rss_growth(env_id: str, episodes: int) -> int:
    env = gym.make(env_id, max_turns=2)
    process = psutil.Process()

    def play(first: int, count: int) -> None:
        for episode in range(first, first + count):
            env.reset(seed=episode)
            _, _, terminated, _, info = env.step(f"<answer>{_long_answer(episode)}</answer>")
            assert terminated and len(info.get("judge_rationale", "")) < 1000

    play(0, 20)  # imports, indexes and allocator pools settle first
    gc.collect()
    before = process.memory_info().rss
    play(20, episodes)
    gc.collect()
    env.close()
    return process.memory_info().rss - before


@pytest.mark.slow
@pytest.mark.parametrize("env_id, episodes", [("ToolQA-v0", 400), ("ToolQA-LongForm-v0", 100)])
def test_long_answers_keep_memory_flat(env_id, episodes):
    # Unbounded, the n-gram cache kept every answer: ~1.4 MB more per episode.
    assert _rss_growth(env_id, episodes) < 20 * 2**20


def test_what_is_scored_is_cut_to_the_documented_length():
    env = gym.make("ToolQA-v0", expert=True).unwrapped
    _, info = env.reset(seed=0)
    gold = info["expert_action"]
    while not gold.startswith("<answer>"):
        _, _, _, _, info = env.step(gold)
        gold = info["expert_action"]
    answer = gold[len("<answer>"):-len("</answer>")]
    # the gold answer padded far past the cut: scored on the first MAX_SCORED_CHARS characters only
    _, _, _, _, info = env.step(f"<answer>{answer} {'x ' * 20_000}</answer>")
    assert len(env._answer) == MAX_SCORED_CHARS and info["metrics"]["em"] == 0.0
    assert info["reward_terms"]["answer"] < 0.01
