import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))


@pytest.fixture(scope="session")
def tiny(tiny_path):
    from agentgym.agents import load_model_and_tokenizer

    return load_model_and_tokenizer(tiny_path)


@pytest.fixture(autouse=True)
def _one_thread(one_cpu_thread):
    yield
