"""Any string is a legal action (SPEC §7): thousands of arbitrary outputs, no exception."""
import contextlib
import json
import sys

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
# Deep nesting the calculator and the JSON parser must refuse rather than recurse into.
nested = st.builds(lambda depth, opener, closer, inner: opener * depth + inner + closer * depth,
                   st.integers(50, 240), st.sampled_from(["(", "-", "abs(", "max(1,", "2^", "["]),
                   st.sampled_from([")", "", "]"]), st.sampled_from(["1", "", "x"]))
deep_calls = nested.map(lambda e: f"<tool_call>{json.dumps({'name': 'calculate', 'arguments': {'expression': e}})}"
                                  "</tool_call>")
# Long answers and queries: what an observation quotes back of them is capped.
long_text = st.builds(lambda word, n: (word + " ") * n, st.sampled_from(["zzqx", "Tesk", "w1 w2", "é"]),
                      st.integers(1_000, 19_000))
long_outputs = st.one_of(long_text.map(lambda t: f"<answer>{t}</answer>"),
                         long_text.map(lambda t: f"<search>{t}</search>"),
                         long_text.map(lambda t: '<tool_call>{"name": "search", "arguments": {"query": '
                                                 f'{json.dumps(t)}}}}}</tool_call>'))
MAX_OBSERVATION_CHARS = 20_000  # ten clipped passages, the most any observation carries
actions = st.one_of(st.text(max_size=300), st.binary(max_size=200).map(lambda b: b.decode("latin-1")),
                    calls, tag_soup, deep_calls, nested.map(lambda e: f"<tool_call>{e}</tool_call>"), long_outputs, st.sampled_from(["", " ", "\x00", "a" * 1_000_001, "<answer>" * 1000,
                                                      '<tool_call>{"name": "search"', "<tool_call>[]</tool_call>"]))



@contextlib.contextmanager
def _default_recursion_limit():
    """Hypothesis raises the recursion limit while it runs a test; an env stepped by a trainer or
    an eval loop gets Python's default, so deep-nesting inputs are tried under that."""
    previous = sys.getrecursionlimit()
    sys.setrecursionlimit(1000)
    try:
        yield
    finally:
        sys.setrecursionlimit(previous)


_env = gym.make("ToolQA-v0", max_turns=4)
_env.reset(seed=0)
_seen = []


@pytest.mark.slow
@settings(max_examples=2500, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(action=actions)
def test_any_string_is_a_legal_action(action):
    _seen.append(action)
    with _default_recursion_limit():
        obs, reward, terminated, truncated, info = _env.step(action)
    assert isinstance(obs, str) and _env.observation_space.contains(obs)
    assert len(obs) <= MAX_OBSERVATION_CHARS
    assert isinstance(reward, float)
    assert set(info) >= {"reward_terms", "action_valid", "parse_error"}
    if info["parse_error"] is not None:
        assert info["reward_terms"]["format"] == 0.0 and not info["action_valid"]
    if terminated or truncated:
        assert truncated or info["parse_error"] is None
        assert {"success", "episode_terms", "metrics"} <= set(info)
        _env.reset()


@pytest.mark.slow  # counts what the any-string test above played: the two run together
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


def _calculate(expression):
    return f"<tool_call>{json.dumps({'name': 'calculate', 'arguments': {'expression': expression}})}</tool_call>"


@pytest.mark.parametrize("action", [_calculate("(" * 200 + "1" + ")" * 200), _calculate("-" * 450 + "1"),
                                    _calculate("max(" * 90 + "1" + ")" * 90),
                                    "<tool_call>" + "[" * 90_000 + "</tool_call>"],
                         ids=["parentheses", "signs", "function-calls", "json"])
def test_deeply_nested_actions_get_an_observation_not_an_exception(action):
    from agentgym.train.rollout.envs import make_env_batch

    batch = make_env_batch("ToolQA-v0", num_groups=1, group_size=1)
    batch.reset_groups([0])
    obs, _, terminated, truncated, info = batch.step_some({0: action})[0]
    assert not terminated and not truncated and "error" not in info
    assert "nested" in obs or "not valid JSON" in obs
    assert info["reward_terms"].get("tool", 0.0) == 0.0
    batch.close()


@pytest.mark.parametrize("action", [
    _calculate("zzqx " * 90),  # a calculator error
    '<tool_call>{"name": "search", "arguments": {"query": "' + "zzqx " * 17_400 + '"}}</tool_call>',  # no hits
    '<tool_call>{"name": "open", "arguments": {"doc_id": "' + "p" * 90_000 + '"}}</tool_call>',  # no such id
    "<answer>" + "zzqx " * 19_000 + "</answer>",
], ids=["calculate", "search", "open", "answer"])
def test_observations_quote_a_bounded_excerpt_of_the_output(action):
    from agentgym.envs.parsing import MAX_ECHO_CHARS

    env = gym.make("ToolQA-v0")
    env.reset(seed=0)
    obs, *_ = env.step(action)
    assert "zzqx" in obs or "ppp" in obs
    assert len(obs) < MAX_ECHO_CHARS + 200
