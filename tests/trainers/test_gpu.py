"""GPU path: bf16 autocast and gradient checkpointing. Skipped without CUDA."""

import math

import grpo
import pytest
import torch
from trainer_helpers import TOOLQA_SMALL

from agentgym.train.base.flags import build
from agentgym.train.config.tree import TrainConfig

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")]


def test_grpo_runs_in_bf16_with_gradient_checkpointing(tmp_path):
    history = grpo.main(build(TrainConfig, cold_start={"num_steps": 0}, eval_episodes=0, env_kwargs=TOOLQA_SMALL, num_steps=2,
                                  num_groups=2, group_size=4, max_new_tokens=16, device="cuda", bf16=True,
                                  gradient_checkpointing=True,
                                  output_dir=str(tmp_path), progress=False, quiet=True, tensorboard=False)).history
    assert len(history) == 2 and all(h["tokens_per_second"] > 0 for h in history)
    assert all(math.isfinite(h["grad_norm"]) and math.isfinite(h["loss/policy"]) for h in history)


def test_throughput_benchmark_gpu_part_reports_mfu():
    import argparse
    import os
    import sys

    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks"))
    import trainer_throughput as tt

    args = argparse.Namespace(gpu_groups=2, group_size=4, max_new_tokens=16, gpu_micro_batch_size=8, peak_tflops=None)
    result = tt.bench_gpu(args)
    assert result["params"] >= 100e6
    assert result["update_step_s"] > 0 and result["rollout_tokens_per_s"] > 0
    # the GPUs CI runs on are in the peak table; a share of their peak is a fraction of one
    mfu = result["update_mfu"]
    assert mfu is not None, f"no peak bf16 TFLOPS known for {result['device']}"
    assert math.isfinite(mfu) and 0 < mfu <= 1, mfu
