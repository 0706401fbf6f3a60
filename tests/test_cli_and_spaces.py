import subprocess
import sys

import pytest

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


@pytest.mark.parametrize("argv,message", [
    (["demo", "ToolQA-v0", "--kwarg", "max_turn=3"],
     "agentgym demo: --kwarg: ToolQA-v0 has no argument 'max_turn'; did you mean 'max_turns'?"),
    (["demo", "ToolQA-v2"], "agentgym demo: unknown env id 'ToolQA-v2'; did you mean 'ToolQA-v0'? `agentgym list` "
                            "shows the env ids"),
    (["play", "ALFWorld-v1"], "agentgym play: unknown env id 'ALFWorld-v1'; did you mean 'ALFWorld-v0'? `agentgym "
                              "list` shows the env ids"),
])
def test_a_misspelt_env_id_or_kwarg_is_one_short_line_with_the_closest(argv, message):
    with pytest.raises(SystemExit) as caught:
        main(argv)
    assert caught.value.code == message  # the useful part only: no keyword list, no gymnasium wrapping


def test_play_reads_actions_from_a_terminal():
    script = "<tool_call>{\"name\": \"search\", \"arguments\": {\"query\": \"founded\"}}</tool_call>\n:actions\n<answer>x</answer>\n"
    done = subprocess.run([sys.executable, "-m", "agentgym.cli", "play", "ToolQA-v0", "--seed", "1"], input=script,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "<tool_response>" in done.stdout and "Episode over: success=False" in done.stdout


def _help(argv, capsys) -> str:
    with pytest.raises(SystemExit) as done:
        main(argv + ["--help"])
    assert done.value.code == 0
    return capsys.readouterr().out


def test_top_level_help_lists_the_commands_for_users(capsys):
    out = _help([], capsys)
    assert "dispatches" not in out and "main(argv)" not in out  # notes for developers stay in the source
    for command in ("agentgym list", "agentgym play", "agentgym demo", "agentgym eval", "agentgym plot"):
        assert command in out


def test_demo_help_describes_every_argument_with_its_default(capsys):
    out = " ".join(_help(["demo"], capsys).split())
    assert "env_id registered env id (`agentgym list`), or module:EnvId for your own env (default: ToolQA-v0)" in out
    assert "--seed SEED reset seed: the same seed gives the same task (default: 0)" in out
    assert "--kwarg KEY=VALUE env keyword argument, repeatable" in out


def test_eval_help_shows_the_defaults(capsys):
    out = " ".join(_help(["eval"], capsys).split())
    for text in ("--env-id ENV_ID registered env id (`agentgym list`) (default: ToolQA-v0)",
                 "episodes to play (the trainers' held-out evaluation: --eval-episodes 256) (default: 64)", "(default: test)", "(default: 256)", "(default: auto)"):
        assert text in out


def test_play_meta_commands_cost_no_turn_and_actions_show_the_tools():
    script = ":help\n:actions\n<answer>x</answer>\n"
    done = subprocess.run([sys.executable, "-m", "agentgym.cli", "play", "ToolQA-v0", "--seed", "1"], input=script,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    first = done.stdout.splitlines()[0]
    assert ":actions" in first and ":help" in first and ":q" in first
    assert "Meta commands (they cost no turn)" in done.stdout
    assert done.stdout.count("[reward") == 1  # only the answer was an action
    assert "(this env lists none)" not in done.stdout
    assert '<tool_call>{"name": "search", "arguments": {"query": "..."}}</tool_call>' in done.stdout
    assert "search(query, [top_k])" in done.stdout and "calculate(expression)" in done.stdout
    assert "Answer: <answer>...</answer>" in done.stdout and "Episode over: success=False" in done.stdout


def test_unicode_text_space():
    space = UnicodeText(max_length=50)
    assert space.contains("") and space.contains("héllo 中 <answer>\n")
    assert not space.contains("x" * 51) and not space.contains(b"bytes") and not space.contains("\ud800")
    samples = [space.sample() for _ in range(20)]
    assert all(space.contains(s) for s in samples) and max(map(len, samples)) <= 50


def test_episode_messages_roles_alternate():
    msgs = episode_to_messages("sys", ["o0", "o1"], ["a0", "a1"])
    assert [m["role"] for m in msgs] == ["system", "user", "assistant", "user", "assistant"]


def test_episode_messages_cut_long_actions_and_bad_caps_are_clear_errors(capsys):
    from agentgym.leaderboard import RunnerConfig
    from agentgym.prompts import cut_action

    msgs = episode_to_messages("sys", ["o0", "o1"], ["z" * 1000, "ok"], max_action_chars=200)
    assert len(msgs[2]["content"]) <= 200 and "[... 8" in msgs[2]["content"] and msgs[4]["content"] == "ok"
    assert episode_to_messages("sys", ["o0", "o1"], ["z" * 1000], max_action_chars=None)[2]["content"] == "z" * 1000
    assert cut_action(msgs[2]["content"], 200) == msgs[2]["content"]  # cutting again changes nothing
    for bad in (5, 1.5, True):
        with pytest.raises(ValueError, match="max_action_chars must be an integer >= 100 or None"):
            episode_to_messages("sys", ["o0"], [], max_action_chars=bad)
    with pytest.raises(ValueError, match="max_action_chars"):
        RunnerConfig(max_action_chars=0)
    with pytest.raises(SystemExit):
        main(["leaderboard", "--agents", "random", "--envs", "ToolQA-v0", "--out", "x", "--max-action-chars", "7"])
    assert "--max-action-chars must be >= 100, got 7" in capsys.readouterr().err
