import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))


@pytest.fixture(scope="session")
def tiny_path():
    from agentgym.agents.tiny import build_tiny_model

    return str(build_tiny_model())


@pytest.fixture(scope="session")
def tiny(tiny_path):
    from agentgym.agents import load_model_and_tokenizer

    return load_model_and_tokenizer(tiny_path)
