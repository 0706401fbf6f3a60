"""GPU check: every trainer path that only a GPU exercises, in one command of at most 8 minutes.

    python benchmarks/gpu_check.py                          # on a CUDA device: the full check
    python benchmarks/gpu_check.py --device cpu --smoke     # the same parts at tiny size on a CPU (CI runs it)

Parts, in this order, each in a process of its own with a time limit (a part that fails or runs out
of time is reported with its error, and the others still run):

- ``tests``: the tests marked ``gpu`` (tests/trainers/test_gpu.py: bf16 autocast with gradient
  checkpointing, the >= 100M-parameter throughput benchmark's MFU).
- ``throughput``: benchmarks/trainer_throughput.py's GPU part: a Qwen2-architecture model built from
  a config (105M parameters), bf16, gradient checkpointing; rollout tokens/s, update step time, MFU.
- ``qwen1.5b``: a model of Qwen2.5-1.5B's shape (benchmarks/configs/qwen2.5-1.5b.json, random
  weights, nothing downloaded) trains two GRPO steps on ToolQA-v0 (its own defaults: ten turns, three
  passages a search) through ``agentgym.train.loop.train`` with bf16 and gradient checkpointing:
  peak GPU memory, s/step, rollout and trained tokens/s, update MFU (second step).
- ``lora1.5b``: the same with ``--lora.r 16`` (adapters on every linear layer, the reference the base
  with them off), and the vLLM generator where vLLM is installed (the adapters reach the engine
  merged): peak GPU memory beside the memory formula's prediction (``agentgym.train.base.memory``).
- ``lora7b``: a model of Qwen2.5-7B's shape (benchmarks/configs/qwen2.5-7b.json) with ``--lora.r 16``:
  the same measurements at the size one GPU trains only with adapters.
- ``async``: ``trainers/grpo.py --async-steps 1`` (rollouts in a thread beside the learner).
- ``fsdp``: ``torchrun --nproc_per_node 1 trainers/grpo.py --fsdp`` (FSDP2 over NCCL on a GPU).
- ``main_job``: the README's main job (``python trainers/vspo.py``) with ``--device``: wall time and
  held-out success beside the README's CPU figures. It runs last and gets what is left of
  ``--budget``; cut short, it reports the steps it made and its s/step.

``--smoke`` runs each part at tiny size (tiny models, one or two steps, a few episodes); on a CPU the
``gpu`` tests skip. Results go to ``--out`` + ``.json`` and ``.md`` (default
``benchmarks/results/gpu_check`` or ``gpu_check_smoke``); the exit status is 1 when a part failed.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BENCHMARKS = ROOT / "benchmarks"
QWEN_CONFIG = BENCHMARKS / "configs" / "qwen2.5-1.5b.json"
QWEN7_CONFIG = BENCHMARKS / "configs" / "qwen2.5-7b.json"
# README, "Set up": the main job on 2 CPU cores
MAIN_JOB_CPU = {"wall_min": 9, "success_before": 0.098, "success_after": 0.320}
# seconds each part may take (the main job: what is left of --budget, at least MAIN_JOB_MIN)
LIMITS = {"tests": 90, "throughput": 75, "qwen1.5b": 150, "lora1.5b": 100, "lora7b": 200, "async": 45, "fsdp": 60}
SMOKE_LIMITS = {name: 60 for name in LIMITS}
MAIN_JOB_MIN = {False: 60, True: 30}
TINY_QWEN = {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
             "num_key_value_heads": 2}


class PartError(Exception):
    """A part's failure, as one line."""


# ----- parts that run as functions in a process of their own -----

def part_throughput(o) -> dict:
    sys.path.insert(0, str(BENCHMARKS))
    import trainer_throughput as tt

    if o.smoke:
        sizes = dict(gpu_groups=1, group_size=2, max_new_tokens=8, gpu_micro_batch_size=4,
                     gpu_model=dict(hidden=64, layers=2, heads=4, intermediate=128))
    else:  # trainer_throughput.py's own defaults
        sizes = dict(gpu_groups=16, group_size=8, max_new_tokens=48, gpu_micro_batch_size=32)
    return tt.bench_gpu(argparse.Namespace(peak_tflops=o.peak_tflops, gpu_device=o.device, **sizes))


def part_qwen(o) -> dict:
    return _qwen_run(o, QWEN_CONFIG, "qwen")


def part_lora_15b(o) -> dict:
    """Qwen2.5-1.5B's shape with ``--lora.r 16``; the generator is vLLM where it is installed (its
    weights then reach the engine merged, under the base's names)."""
    import importlib.util

    vllm = o.device.startswith("cuda") and importlib.util.find_spec("vllm") is not None
    return _qwen_run(o, QWEN_CONFIG, "lora15", lora_r=16, generator="vllm" if vllm else "hf")


def part_lora_7b(o) -> dict:
    """Qwen2.5-7B's shape with ``--lora.r 16``: the size one GPU trains only with adapters."""
    return _qwen_run(o, QWEN7_CONFIG, "lora7", lora_r=16)


def _qwen_run(o, config_file: Path, tag: str, lora_r: int = 0, generator: str = "hf") -> dict:
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, GenerationConfig

    sys.path.insert(0, str(BENCHMARKS))
    import trainer_throughput as tt

    from agentgym.agents.tiny import build_tiny_model
    from agentgym.train.base.flags import build
    from agentgym.train.base.models import load_tokenizer
    from agentgym.train.config.tree import TrainConfig
    from agentgym.train.hooks import TrainerExtension
    from agentgym.train.loop import train
    from agentgym.train.run.setup import memory_estimate

    on_gpu = o.device.startswith("cuda")
    tok = load_tokenizer(str(build_tiny_model(("ToolQA-v0",), "wide")))
    shape = json.loads(config_file.read_text())
    if o.smoke:
        shape.update(TINY_QWEN, vocab_size=len(tok))
    shape.update(eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id, bos_token_id=None)
    cfg = AutoConfig.for_model(**shape)
    model_dir = Path(o.workdir) / f"{tag}-model"
    torch.manual_seed(0)
    with torch.device(o.device):  # random weights, made where they train (fast on a GPU)
        model = AutoModelForCausalLM.from_config(cfg, dtype=torch.bfloat16 if on_gpu else torch.float32)
    n_params = sum(p.numel() for p in model.parameters())
    model.generation_config = GenerationConfig(eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id,
                                               do_sample=True)
    model.save_pretrained(model_dir)
    tok.save_pretrained(model_dir)
    del model
    if on_gpu:
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()

    class TrainedTokens(TrainerExtension):
        """Counts the tokens each update trains on (every position of every sample: what the FLOPs
        are spent on; the loop logs loss tokens only). Adds no loss term: its items are 0."""
        name = "gpu_check_tokens"

        def __init__(self):
            self.tokens = self.samples = 0

        def loss_items(self, sample):
            self.tokens += len(sample.input_ids)
            self.samples += 1
            return 0

        def extra_loss(self, batch):
            return None

        def metrics(self):
            out = {"gpu_check/trained_tokens": float(self.tokens), "gpu_check/samples": float(self.samples)}
            self.tokens = self.samples = 0
            return out

    sizes = dict(num_groups=1, group_size=2, max_new_tokens=8, micro_batch_size=2) if o.smoke else {}
    config = build(TrainConfig, model=str(model_dir), env_id="ToolQA-v0", preset="none", device=o.device,
                   bf16=True, gradient_checkpointing=True, num_steps=2, cold_start={"num_steps": 0}, eval_episodes=0,
                   save_every=0, learning_rate=1e-5 if lora_r else 1e-6, output_dir=str(Path(o.workdir) / f"{tag}-run"),
                   progress=False, quiet=True, tensorboard=False, seed=0, cpu_threads=1 if not on_gpu else 0,
                   lora={"r": lora_r}, generator=generator, **sizes)
    predicted = memory_estimate(config, str(model_dir), 1, on_gpu)
    t0 = time.perf_counter()
    history = train(config, [TrainedTokens()], name="grpo").history
    wall = time.perf_counter() - t0
    h = history[-1]
    trained, samples = h["gpu_check/trained_tokens"], h["gpu_check/samples"]
    name = torch.cuda.get_device_name(o.device) if on_gpu else platform.processor() or "cpu"
    peak = tt.peak_bf16_tflops(name, o.peak_tflops) if on_gpu or o.peak_tflops else None
    flops = tt.update_flops_per_token(n_params, cfg, trained / max(samples, 1)) * trained / h["time/update"]
    if on_gpu:
        measured = torch.cuda.max_memory_allocated(o.device) / 2**30
        memory = {"peak_gpu_memory_gib": measured,
                  "peak_gpu_reserved_gib": torch.cuda.max_memory_reserved(o.device) / 2**30}
    else:
        import resource

        measured = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
        memory = {"peak_process_rss_gib": measured}
    memory["predicted_peak_gib"] = predicted.peak / 2**30
    memory["measured_vs_predicted"] = measured / (predicted.peak / 2**30) - 1
    return {"device": name, "params": n_params, "lora_r": lora_r, "generator": generator, **memory, "s_per_step": h["time/step"],
            "first_step_s": history[0]["time/step"], "rollout_s": h["time/rollout"], "update_s": h["time/update"],
            "rollout_tokens_per_s": h["tokens_per_second"], "trained_tokens": trained,
            "train_tokens_per_s": trained / h["time/update"], "update_tflops": flops / 1e12,
            "update_mfu": flops / (peak * 1e12) if peak else None, "episodes": h["batch/episodes"],
            "mean_turns": h.get("episode/turns"), "wall_s_with_setup_and_save": wall}


FUNCTIONS = {"throughput": part_throughput, "qwen1.5b": part_qwen, "lora1.5b": part_lora_15b, "lora7b": part_lora_7b}


# ----- parts that run a command; the parent reads what it wrote -----

def _gpu_test_files() -> list[str]:
    return sorted(str(p.relative_to(ROOT)) for p in (ROOT / "tests").rglob("test_*.py")
                  if re.search(r"pytest\.mark\.gpu\b", p.read_text()))


def _trainer_flags(o, out: Path, smoke: dict, full: dict) -> list[str]:
    flags = {"device": o.device, "output-dir": str(out), **(smoke if o.smoke else full)}
    if not o.device.startswith("cuda"):
        flags["cpu-threads"] = 1
    return [a for k, v in flags.items() for a in (f"--{k}", str(v))] + ["--no-progress", "--no-tensorboard"]


def _tiny_run(**kw) -> dict:
    """A few steps of the tiny model, no cold start or evaluation."""
    return {"cold-start.num-steps": 0, "eval-episodes": 0, **kw}


def commands(o) -> dict[str, list[str]]:
    w = Path(o.workdir)
    grpo, vspo = str(ROOT / "trainers" / "grpo.py"), str(ROOT / "trainers" / "vspo.py")
    smoke = _tiny_run(**{"num-steps": 2, "num-groups": 1, "group-size": 2, "max-new-tokens": 8})
    return {
        "tests": [sys.executable, "-m", "pytest", "-m", "gpu", "-q", "-p", "no:cacheprovider",
                  f"--junitxml={w / 'tests.xml'}", *_gpu_test_files()],
        "async": [sys.executable, grpo, "--async-steps", "1", *_trainer_flags(
            o, w / "async", smoke, _tiny_run(**{"num-steps": 4, "num-groups": 4, "group-size": 8}))],
        "fsdp": [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "1", grpo, "--fsdp",
                 *_trainer_flags(o, w / "fsdp", smoke,
                                 _tiny_run(**{"num-steps": 3, "num-groups": 4, "group-size": 8}))],
        # the README's main job, on its defaults; the smoke run keeps its shape (cold start, VSPO, held-out
        # evaluation) at a few steps and episodes
        "main_job": [sys.executable, vspo, *_trainer_flags(
            o, w / "main_job", {"cold-start.num-steps": 2, "cold-start.num-episodes": 8, "num-steps": 1,
                                "eval-episodes": 2, "num-groups": 2, "group-size": 2, "max-new-tokens": 16}, {})],
    }


def _metrics_rows(run_dir: Path) -> list[dict]:
    path = run_dir / "metrics.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _steps(rows: list[dict], wanted: int | None = None) -> dict:
    steps = [r for r in rows if "time/step" in r]
    if wanted is not None and len(steps) < wanted:
        raise PartError(f"{len(steps)} of {wanted} steps logged")
    later = steps[1:] or steps
    return {"steps": len(steps), "s_per_step": sum(r["time/step"] for r in later) / max(len(later), 1),
            "first_step_s": steps[0]["time/step"] if steps else None,
            "rollout_tokens_per_s": later[-1].get("tokens_per_second") if later else None}


def read_tests(o, output: str) -> dict:
    import xml.etree.ElementTree as ET

    path = Path(o.workdir) / "tests.xml"
    if not path.exists():
        raise PartError(_error_line(output))
    suite = ET.parse(path).getroot()
    suite = suite if suite.tag == "testsuite" else suite.find("testsuite")
    n = {k: int(suite.get(k, 0)) for k in ("tests", "failures", "errors", "skipped")}
    failed = []
    for case in suite.iter("testcase"):
        bad = case.find("failure") if case.find("failure") is not None else case.find("error")
        if bad is not None:
            failed.append(f"{case.get('name')}: {(bad.get('message') or '').splitlines()[0][:200]}")
    result = {"files": _gpu_test_files(), "passed": n["tests"] - n["failures"] - n["errors"] - n["skipped"],
              "skipped": n["skipped"], "failed": n["failures"] + n["errors"]}
    if failed:
        raise PartError("; ".join(failed))
    if n["tests"] == 0:
        raise PartError("no test marked gpu was collected")
    return result


def read_async(o, output: str) -> dict:
    return _steps(_metrics_rows(Path(o.workdir) / "async"), 2 if o.smoke else 4)


def read_fsdp(o, output: str) -> dict:
    return _steps(_metrics_rows(Path(o.workdir) / "fsdp"), 2 if o.smoke else 3)


def read_main_job(o, output: str, finished: bool = True) -> dict:
    rows = _metrics_rows(Path(o.workdir) / "main_job")
    out = _steps(rows) if rows else {"steps": 0}
    held_out = re.search(r"(\d+) held-out episodes: success ([\d.]+) -> ([\d.]+)", output)
    if held_out:
        out.update(eval_episodes=int(held_out.group(1)), success_before=float(held_out.group(2)),
                   success_after=float(held_out.group(3)))
    elif finished:
        raise PartError(_error_line(output))
    out["cpu_readme"] = MAIN_JOB_CPU
    return out


READERS = {"tests": read_tests, "async": read_async, "fsdp": read_fsdp, "main_job": read_main_job}
ORDER = ["tests", "throughput", "qwen1.5b", "lora1.5b", "lora7b", "async", "fsdp", "main_job"]


# ----- running the parts -----

def _error_line(output: str) -> str:
    lines = [ln.strip() for ln in output.splitlines() if ln.strip()]
    for ln in reversed(lines):
        if re.match(r"^(\w+\.)*\w*(Error|Exception|Interrupt)\b|^error:|^ERROR|^FAILED", ln):
            return ln[:300]
    return (lines[-1][:300] if lines else "no output")


def _run(cmd: list[str], log: Path, limit: float, env: dict) -> tuple[int | None, str, float]:
    """Run ``cmd`` in a session of its own (its children too are ended at ``limit``); returns its
    status (None: out of time), its output and its seconds."""
    t0 = time.perf_counter()
    with open(log, "w") as f:
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=f, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            rc = proc.wait(timeout=limit)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            rc = None
    return rc, log.read_text(errors="replace"), time.perf_counter() - t0


def run_part(name: str, o, limit: float, env: dict) -> dict:
    log = Path(o.workdir) / f"{name}.log"
    if name in FUNCTIONS:
        result_file = Path(o.workdir) / f"{name}.result.json"
        cmd = [sys.executable, str(Path(__file__).resolve()), "--run-part", name, "--result", str(result_file),
               *o.child_argv]
    else:
        cmd = commands(o)[name]
    rc, output, seconds = _run(cmd, log, limit, env)
    row = {"part": name, "seconds": round(seconds, 1), "limit_s": round(limit), "log": str(log)}
    try:
        if rc is None:
            partial = read_main_job(o, output, finished=False) if name == "main_job" else {}
            return {**row, "status": "timeout", "error": f"stopped after {limit:.0f} s: {_error_line(output)}",
                    "result": partial}
        if name in FUNCTIONS:
            if rc != 0 or not result_file.exists():
                raise PartError(_error_line(output))
            result = json.loads(result_file.read_text())
        else:
            result = READERS[name](o, output)
            if rc != 0:
                raise PartError(_error_line(output))
        return {**row, "status": "ok", "result": result}
    except PartError as e:
        return {**row, "status": "failed", "error": str(e), "result": {}}


def child(name: str, o, result_file: str) -> int:
    try:
        result = FUNCTIONS[name](o)
    except Exception as e:  # the parent reports it as the part's error; the traceback stays in its log
        import traceback

        traceback.print_exc()
        print(f"{type(e).__name__}: {e}".splitlines()[0], file=sys.stderr)
        return 1
    Path(result_file).write_text(json.dumps(result, indent=1, default=str))
    return 0


# ----- report -----

SHOWN = {
    "tests": ("passed", "skipped", "failed"),
    "throughput": ("params", "rollout_tokens_per_s", "update_step_s", "train_tokens_per_s", "update_mfu"),
    "qwen1.5b": ("params", "peak_gpu_memory_gib", "peak_process_rss_gib", "predicted_peak_gib", "s_per_step",
                 "rollout_tokens_per_s", "train_tokens_per_s", "update_mfu"),
    "lora1.5b": ("params", "generator", "peak_gpu_memory_gib", "peak_process_rss_gib", "predicted_peak_gib",
                 "measured_vs_predicted", "s_per_step", "train_tokens_per_s", "update_mfu"),
    "lora7b": ("params", "peak_gpu_memory_gib", "peak_process_rss_gib", "predicted_peak_gib", "measured_vs_predicted",
               "s_per_step", "train_tokens_per_s", "update_mfu"),
    "async": ("steps", "s_per_step", "rollout_tokens_per_s"),
    "fsdp": ("steps", "s_per_step", "rollout_tokens_per_s"),
    "main_job": ("steps", "s_per_step", "success_before", "success_after"),
}


def _fmt(v) -> str:
    if isinstance(v, float):
        return f"{v:.3g}" if abs(v) < 1e4 else f"{v:,.0f}"
    if isinstance(v, int) and abs(v) >= 1e4:
        return f"{v / 1e6:.1f}M" if v >= 1e6 else f"{v:,}"
    return str(v)


def markdown(report: dict) -> str:
    env = report["environment"]
    lines = [f"# GPU check ({'smoke, tiny sizes' if report['smoke'] else 'full'}) on {env['device']}", "",
             f"torch {env['torch']}, transformers {env['transformers']}, CUDA {env['cuda']}, Python {env['python']}; "
             f"{report['date']}; {report['wall_s']:.0f} s in all (budget {report['budget_s']} s)", "",
             "| part | status | seconds | numbers | error |", "| --- | --- | --- | --- | --- |"]
    for row in report["parts"]:
        res = row.get("result") or {}
        shown = ", ".join(f"{k} {_fmt(res[k])}" for k in SHOWN[row["part"]] if res.get(k) is not None)
        if row["part"] == "main_job" and res:
            shown += (f" (CPU, README: {MAIN_JOB_CPU['wall_min']} min, success {MAIN_JOB_CPU['success_before']} -> "
                      f"{MAIN_JOB_CPU['success_after']})")
        error = (row.get("error") or "").replace("|", "\\|")
        lines.append(f"| {row['part']} | {row['status']} | {row['seconds']:.0f} | {shown} | {error} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device", default="cuda", help="cuda (default), cuda:N, or cpu (with --smoke)")
    p.add_argument("--smoke", action="store_true", help="every part at tiny size (<= 2 min on a CPU)")
    p.add_argument("--budget", type=float, default=None,
                   help="seconds for the whole check; the main job gets what the others left "
                        "(default 480, 120 with --smoke)")
    p.add_argument("--parts", default=",".join(ORDER), help=f"comma-separated, of {', '.join(ORDER)}")
    p.add_argument("--limit", action="append", default=[], metavar="PART=SECONDS",
                   help="a part's time limit instead of its default (repeatable)")
    p.add_argument("--peak-tflops", type=float, default=None, help="bf16 peak of the GPU, for MFU")
    p.add_argument("--out", default=None, help="path prefix of the .json and .md written "
                                               "(default benchmarks/results/gpu_check[_smoke])")
    p.add_argument("--workdir", default=None, help="where the parts write (default: a temporary folder, removed)")
    p.add_argument("--run-part", default=None, help=argparse.SUPPRESS)
    p.add_argument("--result", default=None, help=argparse.SUPPRESS)
    o = p.parse_args(argv)
    if o.run_part:
        return child(o.run_part, o, o.result)

    asked = [x.strip() for x in o.parts.split(",") if x.strip()]
    limits = dict(SMOKE_LIMITS if o.smoke else LIMITS)
    for item in o.limit:
        part, _, seconds = item.partition("=")
        try:
            limits[part] = float(seconds)
        except ValueError:
            print(f"gpu_check: --limit {item}: give PART=SECONDS, e.g. main_job=900", file=sys.stderr)
            return 2
    unknown = [x for x in asked + list(limits) if x not in ORDER]
    if unknown:
        print(f"gpu_check: unknown part {', '.join(unknown)}; the parts are {', '.join(ORDER)}", file=sys.stderr)
        return 2
    parts = [x for x in ORDER if x in asked]
    cuda = None
    if o.device.startswith("cuda"):
        import torch

        if not torch.cuda.is_available():
            print("gpu_check: no CUDA device here: run `python benchmarks/gpu_check.py --device cpu --smoke` "
                  "for the CPU smoke run", file=sys.stderr)
            return 2
        cuda = torch.version.cuda
        device_name = torch.cuda.get_device_name(o.device)
    else:
        device_name = platform.processor() or platform.machine()
    budget = o.budget or (120.0 if o.smoke else 480.0)
    out = Path(o.out) if o.out else BENCHMARKS / "results" / ("gpu_check_smoke" if o.smoke else "gpu_check")
    own_workdir = o.workdir is None
    o.workdir = o.workdir or tempfile.mkdtemp(prefix="agentgym-gpu-check-")
    Path(o.workdir).mkdir(parents=True, exist_ok=True)
    o.child_argv = ["--device", o.device, "--workdir", o.workdir, *(["--smoke"] if o.smoke else []),
                    *(["--peak-tflops", str(o.peak_tflops)] if o.peak_tflops else [])]
    env = {**os.environ, "PYTHONUNBUFFERED": "1",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    if not o.device.startswith("cuda"):
        env.setdefault("OMP_NUM_THREADS", "1")

    t0 = time.perf_counter()
    rows = []
    try:
        for name in parts:
            left = budget - (time.perf_counter() - t0)
            limit = limits.get(name) or max(MAIN_JOB_MIN[o.smoke], left)
            row = run_part(name, o, limit, env)
            rows.append(row)
            print(f"gpu_check: {name:10s} {row['status']:7s} {row['seconds']:6.1f} s  {row.get('error') or ''}",
                  flush=True)
    finally:
        # the parts' logs stay beside the report; the rest of a temporary workdir (models, checkpoints) goes
        logs = out.parent / f"{out.name}_logs"
        shutil.rmtree(logs, ignore_errors=True)
        logs.mkdir(parents=True)
        for row in rows:
            if Path(row["log"]).exists():
                row["log"] = str(shutil.copy2(row["log"], logs / Path(row["log"]).name))
        if own_workdir:
            shutil.rmtree(o.workdir, ignore_errors=True)

    def _v(pkg):
        try:
            return version(pkg)
        except PackageNotFoundError:
            return None

    report = {"smoke": o.smoke, "device_arg": o.device, "date": time.strftime("%Y-%m-%d %H:%M"),
              "budget_s": budget, "wall_s": time.perf_counter() - t0,
              "environment": {"device": device_name, "torch": _v("torch"), "transformers": _v("transformers"),
                              "cuda": cuda, "python": platform.python_version(), "agentgym": _v("agentgym")},
              "parts": rows}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(report, indent=1, default=str))
    out.with_suffix(".md").write_text(markdown(report))
    print(markdown(report))
    print(f"gpu_check: wrote {out.with_suffix('.json')} and {out.with_suffix('.md')}")
    return 0 if all(r["status"] == "ok" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
