"""``agentgym serve``'s command line: the missing extra and bad arguments are one-line errors."""

import pytest

from agentgym.cli import main


def test_serve_without_the_extra_names_the_extra(monkeypatch):
    monkeypatch.setitem(__import__("sys").modules, "openenv", None)  # as if openenv-core were not installed
    with pytest.raises(SystemExit) as exit_:
        main(["serve", "ToolQA-v0"])
    assert 'pip install "agentgym[serve]"' in str(exit_.value.code) and "openenv" in str(exit_.value.code)


@pytest.mark.parametrize("argv,message", [
    (["NoSuchEnv-v0"], "unknown env id 'NoSuchEnv-v0'"),
    (["ToolQA-v0", "--env-kwargs", "{max_turns: 3}"], "--env-kwargs is not valid JSON"),
    (["ToolQA-v0", "--env-kwargs", "[3]"], "--env-kwargs must be a JSON object"),
    (["ToolQA-v0", "--env-kwargs", '{"max_turns": 0}'], "cannot make ToolQA-v0 with --env-kwargs"),
    (["ToolQA-v0", "--env-kwargs", '{"no_such_kwarg": 1}'], "cannot make ToolQA-v0 with --env-kwargs"),
    (["ToolQA-v0", "--max-sessions", "0"], "--max-sessions must be >= 1"),
    (["ToolQA-v0", "--port", "99999"], "--port must be between 0 and 65535"),
    (["ToolQA-v0", "--port", "-1"], "--port must be between 0 and 65535"),
    # nan and inf would silently never free an idle session
    (["ToolQA-v0", "--session-timeout", "nan"], "--session-timeout must be a finite number of seconds >= 0"),
    (["ToolQA-v0", "--session-timeout", "inf"], "--session-timeout must be a finite number of seconds >= 0"),
    (["ToolQA-v0", "--session-timeout", "-1"], "--session-timeout must be a finite number of seconds >= 0"),
    (["ToolQA-v0", "--max-message-bytes", "0"], "--max-message-bytes must be >= 1"),
])
def test_bad_arguments_are_one_line_errors(argv, message):
    pytest.importorskip("openenv")
    with pytest.raises(SystemExit) as exit_:
        main(["serve", *argv])
    assert str(exit_.value.code).startswith(message)


def test_a_taken_port_is_a_one_line_error():
    pytest.importorskip("openenv")
    import socket

    from agentgym.integrations.serve import bind

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        with pytest.raises(SystemExit, match="cannot listen on 127.0.0.1"):
            bind("127.0.0.1", taken.getsockname()[1])
