"""verifiers loads our env and its own eval scores it the same as our leaderboard, on one fixed
transcript served by an OpenAI-compatible stub on 127.0.0.1."""

import json
import os

import gymnasium as gym
import pytest

pytest.importorskip("verifiers.legacy")  # verifiers 0.3: 0.4 dropped the classic API (then this skips)
import verifiers as vf  # noqa: E402

import agentgym  # noqa: E402,F401
from agentgym.leaderboard.tasks import enumerate_tasks  # noqa: E402

TOOLQA = {"question_kinds": ["single_hop"], "max_turns": 4}


def fixed_transcript(tasks):
    """Per question: the expert's actions, except one wrong answer and one broken first turn."""
    plans = {}
    for i, task in enumerate(tasks):
        env = gym.make("ToolQA-v0", expert=True, **TOOLQA)
        obs, info = env.reset(options=task.options)
        actions, done = [], False
        while not done:
            actions.append(info["expert_action"])
            _, _, terminated, truncated, info = env.step(actions[-1])
            done = terminated or truncated
        if i == 1:
            actions[-1] = "<answer>not the answer</answer>"
        if i == 2:
            actions = ["no action here", *actions]
        plans[obs] = actions
    return plans


@pytest.mark.network
def test_verifiers_eval_scores_our_env_as_the_leaderboard_does(chat_server, tmp_path, monkeypatch):
    tasks = enumerate_tasks("ToolQA-v0", "valid", TOOLQA, limit=4)
    plans = fixed_transcript(tasks)

    def reply(body):
        messages = body["messages"]
        question = next(m["content"] for m in messages if m["role"] == "user" and m["content"] in plans)
        return plans[question][sum(m["role"] == "assistant" for m in messages)]

    chat_server.reply = reply
    monkeypatch.setenv("AGENTGYM_STUB_KEY", "not-a-secret")

    env = vf.load_environment("agentgym.integrations.verifiers", env="ToolQA-v0", env_kwargs=TOOLQA, split="valid",
                              limit=4)
    assert len(env.eval_dataset) == 4
    client = vf.ClientConfig(api_base_url=chat_server.url, api_key_var="AGENTGYM_STUB_KEY", max_retries=0)
    out = env.evaluate_sync(client=client, model="served-model", max_concurrent=1)["outputs"]
    by_task = {o["info"]["task_id"]: o for o in out}
    assert set(by_task) == {t.task_id for t in tasks}

    from agentgym.cli import main

    board = str(tmp_path / "board")
    main(["leaderboard", "--agents", f"stub=openai:{chat_server.url}#served-model", "--envs", "ToolQA-v0",
          "--split", "valid", "--env-kwargs", json.dumps(TOOLQA), "--limit", "4", "--out", board, "--no-progress"])
    episodes = {}
    for root, _, files in os.walk(board):
        for name in files:
            if name.endswith(".jsonl"):
                with open(os.path.join(root, name)) as f:
                    for line in f:
                        if line.strip():
                            row = json.loads(line)
                            episodes[row["task_id"]] = row
    assert set(episodes) == set(by_task)
    for task_id, row in episodes.items():
        ours = by_task[task_id]
        assert ours["reward"] == pytest.approx(row["prs_return"]), task_id
        assert ours["metrics"]["success"] == float(row["success"])
        for term, value in row["terms"].items():
            assert ours["metrics"][term] == pytest.approx(value)
    # the fixed transcript scores differently across tasks: right, wrong answer, broken turn
    rewards = sorted(o["reward"] for o in out)
    assert rewards[0] < rewards[-1] and sum(o["metrics"]["success"] for o in out) == 3


def test_load_environment_is_the_entry_point_and_rows_are_the_leaderboard_tasks():
    from agentgym.integrations.verifiers import load_environment

    env = load_environment(env_id="ToolQA-v0", env_kwargs=json.dumps(TOOLQA), split="test", limit=3)
    rows = list(env.eval_dataset)
    assert [r["info"]["task_id"] for r in rows] == [t.task_id for t in enumerate_tasks("ToolQA-v0", "test", TOOLQA,
                                                                                        limit=3)]
    assert rows[0]["prompt"][0]["role"] == "system"
