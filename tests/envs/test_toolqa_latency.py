"""ToolQA's ``search_latency``: each knowledge-base call waits like a web search API's round trip,
and nothing but the time changes."""

import json
import math
import time
import types

import gymnasium as gym
import pytest

import agentgym  # noqa: F401
from agentgym.envs.toolqa import tools

LATENCY = 0.05


def call(name: str, **arguments) -> str:
    return f"<tool_call>{json.dumps({'name': name, 'arguments': arguments})}</tool_call>"


def play_script(env_id: str, latency: float):
    """One seeded episode touching every kind of turn; returns what it showed, the wall time of
    each step, and which steps called a knowledge-base tool."""
    env = gym.make(env_id, expert=True, render_mode="ansi", search_latency=latency)
    obs, info = env.reset(seed=7)
    first_search = info["expert_action"]
    seen = [(obs, info)]
    script = [lambda i: first_search,                              # search
              lambda i: call("open", doc_id=i["retrieved"][0]),     # open a passage it found
              lambda i: call("open", doc_id="no-such-passage"),     # open fails: still a round trip
              lambda i: first_search,                              # a repeated search
              lambda i: call("calculate", expression="1999 - 1850"),
              lambda i: "no action here",                          # invalid output
              lambda i: call("search"),                            # schema error: invalid, no call made
              lambda i: "<answer>something</answer>"]
    remote, durations = [], []
    for make_action in script:
        action = make_action(info)
        start = time.perf_counter()
        step = env.step(action)
        durations.append(time.perf_counter() - start)
        info = step[4]
        remote.append(info.get("tool") in tools.REMOTE_TOOLS and info["parse_error"] is None)
        seen.append(step)
    assert step[2], "the script ends with an answer"
    return seen, env.render(), durations, remote


@pytest.mark.parametrize("env_id", ["ToolQA-v0", "ToolQA-LongForm-v0"])
def test_latency_changes_nothing_but_the_time(env_id):
    plain, plain_render, _, remote = play_script(env_id, 0.0)
    delayed, delayed_render, durations, delayed_remote = play_script(env_id, LATENCY)
    assert delayed == plain and delayed_render == plain_render and delayed_remote == remote
    assert sum(remote) == 4  # two searches and two opens; calculate, invalid outputs and the answer make none
    waited = [d for d, r in zip(durations, remote) if r]
    assert all(d >= LATENCY for d in waited)  # time.sleep waits at least as long as asked
    assert sum(durations) >= len(waited) * LATENCY


@pytest.mark.parametrize("latency", [0.0, LATENCY])
def test_only_knowledge_base_calls_sleep_and_none_by_default(latency, monkeypatch):
    slept = []
    monkeypatch.setattr(tools, "time", types.SimpleNamespace(sleep=slept.append))
    _, _, _, remote = play_script("ToolQA-v0", latency)
    assert slept == ([LATENCY] * sum(remote) if latency else [])


def test_tags_searches_wait_too(monkeypatch):
    slept = []
    monkeypatch.setattr(tools, "time", types.SimpleNamespace(sleep=slept.append))
    env = gym.make("ToolQA-v0", action_format="tags", search_latency=0.2)
    env.reset(seed=0)
    env.step("<search>born</search>")
    env.step("<search></search><search>two</search>")
    env.step("<answer>x</answer>")
    assert slept == [0.2]


@pytest.mark.parametrize("env_id", ["ToolQA-v0", "ToolQA-LongForm-v0"])
@pytest.mark.parametrize("bad", [-0.1, math.nan, math.inf, True, "0.2", None])
def test_a_bad_latency_is_refused_when_made(env_id, bad):
    with pytest.raises(ValueError, match=r"^search_latency must be a finite number of seconds >= 0, got "):
        gym.make(env_id, search_latency=bad)


def test_a_whole_number_of_seconds_is_taken():
    assert gym.make("ToolQA-v0", search_latency=1).unwrapped.toolbox.search_latency == 1.0
