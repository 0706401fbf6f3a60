"""Env ids as a person types them: one resolver for every command, which names the closest
registered id when the typed one is not registered (case-insensitive and version-aware)."""

import gymnasium as gym
import pytest

import agentgym  # noqa: F401  registers the envs
from agentgym.envs.env_ids import (
    UnknownEnvId,
    closest_env_id,
    keyword_problem,
    make_error_text,
    registered_env_id,
    require_registered,
)


@pytest.mark.parametrize("typed,closest", [
    ("Toolqa", "ToolQA-v0"),
    ("toolqa-v0", "ToolQA-v0"),
    ("ToolQA-v2", "ToolQA-v0"),
    ("ALFWorld-v1", "ALFWorld-v0"),
    ("alfworld", "ALFWorld-v0"),
    ("ToolQA-Longform", "ToolQA-LongForm-v0"),
    ("TooQA-v0", "ToolQA-v0"),
    ("ScienceWorld-Boill-v0", "ScienceWorld-Boil-v0"),
    ("scienceworld-v3", "ScienceWorld-v0"),
])
def test_the_closest_id_is_case_insensitive_and_version_aware(typed, closest):
    assert closest_env_id(typed) == closest


def test_the_version_typed_picks_among_several_the_nearest_then_the_latest():
    ids = ["Maze-v0", "Maze-v3", "Maze-v5", "Other-v1"]
    assert closest_env_id("maze-v4", ids) == "Maze-v5"  # v3 and v5 tie: the latest
    assert closest_env_id("Maze-v2", ids) == "Maze-v3"
    assert closest_env_id("maze", ids) == "Maze-v5"  # no version typed: the latest, as gymnasium takes it
    assert closest_env_id("Nothing-v0", ids) is None


def test_gymnasiums_own_control_envs_are_never_suggested():
    assert closest_env_id("CartPole-v9") is None  # registered by gymnasium, not a text env for agents


@pytest.mark.parametrize("typed,message", [
    ("ToolQA-v2", "unknown env id 'ToolQA-v2'; did you mean 'ToolQA-v0'? `agentgym list` shows the env ids"),
    ("Toolqa", "unknown env id 'Toolqa'; did you mean 'ToolQA-v0'? `agentgym list` shows the env ids"),
    ("Nope-v0", "unknown env id 'Nope-v0'; `agentgym list` shows the env ids"),
])
def test_an_unknown_id_is_one_line_with_the_closest(typed, message):
    for resolve in (registered_env_id, require_registered):
        with pytest.raises(UnknownEnvId) as caught:
            resolve(typed)
        assert str(caught.value) == message and isinstance(caught.value, ValueError)
    assert registered_env_id("ToolQA-v0") == require_registered("ToolQA-v0") == "ToolQA-v0"


def test_a_module_that_does_not_register_the_name_suggests_the_closest():
    with pytest.raises(UnknownEnvId, match=r"importing 'agentgym' did not register 'ToolQA-v2'; did you mean "
                                           r"'ToolQA-v0'\?"):
        registered_env_id("agentgym:ToolQA-v2")
    assert registered_env_id("agentgym:ToolQA-v0") == "ToolQA-v0"


def test_a_keyword_the_env_does_not_take_names_the_closest_and_makes_nothing():
    assert keyword_problem("ToolQA-v0", ["max_turn"]) == "ToolQA-v0 has no argument 'max_turn'; did you mean 'max_turns'?"
    assert keyword_problem("ToolQA-v0", ["zzz"]).startswith("ToolQA-v0 has no argument 'zzz' (it takes: ")
    assert keyword_problem("ALFWorld-v0", ["max_turns", "split"]) is None


def test_what_gym_make_refused_is_said_without_gymnasiums_wrapping():
    with pytest.raises(TypeError) as caught:
        gym.make("ToolQA-v0", max_turn=3)
    assert "was raised from the environment creator" in str(caught.value)  # gymnasium's text, kwargs and all
    text = make_error_text(caught.value)
    assert text.startswith("ToolQAEnv got unknown keyword argument 'max_turn' (did you mean 'max_turns'?)")
    assert "environment creator" not in text and "\n" not in text
