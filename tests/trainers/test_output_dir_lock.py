"""Trainers take their output directory's lock before writing anything in it."""

import subprocess
import sys

import pytest
import sft
from trainer_helpers import TOOLQA_SMALL, small_config

from agentgym.locks import DirectoryInUse
from agentgym.train.base.flags import build
from agentgym.train.config.tree import SFTRunConfig
from agentgym.train.loop import train

HOLD = "import sys; from agentgym.locks import lock_dir; lock_dir(sys.argv[1]); print('held', flush=True); sys.stdin.read()"


def test_a_trainer_refuses_an_output_dir_another_process_writes(tmp_path):
    run_dir, sft_dir = tmp_path / "run", tmp_path / "sft"
    holders = [subprocess.Popen([sys.executable, "-c", HOLD, str(d)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                text=True) for d in (run_dir, sft_dir)]
    try:
        assert all(p.stdout.readline().strip() == "held" for p in holders)
        with pytest.raises(DirectoryInUse, match=f"pid {holders[0].pid}"):
            train(small_config(tmp_path))
        with pytest.raises(DirectoryInUse, match=f"pid {holders[1].pid}"):
            sft.main(build(SFTRunConfig, progress=False, env_kwargs=TOOLQA_SMALL, num_steps=1, num_episodes=2,
                           batch_size=2, output_dir=str(sft_dir), quiet=True))
        assert sorted(p.name for p in run_dir.iterdir()) == [".agentgym.lock"]  # nothing written
        assert sorted(p.name for p in sft_dir.iterdir()) == [".agentgym.lock"]
    finally:
        for p in holders:
            p.stdin.close()
            p.wait(timeout=30)
