import os
import sys

import pytest

TRAINERS = os.path.join(os.path.dirname(__file__), "..", "..", "trainers")
sys.path.insert(0, os.path.abspath(TRAINERS))

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(autouse=True)
def _one_thread(one_cpu_thread):
    yield
