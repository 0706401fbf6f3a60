"""An env's parts (agentgym/envs/parts.py): each takes its own keywords and checks them, and gym.make
takes every one of them as it always has."""

import gymnasium as gym
import pytest

import agentgym  # noqa: F401
from agentgym.envs.arguments import accepted_keywords
from agentgym.envs.env_ids import env_keywords
from agentgym.envs.parts import ChoiceSettings, RewardSettings, TextLimits, keywords, take
from agentgym.envs.toolqa.env import ToolQAEnv


@pytest.mark.parametrize("part,kwargs,message", [
    (RewardSettings, {"reward_mode": "dense"}, "reward_mode must be one of"),
    (RewardSettings, {"prs_stage": -1}, "prs_stage must be None"),
    (TextLimits, {"max_turns": 0}, r"max_turns must be a positive int"),
    (TextLimits, {"max_turns": 3, "max_action_chars": 1.5}, r"max_action_chars must be a positive int"),
    (ChoiceSettings, {"observation": "summary"}, "observation must be one of"),
    (ChoiceSettings, {"constrained_choice": True}, "constrained_choice=True needs action_format='choice'"),
])
def test_each_part_refuses_its_own_bad_values_in_one_line(part, kwargs, message):
    with pytest.raises(ValueError, match=message):
        part(**kwargs)


def test_take_removes_a_parts_keywords_and_leaves_the_rest():
    given = {"reward_mode": "binary", "top_k": 2, "history": 1}
    assert take(RewardSettings, given) == RewardSettings(reward_mode="binary")
    assert take(TextLimits, given, max_turns=4) == TextLimits(max_turns=4)
    assert given == {"top_k": 2, "history": 1}


def test_an_env_is_made_of_its_parts_and_keeps_the_attributes_users_read():
    env = gym.make("ToolQA-v0", reward_mode="binary", prs_stage=1, max_turns=3, max_action_chars=500).unwrapped
    assert env.rewards == RewardSettings(reward_mode="binary", prs_stage=1)
    assert env.limits == TextLimits(max_turns=3, max_action_chars=500)
    assert env.choices == ChoiceSettings()
    assert (env.reward_mode, env.prs_stage, env.max_turns, env.max_action_chars) == ("binary", 1, 3, 500)
    assert env.action_space.max_length == 500
    assert env.action_format == "json"  # ToolQA's own action_format, not the choice part's


def test_an_env_without_admissible_actions_takes_the_choice_keywords_at_their_defaults_only():
    gym.make("ToolQA-v0", observation="raw", history=3, mark_played=False)
    with pytest.raises(ValueError, match=r"ToolQAEnv lists no admissible actions, which observation='history\+admissible' shows"):
        gym.make("ToolQA-v0", observation="history+admissible")


def test_the_keywords_an_env_takes_are_its_constructors_and_its_parts():
    names = accepted_keywords(ToolQAEnv)
    assert names[:3] == ["split", "answer_form", "question_kinds"]
    parts = [k for part in (RewardSettings, TextLimits, ChoiceSettings) for k in keywords(part)]
    assert set(parts) <= set(names)
    assert env_keywords("ToolQA-v0") == names
    with pytest.raises(TypeError, match=r"unknown keyword argument 'reward_mod' \(did you mean 'reward_mode'\?\)"):
        gym.make("ToolQA-v0", reward_mod="binary")
