"""``agentgym eval``: what it takes as ``--model``."""

import socket

import pytest


@pytest.fixture
def no_network(monkeypatch):
    """Hub access allowed by the environment (HF_HUB_OFFLINE unset), every connection attempt
    recorded and refused at the socket."""
    for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        monkeypatch.delenv(name, raising=False)
    attempts = []

    def refuse(*args, **kwargs):
        attempts.append(args)
        raise OSError("network use in a test")

    monkeypatch.setattr(socket.socket, "connect", lambda self, *a: refuse(*a))
    monkeypatch.setattr(socket.socket, "connect_ex", lambda self, *a: refuse(*a))
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    return attempts


def test_a_hub_model_name_is_refused_in_one_line_before_any_network_call(no_network, capsys):
    from agentgym.train.evaluate import main

    with pytest.raises(SystemExit) as e:
        main(["--model", "Qwen/Qwen2.5-0.5B-Instruct", "--num-episodes", "1"])
    assert e.value.code == 2
    assert no_network == []
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("agentgym eval: error: --model 'Qwen/Qwen2.5-0.5B-Instruct' is not")
    assert "local Hugging Face checkpoint directory" in err and "nothing is downloaded" in err
