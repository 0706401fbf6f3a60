import os
import sys

import pytest

TRAINERS = os.path.join(os.path.dirname(__file__), "..", "..", "trainers")
sys.path.insert(0, os.path.abspath(TRAINERS))

# Tiny models run fastest on one thread, and CI shares its cores.
TOOLQA_SMALL = '{"question_kinds": ["single_hop"], "max_turns": 2}'


@pytest.fixture(autouse=True)
def _one_thread():
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
