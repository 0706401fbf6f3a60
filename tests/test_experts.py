import json
import re

import pytest

from agentgym.cli import main
from agentgym.experts import expert_episodes


def test_expert_episodes_are_chat_transcripts_of_solved_tasks():
    records = list(expert_episodes("ToolQA-v0", 5, seed=0, question_kinds=["bridge"]))
    assert len(records) == 5 and len({r["task_id"] for r in records}) == 5
    for r in records:
        roles = [m["role"] for m in r["messages"]]
        assert roles[:2] == ["system", "user"] and roles[-1] == "assistant"
        assert roles.count("assistant") == r["turns"] == 3
        assert r["messages"][-1]["content"].startswith("<answer>") and r["success"]


def test_expert_data_command_writes_jsonl(tmp_path, capsys):
    out = tmp_path / "sft.jsonl"
    assert main(["expert-data", "ToolQA-v0", "--episodes", "4", "--out", str(out)]) == 0
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(lines) == 4 and all(line["env_id"] == "ToolQA-v0" for line in lines)
    assert "wrote 4 episodes" in capsys.readouterr().out


@pytest.mark.engine
def test_expert_replies_with_the_number_of_its_action_in_choice_format():
    # a cold start in choice format must teach the reply a policy is asked for: the action's number
    import gymnasium as gym

    from agentgym.experts import play_expert_episode

    text_env = gym.make("ALFWorld-v0", expert=True)
    choice_env = gym.make("ALFWorld-v0", expert=True, observation="history+admissible", action_format="choice")
    try:
        text = play_expert_episode(text_env, seed=4)
        choice = play_expert_episode(choice_env, seed=4)
    finally:
        text_env.close()
        choice_env.close()
    assert text["success"] and choice["success"] and choice["turns"] == text["turns"]
    commands = [m["content"] for m in text["messages"] if m["role"] == "assistant"]
    observations = [m["content"] for m in choice["messages"] if m["role"] == "user"]
    replies = [m["content"] for m in choice["messages"] if m["role"] == "assistant"]
    for command, observation, reply in zip(commands, observations, replies):
        assert reply.isdigit()
        numbered = dict(re.findall(r"^(\d+)\. (.+)$", observation.split("Admissible actions:")[1], re.M))
        assert numbered[reply] == command  # the number names the planner's command in the list shown


def test_exploring_expert_leaves_its_path_and_labels_every_state_with_the_planners_action():
    # DAgger's mixture: random admissible actions take the episode off the expert's path, and every
    # state, on the path or off it, is labelled with the planner's action from there
    import gymnasium as gym

    from agentgym.experts import expert_reply, play_expert_episode

    kwargs = dict(observation="history+admissible", action_format="choice", data_path="generated:40:small")
    env = gym.make("ALFWorld-v0", expert=True, **kwargs)
    replay = gym.make("ALFWorld-v0", expert=True, **kwargs)
    try:
        plain = play_expert_episode(env, seed=3)
        assert plain["labels"] == [m["content"] for m in plain["messages"] if m["role"] == "assistant"]
        assert not any(plain["explored"])
        record = play_expert_episode(env, seed=3, explore=0.5)
        assert record == play_expert_episode(env, seed=3, explore=0.5)  # seeded
        played = [m["content"] for m in record["messages"] if m["role"] == "assistant"]
        assert any(record["explored"]) and not all(record["explored"])
        # replay the actions played: each label is the expert's reply in the state it was given in,
        # and an explored turn played another admissible action than the label
        obs, info = replay.reset(seed=3)
        for action, label, explored in zip(played, record["labels"], record["explored"]):
            assert label == expert_reply({**info, "action_format": "choice"})
            assert (action != label) == explored
            assert 1 <= int(action) <= len(info["admissible_actions"])
            obs, _, _, _, info = replay.step(action)
    finally:
        env.close()
        replay.close()


def test_exploration_needs_admissible_actions_and_a_fraction():
    import gymnasium as gym

    from agentgym.experts import play_expert_episode

    env = gym.make("ToolQA-v0", expert=True)
    try:
        with pytest.raises(ValueError, match="admissible actions"):
            play_expert_episode(env, seed=0, explore=0.3)
        with pytest.raises(ValueError, match=r"fraction in \[0, 1\]"):
            play_expert_episode(env, seed=0, explore=1.5)
    finally:
        env.close()
