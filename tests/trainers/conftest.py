import os
import sys

import pytest

TRAINERS = os.path.join(os.path.dirname(__file__), "..", "..", "trainers")
sys.path.insert(0, os.path.abspath(TRAINERS))

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(autouse=True)
def _one_thread(one_cpu_thread):
    yield


@pytest.fixture(scope="session")
def cold_model(tmp_path_factory):
    """The tiny model after a short cold start: its rollouts have reward spread in some groups."""
    from trainer_helpers import TOOLQA_SMALL

    from agentgym.train.base.flags import build
    from agentgym.train.coldstart.sft import run_sft
    from agentgym.train.config.tree import SFTRunConfig

    out = tmp_path_factory.mktemp("cold")
    return run_sft(build(SFTRunConfig, model="tiny", env_kwargs=TOOLQA_SMALL, num_steps=100, num_episodes=64, seed=0,
                         output_dir=str(out), quiet=True, progress=False, tensorboard=False))
