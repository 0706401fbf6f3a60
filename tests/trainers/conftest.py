import os
import sys

import pytest

TRAINERS = os.path.join(os.path.dirname(__file__), "..", "..", "trainers")
sys.path.insert(0, os.path.abspath(TRAINERS))

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(autouse=True)
def _one_thread():
    """Tiny models run fastest on one thread, and CI shares its cores."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
