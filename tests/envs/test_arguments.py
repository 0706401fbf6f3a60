"""Arguments every env shares are checked by type and range, with one line naming the argument."""

import math

import gymnasium as gym
import pytest

import agentgym  # noqa: F401
from agentgym.envs.arguments import accepted_keywords
from agentgym.envs.toolqa.env import ToolQAEnv

# Every family of registered env; each checks the shared arguments before it starts an engine.
ENV_IDS = ["ToolQA-v0", "ToolQA-LongForm-v0", "ALFWorld-v0", "ScienceWorld-v0", "TextWorld-v0"]


@pytest.mark.parametrize("env_id", ENV_IDS)
@pytest.mark.parametrize("max_turns", [1.5, -5, 0, True, "5", math.nan])
def test_max_turns_must_be_a_positive_int_on_every_env(env_id, max_turns):
    with pytest.raises(ValueError, match=r"max_turns must be a positive int \(1, 2, \.\.\.\), got"):
        gym.make(env_id, max_turns=max_turns)


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_an_unknown_keyword_is_named_with_the_keywords_the_env_takes(env_id):
    with pytest.raises(TypeError, match=r"unknown keyword argument 'max_turn' \(did you mean 'max_turns'\?\); "
                                        r"it takes: .*max_turns.*prs_stage"):
        gym.make(env_id, max_turn=5)


def test_accepted_keywords_cover_the_env_and_the_shared_ones():
    names = accepted_keywords(ToolQAEnv)
    assert names[:3] == ["split", "answer_form", "question_kinds"]
    assert {"top_k", "max_turns", "reward_mode", "prs_stage", "system_prompt"} <= set(names)


@pytest.mark.parametrize("stage", [math.nan, math.inf, -5, -0.5, "1", True])
def test_a_nonsense_prs_stage_is_refused_where_it_is_given(stage):
    with pytest.raises(ValueError, match=r"^prs_stage must be None \(the final stage\) or a finite number >= 0"):
        gym.make("ToolQA-v0", prs_stage=stage)
    env = gym.make("ToolQA-v0")
    with pytest.raises(ValueError, match=r"^prs_stage must be"):
        env.unwrapped.set_prs_stage(stage)
    with pytest.raises(ValueError, match=r'^options\["prs_stage"\] must be None \(the final stage\)'):
        env.reset(seed=0, options={"prs_stage": stage})


@pytest.mark.parametrize("stage, wrong_answer_return", [(0, 1.0), (1.5, 0.2167), (7, 0.1), (None, 0.1)])
def test_prs_stages_in_range_and_past_the_last_play(stage, wrong_answer_return):
    env = gym.make("ToolQA-v0")
    env.reset(seed=0, options={"prs_stage": stage})
    _, _, _, _, info = env.step("<answer>wrong</answer>")
    assert info["episode_return"] == pytest.approx(wrong_answer_return, abs=1e-4)  # 7: the last stage


@pytest.mark.parametrize("top_k", [0, -1, 11, 10**9, 2.5, True, "3"])
def test_toolqa_top_k_is_an_int_from_1_to_10(top_k):
    with pytest.raises(ValueError, match=r"top_k must be an int from 1 to 10, got"):
        gym.make("ToolQA-v0", top_k=top_k)


def test_toolqa_corpus_without_dataset_is_refused(tmp_path):
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text('{"id": "d1", "contents": "Paris is the capital of France."}\n')
    with pytest.raises(ValueError, match=r"corpus= needs dataset= too"):
        gym.make("ToolQA-v0", corpus=str(corpus))



@pytest.mark.parametrize("env_id", ["ALFWorld-v0", "ScienceWorld-v0", "TextWorld-v0"])
def test_constrained_choice_needs_the_choice_format(env_id):
    with pytest.raises(ValueError, match=r"^constrained_choice=True needs action_format='choice'"):
        gym.make(env_id, constrained_choice=True)
    with pytest.raises(ValueError, match=r"^constrained_choice must be True or False, got 1"):
        gym.make(env_id, action_format="choice", constrained_choice=1)


def test_constrained_choice_lists_the_numbers_of_the_choices():
    env = gym.make("ALFWorld-v0", data_path="generated:2:tiny", action_format="choice", constrained_choice=True)
    _, info = env.reset(seed=0)
    assert info["allowed_replies"] == [str(k) for k in range(1, len(info["admissible_actions"]) + 1)]
    _, _, _, _, info = env.step("1")
    assert info["action_valid"] and info["allowed_replies"] == [
        str(k) for k in range(1, len(info["admissible_actions"]) + 1)]
    _, info = gym.make("ALFWorld-v0", data_path="generated:2:tiny", action_format="choice").reset(seed=0)
    assert "allowed_replies" not in info
    env.close()
