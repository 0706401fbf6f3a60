"""Bad arguments get one line naming the problem and a nonzero exit, before anything is played;
an agent none of whose episodes produced an action makes the run fail loudly."""

import json
import socket

import pytest

from agentgym.leaderboard.cli import main as board_main

BASE = {"--agents": "expert", "--envs": "ToolQA-v0", "--limit": "2"}

CASES = [
    ({"--agents": ""}, "empty"),
    ({"--agents": "a="}, "names no agent after '='"),
    ({"--agents": "openai:http://127.0.0.1:9/v1"}, "openai:URL#MODEL"),
    ({"--agents": "no_such_module_xyz:Agent"}, "no_such_module_xyz"),
    ({"--agents": "board_agents:NoSuchClass"}, "NoSuchClass"),
    ({"--envs": "NoSuch-v0"}, "NoSuch-v0"),
    ({"--envs": "no_such_module_xyz:Parity-v0"}, "cannot import 'no_such_module_xyz'"),
    ({"--envs": "board_agents:NoSuchEnv-v0"}, "importing 'board_agents' did not register 'NoSuchEnv-v0'"),
    ({"--envs": ":Parity-v0"}, "give EnvId or module:EnvId"),
    ({"--envs": "CartPole-v1"}, "is not an agentgym env"),
    ({"--env-kwargs": "{bad"}, "--env-kwargs is not JSON"),
    ({"--env-kwargs": "[1, 2]"}, "--env-kwargs must be a JSON object"),
    ({"--env-kwargs": '{"no_such_keyword": 1}'}, "no_such_keyword"),
    ({"--env-kwargs": '{"max_turns": -5}'}, "max_turns"),
    ({"--envs": "ScienceWorld-v0", "--env-kwargs": '{"no_such_keyword": 1}'}, "no_such_keyword"),
    ({"--repeats": "0"}, "--repeats"),
    ({"--num-envs": "0"}, "--num-envs"),
    ({"--agent-timeout": "-1"}, "--agent-timeout"),
    ({"--agent-timeout": "nan"}, "--agent-timeout"),
    ({"--limit": "0"}, "--limit"),
    ({"--split": "no_such_split"}, "nothing to play"),
]


@pytest.mark.parametrize("change,says", CASES, ids=[f"{list(c.items())[0]}" for c, _ in CASES])
def test_a_bad_argument_is_one_line_and_a_nonzero_exit(change, says, tmp_path, capsys):
    args = {**BASE, **change, "--out": str(tmp_path / "run")}
    argv = [x for k, v in args.items() for x in (k, v)] + ["--no-progress"]
    assert board_main(argv) == 2
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert len(err.splitlines()) == 1 and says in err and err.startswith("agentgym leaderboard: error:"), err
    assert not (tmp_path / "run" / "summary.json").exists()


def test_an_unreachable_endpoint_fails_the_run_loudly(tmp_path, capsys):
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = tmp_path / "run"
    rc = board_main(["--agents", "expert", f"served=openai:http://127.0.0.1:{port}/v1#m", "--envs", "ToolQA-v0",
                     "--limit", "1", "--no-progress", "--out", str(out)])
    assert rc == 3
    err = capsys.readouterr().err
    assert "served" in err and "every one of its 1 episodes" in err and "cannot reach" in err
    rows = {r["agent"]: r for r in json.load(open(out / "summary.json"))}  # the reports are still written
    assert rows["served"]["outcomes"]["agent_error"] == 1 and rows["expert"]["success"] == 1.0
