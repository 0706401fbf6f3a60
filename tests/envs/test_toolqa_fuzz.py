"""Any string is a legal action (SPEC §7): thousands of arbitrary outputs, no exception."""
import json

import gymnasium as gym
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import agentgym  # noqa: F401

TAGS = ["<answer>", "</answer>", "<tool_call>", "</tool_call>", "<think>", "</think>", "<search>", "</search>"]
json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
                           lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=8), c, max_size=3),
                           max_leaves=8)
calls = st.builds(lambda name, args: f"<tool_call>{json.dumps({'name': name, 'arguments': args})}</tool_call>",
                  st.sampled_from(["search", "open", "calculate", "browse", "", "SEARCH"]),
                  st.dictionaries(st.sampled_from(["query", "top_k", "doc_id", "expression", "x"]), json_values,
                                  max_size=3) | json_values)
tag_soup = st.lists(st.sampled_from(TAGS) | st.text(max_size=30), max_size=12).map("".join)
actions = st.one_of(st.text(max_size=300), st.binary(max_size=200).map(lambda b: b.decode("latin-1")),
                    calls, tag_soup, st.sampled_from(["", " ", "\x00", "a" * 1_000_001, "<answer>" * 1000,
                                                      '<tool_call>{"name": "search"', "<tool_call>[]</tool_call>"]))

_env = gym.make("ToolQA-v0", max_turns=4)
_env.reset(seed=0)
_seen = []


@settings(max_examples=2500, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(action=actions)
def test_any_string_is_a_legal_action(action):
    _seen.append(action)
    obs, reward, terminated, truncated, info = _env.step(action)
    assert isinstance(obs, str) and _env.observation_space.contains(obs)
    assert isinstance(reward, float)
    assert set(info) >= {"reward_terms", "action_valid", "parse_error"}
    if info["parse_error"] is not None:
        assert info["reward_terms"]["format"] == 0.0 and not info["action_valid"]
    if terminated or truncated:
        assert truncated or info["parse_error"] is None
        assert {"success", "episode_terms", "metrics"} <= set(info)
        _env.reset()


def test_fuzz_covered_at_least_2000_distinct_actions():
    assert len(set(_seen)) >= 2000


def test_turn_limit_truncates_a_stream_of_garbage():
    env = gym.make("ToolQA-v0", max_turns=5)
    env.reset(seed=1)
    for turn in range(1, 6):
        _, _, terminated, truncated, info = env.step("\x00garbage<answer")
        assert not terminated and truncated == (turn == 5)
    assert info["episode_terms"]["format"] == 0.0 and info["episode_return"] == 0.0


@pytest.mark.parametrize("action", [b"\xff\xfe<answer>x</answer>", 12345, None])
def test_non_string_actions_are_coerced_not_fatal(action):
    env = gym.make("ToolQA-v0").unwrapped
    env.reset(seed=0)
    obs, *_ = env.step(action)
    assert isinstance(obs, str)
