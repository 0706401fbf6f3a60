"""benchmarks/gpu_check.py: its CPU smoke run goes through every part (so the GPU check cannot rot
between GPU runs), a part out of time is reported while the next still runs, and the configs are
Qwen2.5's shapes."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "gpu_check.py"
PARTS = ["tests", "throughput", "qwen1.5b", "lora1.5b", "lora7b", "async", "fsdp", "main_job"]


def _check(tmp_path, *args, timeout=400):
    out = tmp_path / "check"
    run = subprocess.run([sys.executable, str(SCRIPT), "--device", "cpu", "--smoke", "--out", str(out), *args],
                         cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    return run, json.loads(out.with_suffix(".json").read_text()), out.with_suffix(".md").read_text()


@pytest.mark.learning
@pytest.mark.multiproc
@pytest.mark.timeout(500)
def test_the_cpu_smoke_run_goes_through_every_part(tmp_path):
    run, report, table = _check(tmp_path)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    rows = {r["part"]: r for r in report["parts"]}
    assert list(rows) == PARTS
    assert all(r["status"] == "ok" for r in rows.values()), {n: r.get("error") for n, r in rows.items()}
    res = {n: r["result"] for n, r in rows.items()}
    # the gpu tests are collected and, without CUDA, skip
    assert "tests/trainers/test_gpu.py" in res["tests"]["files"] and res["tests"]["skipped"] >= 2
    assert res["throughput"]["rollout_tokens_per_s"] > 0 and res["throughput"]["update_step_s"] > 0
    # the 1.5B part at tiny size: two GRPO steps on ToolQA from the config file's shape, tokens counted
    assert res["qwen1.5b"]["trained_tokens"] > 0 and res["qwen1.5b"]["s_per_step"] > 0
    assert res["qwen1.5b"]["peak_process_rss_gib"] > 0
    # the LoRA parts: adapters trained two steps, their peak memory beside the formula's prediction
    for name in ("lora1.5b", "lora7b"):
        assert res[name]["lora_r"] == 16 and res[name]["trained_tokens"] > 0 and res[name]["s_per_step"] > 0
        assert res[name]["predicted_peak_gib"] > 0 and res[name]["measured_vs_predicted"] > -1
    assert res["async"]["steps"] == 2 and res["fsdp"]["steps"] == 2
    assert res["main_job"]["eval_episodes"] == 2 and 0 <= res["main_job"]["success_after"] <= 1
    for name in PARTS:
        assert f"| {name} | ok |" in table
    assert all(Path(r["log"]).exists() for r in rows.values())


@pytest.mark.learning
@pytest.mark.multiproc
def test_a_part_out_of_time_is_reported_and_the_next_still_runs(tmp_path):
    run, report, table = _check(tmp_path, "--parts", "throughput,async", "--limit", "throughput=1")
    assert run.returncode == 1
    (slow, fine) = report["parts"]
    assert slow["part"] == "throughput" and slow["status"] == "timeout" and "stopped after 1 s" in slow["error"]
    assert fine["part"] == "async" and fine["status"] == "ok" and fine["result"]["steps"] == 2
    assert "| throughput | timeout |" in table


@pytest.mark.parametrize("name,low,high", [("qwen2.5-0.5b", 0.49e9, 0.50e9),   # 494M, embeddings tied
                                           ("qwen2.5-1.5b", 1.5e9, 1.6e9),     # 1.54B, embeddings tied
                                           ("qwen2.5-7b", 7.6e9, 7.7e9)])      # 7.62B, its own output layer
def test_the_configs_are_qwen2_5_shaped(name, low, high):
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    cfg = AutoConfig.for_model(**json.loads((ROOT / "benchmarks" / "configs" / f"{name}.json").read_text()))
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(cfg)
    assert type(model).__name__ == "Qwen2ForCausalLM"
    assert low < sum(p.numel() for p in model.parameters()) < high


@pytest.mark.multiproc
def test_without_cuda_the_full_check_says_what_to_run():
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    run = subprocess.run([sys.executable, str(SCRIPT)], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert run.returncode == 2
    assert run.stderr.strip() == ("gpu_check: no CUDA device here: run `python benchmarks/gpu_check.py --device cpu "
                                  "--smoke` for the CPU smoke run")
