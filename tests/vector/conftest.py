import gymnasium as gym
import pytest
from fixture_env import CountingEnv  # noqa: F401  (tests/vector is on sys.path under pytest)

FIXTURE_ID = "agentgym-test/Counting-v0"
if FIXTURE_ID not in gym.registry:
    gym.register(FIXTURE_ID, entry_point="fixture_env:CountingEnv")


@pytest.fixture
def fixture_id():
    return FIXTURE_ID
