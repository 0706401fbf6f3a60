"""Every env's final info carries its PRS terms as ``reward_components`` (one schema for every adapter)."""

import gymnasium as gym
import pytest

import agentgym  # noqa: F401  registers the envs
from agentgym.rewards.components import COMPONENT_KEYS, reward_components
from agentgym.rewards.prs import EMBODIED_PRS, TOOLQA_PRS

TOOLQA = {"question_kinds": ["single_hop"], "max_turns": 3}


def play(env, actions, seed=0, options=None):
    _, info = env.reset(seed=seed, options=options)
    infos, rewards = [], []
    for action in actions:
        action = info["expert_action"] if action is None else action
        _, reward, terminated, truncated, info = env.step(action)
        infos.append(info)
        rewards.append(reward)
        if terminated or truncated:
            return infos, rewards
    raise AssertionError("the episode did not end")


def check_schema(info):
    parts = info["reward_components"]
    spec = TOOLQA_PRS if parts[0]["name"] == "format" and len(parts) == 3 else EMBODIED_PRS
    assert [c["name"] for c in parts] == list(spec.terms)
    for c in parts:
        assert tuple(c) == COMPONENT_KEYS
        assert c["value"] == info["episode_terms"][c["name"]]
        assert c["type"] in ("shaping", "progress", "success") and c["gated"] == (c["name"] != "format")
    assert sum(c["weight"] for c in parts) == pytest.approx(1.0)
    assert sum(c["contribution"] for c in parts) == pytest.approx(info["episode_return"])


def test_the_final_info_of_a_toolqa_episode_carries_its_terms_as_reward_components():
    env = gym.make("ToolQA-v0", expert=True, **TOOLQA)
    infos, rewards = play(env, [None] * 3)
    assert all("reward_components" not in i for i in infos[:-1])
    check_schema(infos[-1])
    assert sum(rewards) == pytest.approx(infos[-1]["episode_return"])
    by_name = {c["name"]: c for c in infos[-1]["reward_components"]}
    assert by_name["answer"]["type"] == "progress" and by_name["answer"]["contribution"] == pytest.approx(0.7)

    # a broken turn fails the format gate: the gated terms are reported but contribute nothing
    infos, _ = play(env, ["not an action", None, None])
    check_schema(infos[-1])
    assert [c["contribution"] for c in infos[-1]["reward_components"][1:]] == [0.0, 0.0]
    assert infos[-1]["reward_components"][2]["value"] > 0

    # at an early PRS stage the weights are that stage's, and still sum to one
    infos, _ = play(env, [None] * 3, options={"prs_stage": 1.5})
    check_schema(infos[-1])
    assert infos[-1]["reward_components"][2]["weight"] == pytest.approx(0.35)

    # binary reward mode pays 0/1, the components still describe the PRS terms
    binary = gym.make("ToolQA-v0", expert=True, reward_mode="binary", **TOOLQA)
    infos, rewards = play(binary, [None] * 3)
    check_schema(infos[-1])
    assert rewards[-1] == 1.0
    env.close()
    binary.close()


@pytest.mark.engine
def test_the_final_info_of_an_alfworld_episode_carries_the_embodied_terms():
    pytest.importorskip("alfworld")
    env = gym.make("ALFWorld-v0", expert=True)
    infos, _ = play(env, [None] * 60)
    check_schema(infos[-1])
    assert infos[-1]["success"] and [c["type"] for c in infos[-1]["reward_components"]] == [
        "shaping", "shaping", "progress", "success"]
    env.close()


def test_a_user_spec_term_with_no_known_kind_is_shaping():
    from agentgym.rewards.prs import PRSSpec

    spec = PRSSpec(stages=(("format",), ("style",)), weights={"format": 0.5, "style": 0.5},
                   aggregate={"format": "mean", "style": "mean"})
    parts = reward_components(spec, {"format": 1.0, "style": 0.4})
    assert parts[1]["type"] == "shaping" and parts[1]["contribution"] == pytest.approx(0.2)
