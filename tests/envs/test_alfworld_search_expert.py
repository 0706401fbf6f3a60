"""ALFWorld's searching expert (``expert_policy="search"``) and the played-action marks
(``mark_played=True``) on generated games of the real engine: the expert wins by looking, acts
only on what a policy is shown, and the marks say where it has been."""

import re

import gymnasium as gym
import pytest

pytest.importorskip("alfworld")

import agentgym  # noqa: F401
from agentgym.envs.alfworld.generate import generate
from agentgym.envs.alfworld.search_expert import SearchGoal, search_action
from agentgym.envs.observations import PLAYED_MARK

NUM_GAMES = 24
SEARCH = {"observation": "history+admissible", "action_format": "choice", "mark_played": True,
          "expert_policy": "search"}


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("alfworld_search"))
    generate(out, NUM_GAMES, seed=11, split="train", room="small")
    return out


def make(root, **kwargs):
    return gym.make("ALFWorld-v0", data_path=root, split="train_all", expert=True, **kwargs)


def listed(obs):
    """The numbered admissible lines of an observation: [(number, text, marked)]."""
    return [(int(k), text.removesuffix(PLAYED_MARK), text.endswith(PLAYED_MARK))
            for k, text in re.findall(r"^(\d+)\. (.*)$", obs, re.MULTILINE)]


@pytest.mark.engine
def test_search_expert_wins_by_looking_where_a_policy_would(root):
    """Over every game: the search expert wins, each reply names a listed action, and every 'go to'
    it plays while searching is the first listed 'go to' not marked as visited."""
    env = make(root, max_turns=30, **SEARCH)
    planner = make(root, max_turns=30)
    try:
        won, turns, planner_turns, searched, fallbacks = 0, 0, 0, 0, 0
        for task in range(NUM_GAMES):
            obs, info = env.reset(options={"task_id": task})
            visited, holding = set(), False
            for turn in range(30):
                reply = info["expert_action"]
                lines = listed(obs)
                assert reply in [text for _, text, _ in lines], (task, turn, reply)
                assert {text for _, text, marked in lines if marked} <= visited | {
                    text for _, text, _ in lines if not text.startswith("go to ")}
                if reply.startswith("go to ") and not holding:
                    unvisited = [text for _, text, marked in lines if text.startswith("go to ") and not marked]
                    if unvisited:
                        assert reply == unvisited[0], (task, turn, obs)
                        searched += 1
                    else:  # every receptacle visited (a second object of pick_two): the planner's action
                        fallbacks += 1
                if reply.startswith(("go to ", "open ")):
                    visited.add(reply)
                holding = reply.startswith("take ") or (holding and not reply.startswith("move "))
                number = [k for k, text, _ in lines if text == reply][0]
                obs, _, terminated, truncated, info = env.step(str(number))
                assert info["reward_terms"]["valid"] == 1.0
                if terminated or truncated:
                    break
            won += bool(info["success"])
            turns += info["metrics"]["turns"]
            _, pinfo = planner.reset(options={"task_id": task})
            while True:
                _, _, terminated, truncated, pinfo = planner.step(pinfo["expert_action"])
                if terminated or truncated:
                    break
            planner_turns += pinfo["metrics"]["turns"]
        assert won == NUM_GAMES and fallbacks <= NUM_GAMES // 8
        assert searched > NUM_GAMES  # it searched, rather than walking to the object
        assert turns > planner_turns  # looking costs turns the all-knowing planner does not spend
    finally:
        env.close()
        planner.close()


@pytest.mark.engine
def test_marks_follow_the_commands_played_and_a_copied_mark_is_the_command(root):
    env = make(root, observation="history+admissible", mark_played=True)
    try:
        obs, info = env.reset(options={"task_id": 0})
        assert PLAYED_MARK not in obs  # nothing played yet
        first_go = next(a for a in info["admissible_actions"] if a.startswith("go to "))
        obs, _, _, _, info = env.step(first_go)
        second_go = next(a for a in info["admissible_actions"] if a.startswith("go to ") and a != first_go)
        obs, _, _, _, info = env.step(second_go + PLAYED_MARK)  # copied from the list with its mark
        assert info["reward_terms"]["valid"] == 1.0 and f"> {second_go}\n" in obs
        assert f"- {first_go}{PLAYED_MARK}\n" in obs + "\n"
        obs, _, _, _, _ = env.step("inventory and look")  # not admissible: nothing is marked for it
        assert PLAYED_MARK + "\n" not in obs.split("Admissible actions:")[1].replace(f"{first_go}{PLAYED_MARK}\n", "")
        obs, _, _, _, _ = env.step("look")
        assert f"- look{PLAYED_MARK}" in obs and f"- inventory{PLAYED_MARK}" not in obs
        obs, info = env.reset(options={"task_id": 0})
        assert PLAYED_MARK not in obs  # a new episode starts unmarked
    finally:
        env.close()


def test_bad_values_are_one_line_errors(root):
    with pytest.raises(ValueError, match="expert_policy must be one of"):
        make(root, expert_policy="oracle")
    with pytest.raises(ValueError, match="mark_played must be True or False"):
        make(root, mark_played="yes")
    with pytest.raises(ValueError, match="lists no admissible actions"):
        gym.make("ToolQA-v0", mark_played=True)


def test_search_rules_on_lists_alone():
    heat = SearchGoal("pick_heat_then_place_in_recep", "cup", "cabinet")
    holding = ["go to sinkbasin 1", "take cup 2 from sinkbasin 1"]
    at_microwave = holding + ["go to microwave 1"]
    assert search_action(heat, ["go to cabinet 1", "heat cup 2 with microwave 1"], at_microwave) \
        == "heat cup 2 with microwave 1"
    heated = at_microwave + ["heat cup 2 with microwave 1"]
    assert search_action(heat, ["go to cabinet 1", "go to cabinet 2"], heated) == "go to cabinet 1"
    assert search_action(heat, ["move cup 2 to cabinet 1", "close cabinet 1"], heated + ["go to cabinet 1"]) \
        == "move cup 2 to cabinet 1"
    # a closed goal receptacle is opened first
    assert search_action(heat, ["open cabinet 1", "go to drawer 1"], heated + ["go to cabinet 1"]) == "open cabinet 1"
    # an object the task does not need, taken while exploring, goes back where it was
    stray = ["go to drawer 1", "take pen 1 from drawer 1"]
    assert search_action(heat, ["move pen 1 to drawer 1", "go to cabinet 1"], stray) == "move pen 1 to drawer 1"
    lamp = SearchGoal("look_at_obj_in_light", "book", lamp_class="desklamp")
    assert search_action(lamp, ["use desklamp 1", "go to bed 1"], ["go to desk 1", "take book 1 from desk 1"]) \
        == "use desklamp 1"
    # all visited and nothing in reach: no rule applies (the env then plays the planner's action)
    assert search_action(heat, ["go to cabinet 1", "look"], ["go to cabinet 1", "go to drawer 1"]) is None
    assert SearchGoal.from_pddl_classes("pick_and_place_simple", "cuptype", "cabinettype", None) == \
        SearchGoal("pick_and_place_simple", "cup", "cabinet", None)
