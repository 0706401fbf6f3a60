import subprocess
import sys

from agentgym.cli import main
from agentgym.envs.spaces import UnicodeText
from agentgym.prompts import episode_to_messages


def test_list_prints_every_registered_id(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    for env_id in ("ToolQA-v0", "ToolQA-LongForm-v0", "ALFWorld-v0", "ScienceWorld-v0", "ScienceWorld-Boil-v0"):
        assert env_id in out


def test_demo_prints_a_solved_transcript(capsys):
    assert main(["demo", "ToolQA-v0", "--seed", "3"]) == 0
    out = capsys.readouterr().out
    assert "[action]" in out and "success=True" in out


def test_play_reads_actions_from_a_terminal():
    script = "<tool_call>{\"name\": \"search\", \"arguments\": {\"query\": \"founded\"}}</tool_call>\n:actions\n<answer>x</answer>\n"
    done = subprocess.run([sys.executable, "-m", "agentgym.cli", "play", "ToolQA-v0", "--seed", "1"], input=script,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "<tool_response>" in done.stdout and "Episode over: success=False" in done.stdout


def test_unicode_text_space():
    space = UnicodeText(max_length=50)
    assert space.contains("") and space.contains("héllo 中 <answer>\n")
    assert not space.contains("x" * 51) and not space.contains(b"bytes") and not space.contains("\ud800")
    samples = [space.sample() for _ in range(20)]
    assert all(space.contains(s) for s in samples) and max(map(len, samples)) <= 50


def test_episode_messages_roles_alternate():
    msgs = episode_to_messages("sys", ["o0", "o1"], ["a0", "a1"])
    assert [m["role"] for m in msgs] == ["system", "user", "assistant", "user", "assistant"]
