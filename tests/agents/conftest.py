import pytest


@pytest.fixture(scope="session")
def tiny_path():
    from agentgym.agents.tiny import build_tiny_model

    return str(build_tiny_model())
