"""Text spaces in Gymnasium's own vector envs: ``gym.make_vec(id, vectorization_mode="async")`` with
its default shared memory gives every env's real observations, on the real engines."""

import importlib.util
import os
import subprocess
import sys
from copy import deepcopy

import gymnasium as gym
import pytest

import agentgym  # noqa: F401  registers the envs
from agentgym.envs import DESCRIPTIONS
from agentgym.envs.spaces import UnicodeText


def _has(module):
    return importlib.util.find_spec(module) is not None


def _rollout(vec, actions, seed=0):
    obs, _ = vec.reset(seed=seed)
    seen = [obs]
    for action in actions:
        obs, *_ = vec.step([action] * vec.num_envs)
        seen.append(obs)
    return seen


def _async_matches_sync(env_id, actions, **kwargs):
    sync = gym.make_vec(env_id, num_envs=2, vectorization_mode="sync", **kwargs)
    try:
        expected = _rollout(sync, actions)
    finally:
        sync.close()
    vec = gym.make_vec(env_id, num_envs=2, vectorization_mode="async", **kwargs)
    try:
        assert isinstance(vec.single_observation_space, UnicodeText)
        got = _rollout(vec, actions)
    finally:
        vec.close()
    assert all(type(obs) is tuple and all(isinstance(o, str) for o in obs) for obs in got)
    assert got == expected
    assert expected[0][0] != expected[0][1] and all(0 < len(o) < 100_000 for obs in got for o in obs)


TOOLQA_ACTIONS = ['<tool_call>{"name": "search", "arguments": {"query": "Zuces Works"}}</tool_call>', "hello 中文 é"]


def test_async_toolqa_gives_the_real_observations():
    _async_matches_sync("ToolQA-v0", TOOLQA_ACTIONS)
    _async_matches_sync("ToolQA-LongForm-v0", TOOLQA_ACTIONS)


def test_async_without_a_copy_shows_what_the_workers_wrote_last():
    from agentgym.envs.spaces import SharedTexts

    vec = gym.make_vec("ToolQA-v0", num_envs=2, vectorization_mode="async", vector_kwargs={"copy": False})
    single = gym.make("ToolQA-v0")
    try:
        first, _ = vec.reset(seed=0)
        assert isinstance(first, SharedTexts)
        assert list(first) == [single.reset(seed=0)[0], single.reset(seed=1)[0]]
        assert deepcopy(first) == tuple(first)
        vec.reset(seed=5)
        assert first[0] == single.reset(seed=5)[0]  # a view, as Gymnasium's arrays in shared memory are
    finally:
        vec.close()
        single.close()


@pytest.mark.skipif(not _has("alfworld"), reason="needs the alfworld extra")
def test_async_alfworld_gives_the_real_observations(tmp_path):
    from agentgym.envs.alfworld.generate import generate

    generate(str(tmp_path), 4, seed=3, split="train")
    _async_matches_sync("ALFWorld-v0", ["look", "inventory"], data_path=str(tmp_path))


@pytest.mark.engine
@pytest.mark.skipif(not _has("textworld"), reason="needs the alfworld extra (textworld)")
def test_async_textworld_gives_the_real_observations(tmp_path):
    games = []
    for seed in (1, 2):
        games.append(str(tmp_path / f"g{seed}.z8"))
        subprocess.run([os.path.join(os.path.dirname(sys.executable), "tw-make"), "custom", "--world-size", "2",
                        "--nb-objects", "3", "--quest-length", "2", "--seed", str(seed), "--output", games[-1],
                        "-f", "--silent"], check=True, capture_output=True, timeout=300)
    here = os.getcwd()
    os.chdir(tmp_path)  # the interpreter writes its files into the working directory
    try:
        _async_matches_sync("TextWorld-v0", ["look", "inventory"], game=games)
    finally:
        os.chdir(here)


@pytest.mark.engine
@pytest.mark.skipif(not _has("scienceworld"), reason="needs the scienceworld extra")
def test_async_scienceworld_gives_the_real_observations():
    _async_matches_sync("ScienceWorld-v0", ["look around", "inventory"])


def test_the_envs_above_are_every_registered_kind():
    tested = {"agentgym.envs.toolqa.env:ToolQAEnv", "agentgym.envs.alfworld.env:ALFWorldEnv",
              "agentgym.envs.textworld_env:TextWorldEnv", "agentgym.envs.scienceworld.env:ScienceWorldEnv"}
    assert {gym.spec(env_id).entry_point for env_id in DESCRIPTIONS} == tested
