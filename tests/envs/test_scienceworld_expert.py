"""The engine's gold path, played through ScienceWorld-v0, solves variation 0 of every task."""

import gymnasium as gym
import pytest

import agentgym  # noqa: F401  registers the envs
from agentgym.envs.scienceworld.tasks import TASK_NAMES

pytest.importorskip("scienceworld")


@pytest.fixture(scope="module")
def env():
    # Gold paths run up to ~180 steps; admissible actions are not needed to follow them.
    e = gym.make("ScienceWorld-v0", expert=True, admissible_actions=False, max_turns=300)
    yield e
    e.close()


@pytest.mark.engine
@pytest.mark.parametrize("task", TASK_NAMES)
def test_expert_solves_variation_0(env, task):
    obs, info = env.reset(seed=0, options={"task_id": f"{task}/0"})
    total = 0.0
    for _ in range(300):
        obs, reward, terminated, truncated, info = env.step(f"<action>{info['expert_action']}</action>")
        total += reward
        if terminated or truncated:
            break
    assert terminated and not truncated and info["success"] is True, obs
    assert info["episode_terms"]["progress"] == 1.0 and info["metrics"]["score"] == 100.0
    assert total == pytest.approx(info["episode_return"]) and total > 0.99
