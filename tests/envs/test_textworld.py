"""TextWorld-v0 on TextWorld's own engine, over games made by tw-make."""

import os
import subprocess
import sys

import gymnasium as gym
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("textworld")

from gymnasium.utils.env_checker import check_env

import agentgym  # noqa: F401
from agentgym.envs.textworld_env import META_REPLY, TextWorldEnv, clean_feedback


def _tw_make(path, seed):
    tw_make = os.path.join(os.path.dirname(sys.executable), "tw-make")
    cmd = [tw_make, "custom", "--world-size", "3", "--nb-objects", "5", "--quest-length", "3",
           "--seed", str(seed), "--output", str(path), "-f", "--silent"]
    subprocess.run(cmd, check=True, capture_output=True, timeout=300)
    return str(path)


@pytest.fixture(scope="module")
def games(tmp_path_factory):
    out = tmp_path_factory.mktemp("textworld")
    return [_tw_make(out / "one.z8", 1), _tw_make(out / "two.z8", 2)]


@pytest.fixture(scope="module")
def env(games):
    env = gym.make("TextWorld-v0", game=games[0], expert=True, render_mode="ansi")
    yield env
    env.close()


def test_check_env_passes(env):
    check_env(env.unwrapped)


def test_expert_walkthrough_wins_with_progress_from_the_score(env):
    obs, info = env.reset(seed=0)
    assert "________" not in obs and not obs.rstrip().endswith(">")  # banner and prompt removed
    assert info["instruction"] and info["task_id"] == "one" and info["expert_action"] in info["admissible_actions"]
    rewards = []
    while True:
        obs, reward, terminated, truncated, info = env.step(f"<action>{info['expert_action']}</action>")
        rewards.append(reward)
        assert info["reward_terms"]["valid"] == 1.0
        if terminated or truncated:
            break
    assert terminated and info["success"] and info["reward_terms"]["progress"] == 1.0
    assert sum(rewards) == pytest.approx(info["episode_return"]) == pytest.approx(1.0)
    assert info["metrics"]["score"] >= 1 and "[action]" in env.render()


def test_bad_input_never_reaches_or_crashes_the_interpreter(env):
    env.reset(seed=0)
    bad = ["ab\x00cd", "\\m \\h \\* \\~ look", "restart", "quit", "save", "é中 look", "\x07\x1b[1m",
           "x" * 300_000, "", "a\nb"]
    for action in bad:
        obs, _, terminated, truncated, info = env.step(action)
        assert isinstance(obs, str) and obs and not terminated
    obs, _, _, _, info = env.step("restart")
    assert obs == META_REPLY and not info["action_valid"] and info["reward_terms"]["format"] == 1.0
    obs, _, _, _, info = env.step("look")  # the game is still the same game
    assert info["action_valid"] and "Invalid" not in obs


def test_several_games_seeds_and_task_ids(games):
    env = TextWorldEnv(game=games, max_turns=2, reward_mode="binary")
    first = [env.reset(seed=s)[0] for s in range(6)]
    assert first == [env.reset(seed=s)[0] for s in range(6)] and len(set(first)) == 2
    _, info = env.reset(options={"task_id": "two.z8"})
    assert info["task_id"] == "two" and info["group_key"].endswith("two.z8")
    outs = [env.step("look"), env.step("look")]
    assert outs[-1][3] and all(o[1] == 0.0 for o in outs)  # turn limit; binary reward
    env.close()


def test_arguments_are_checked(games, monkeypatch):
    with pytest.raises(ValueError, match="needs game"):
        TextWorldEnv()
    with pytest.raises(FileNotFoundError):
        TextWorldEnv(game=games[0] + ".missing")
    monkeypatch.setitem(sys.modules, "textworld", None)
    with pytest.raises(gym.error.DependencyNotInstalled, match=r"agentgym\[alfworld\]"):
        TextWorldEnv(game=games[0])


def test_clean_feedback_strips_prompt_and_banner():
    raw = "\n\n  ____  \n |    \\ \n\nWelcome!\n\n-= Room =-\nHi.\n\n>   -= Room =-0/1\n"
    assert clean_feedback(raw, first=True) == "Welcome!\n\n-= Room =-\nHi."
    assert clean_feedback("\nYou close it.\n\n>  ") == "You close it."


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(action=st.one_of(st.text(max_size=200), st.text(alphabet="\\<>~*&^%$#@!{}[]|/ abcxyz", max_size=40)))
def test_arbitrary_strings_never_crash_the_interpreter(env, action):
    obs, reward, terminated, truncated, info = env.step(action)
    assert isinstance(obs, str) and isinstance(reward, float) and "reward_terms" in info
    if terminated or truncated:
        env.reset(seed=0)
