import json

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
