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


@pytest.fixture(autouse=True)
def _one_thread():
    """Tiny models run fastest on one thread, and CI shares its cores."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
