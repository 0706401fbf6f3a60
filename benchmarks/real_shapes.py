"""The README main job's path at real model shapes on the CPU: peak RSS, seconds per phase, tokens/s.

A model of Qwen2.5-0.5B's or 1.5B's shape (``benchmarks/configs``, random weights, nothing downloaded)
with Qwen2.5's vocabulary size goes the way the main job's model goes, through the commands a user
types: ``agentgym train sft`` (the cold start: expert ToolQA episodes with tool calls, rendered by the
tool-calling ChatML template), then ``agentgym train vspo`` (rollout with tool calls, VSPO's resampling
and update, held-out evaluation, checkpoint) for one step, then ``--resume auto`` to a second step.

    python benchmarks/real_shapes.py --shape 0.5b --training full lora --out docs/results/real_shapes.json
    python benchmarks/real_shapes.py --shape 1.5b --training lora --out docs/results/real_shapes.json
    python benchmarks/real_shapes.py --report docs/results/real_shapes.json

The tokenizer is a byte-level BPE trained offline to exactly 151,936 entries (Qwen2.5's embedding rows)
on ToolQA's knowledge base and Python's standard library source: the env's text alone runs out of
merges near 44,000. Each run is its own process (its peak RSS is its own), and each phase is timed
where the trainer calls it, with the process's peak RSS when the phase ended (a peak never falls, so
a phase's number is the run's peak so far). With random weights a reply never ends early and carries
no valid tool call: every turn generates ``--max-new-tokens`` tokens and every episode plays to its
turn limit, the costliest rollout these settings allow. Every return is then 0 and every group tied,
so VSPO would resample each group and then drop it and skip the update; ``--vspo.no-resample`` keeps
them, and the update does all of its work (forward, backward, AdamW step) on zero advantages, at the
cost of a real one. A resampling round costs what a rollout costs.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

CONFIGS = Path(__file__).resolve().parent / "configs"
SHAPES = {"0.5b": "qwen2.5-0.5b.json", "1.5b": "qwen2.5-1.5b.json"}
# A two-layer model with a 4,096-entry vocabulary: the same commands in seconds, for the test that
# keeps this script working.
SMOKE_SHAPE = {"model_type": "qwen2", "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
               "num_attention_heads": 4, "num_key_value_heads": 2, "tie_word_embeddings": True}
QWEN_VOCAB = 151_936


def peak_gib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # Linux: KiB


# ----- the model directory: tokenizer to the full vocabulary, random weights -----

def corpus(full: bool) -> list[str]:
    """ToolQA's knowledge base (20 times the default world) and, for the full vocabulary, the
    standard library's source in a fixed order."""
    import sysconfig

    from agentgym.agents.tiny import _BASE_TEXT
    from agentgym.envs.toolqa.world import build_world

    texts = list(_BASE_TEXT) + [p.text for p in build_world(scale=20 if full else 1).passages]
    if full:
        root = Path(sysconfig.get_paths()["stdlib"])
        texts += [p.read_text(errors="replace") for p in sorted(root.rglob("*.py")) if "site-packages" not in p.parts]
    return texts


def build_model(shape: str, out: Path) -> Path:
    """A saved model of ``shape``'s config with random weights, and its tokenizer; reused when built."""
    if (out / "config.json").exists():
        return out
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, GenerationConfig

    from agentgym.agents.tiny import train_tokenizer

    full = shape != "smoke"
    t = time.perf_counter()
    tokenizer = train_tokenizer(corpus(full), QWEN_VOCAB if full else 4096)
    fields = json.loads((CONFIGS / SHAPES[shape]).read_text()) if full else dict(SMOKE_SHAPE)
    if full and len(tokenizer) != fields["vocab_size"]:
        raise RuntimeError(f"the tokenizer has {len(tokenizer)} entries, the shape {fields['vocab_size']}")
    fields.update(vocab_size=len(tokenizer), eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id,
                  bos_token_id=None)
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(AutoConfig.for_model(**fields), dtype=torch.float32)
    model.generation_config = GenerationConfig(eos_token_id=tokenizer.eos_token_id,
                                               pad_token_id=tokenizer.pad_token_id, do_sample=True)
    tmp = out.with_name(out.name + ".tmp")
    model.save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    os.replace(tmp, out)
    print(f"built {out}: {sum(p.numel() for p in model.parameters()) / 1e6:.0f}M parameters, "
          f"vocabulary {len(tokenizer):,}, {time.perf_counter() - t:.0f}s", flush=True)
    return out


# ----- one command, timed phase by phase, in its own process -----

# (module, attribute, phase): where the trainers call each phase of the main job's path
PHASES = [
    ("agentgym.train.coldstart.sft", "load_model", "load model"),
    ("agentgym.train.coldstart.sft", "training_samples", "expert episodes"),
    ("agentgym.train.coldstart.sft", "sft_step", "sft step"),
    ("agentgym.train.coldstart.sft", "save_final", "save"),
    ("agentgym.train.loop", "set_up", "set-up (model, envs, resume)"),
    ("agentgym.train.loop", "_held_out", "held-out eval"),
    ("agentgym.train.run.pipeline", "StepRollouts.next", "rollout"),
    ("agentgym.train.loop", "_advantages", "advantages"),
    ("agentgym.train.loop", "_learner_update", "update"),
    ("agentgym.train.loop", "save", "checkpoint"),
]


def run_timed(argv: list[str], record_file: str) -> int:
    """``agentgym ARGV`` in this process, each phase of :data:`PHASES` timed; the record to JSON."""
    import importlib

    records: list[dict] = []

    def timed(fn, phase):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            t = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                records.append({"phase": phase, "seconds": time.perf_counter() - t, "peak_rss_gib": peak_gib()})
        return wrapper

    for module, attribute, phase in PHASES:
        owner = importlib.import_module(module)
        *path, name = attribute.split(".")
        for part in path:
            owner = getattr(owner, part)
        setattr(owner, name, timed(getattr(owner, name), phase))
    from agentgym.cli import main

    t = time.perf_counter()
    code = 1
    try:
        code = main(argv)
    finally:
        Path(record_file).write_text(json.dumps({"argv": argv, "rc": code, "seconds": time.perf_counter() - t,
                                                 "peak_rss_gib": peak_gib(), "phases": records}))
    return code


def command(argv: list[str], record_file: Path, threads: int) -> dict:
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)}
    cmd = [sys.executable, __file__, "--timed", str(record_file), "--", *argv]
    print("$ agentgym " + " ".join(argv), flush=True)
    done = subprocess.run(cmd, env=env, check=False)
    if done.returncode != 0:
        raise SystemExit(f"agentgym {' '.join(argv)} failed with exit code {done.returncode}")
    return json.loads(record_file.read_text())


def summed(phases: list[dict]) -> dict[str, dict]:
    """Per phase: calls, seconds in all, and the peak RSS when its last call ended."""
    out: dict[str, dict] = {}
    for p in phases:
        row = out.setdefault(p["phase"], {"calls": 0, "seconds": 0.0, "peak_rss_gib": 0.0})
        row["calls"] += 1
        row["seconds"] = round(row["seconds"] + p["seconds"], 2)
        row["peak_rss_gib"] = round(p["peak_rss_gib"], 3)
    return out


def throughput(metrics_file: Path) -> dict:
    """Rollout and update tokens per second over the RL steps' logged metrics."""
    rows = [json.loads(line) for line in metrics_file.read_text().splitlines() if line.strip()]
    rows = [r for r in rows if "tokens/generated" in r]
    generated = sum(r["tokens/generated"] for r in rows)
    generate_s = sum(r["time/generate"] for r in rows)
    trained = sum(r.get("tokens/loss", 0.0) for r in rows)
    update_s = sum(r["time/update"] for r in rows)
    return {"steps": len(rows), "tokens_generated": generated, "generate_seconds": round(generate_s, 1),
            "rollout_tokens_per_second": round(generated / max(generate_s, 1e-9), 2),
            "loss_tokens": trained, "update_seconds": round(update_s, 1),
            "update_loss_tokens_per_second": round(trained / max(update_s, 1e-9), 2)}


def one_case(shape: str, training: str, work: Path, args) -> dict:
    model = build_model(shape, work / f"model-{shape}")
    lora = ["--lora.r", str(args.rank)] if training == "lora" else []
    case = work / f"{shape}-{training}"
    common = ["--env-id", "ToolQA-v0", "--env-kwargs", json.dumps({"max_turns": args.max_turns}),
              "--no-progress", "--seed", "0", "--micro-batch-size", "1", *lora]
    if args.gradient_checkpointing:
        common.append("--gradient-checkpointing")
    sft = command(["train", "sft", "--model", str(model), "--output-dir", str(case / "sft"),
                   "--num-episodes", "4", "--num-steps", "2", "--batch-size", "2", *common],
                  case / "sft.json", args.threads)
    rl = ["train", "vspo", "--model", str(case / "sft" / "final"), "--output-dir", str(case / "rl"),
          "--num-groups", "2", "--group-size", "2", "--eval-episodes", str(args.eval_episodes),
          "--max-new-tokens", str(args.max_new_tokens), "--vspo.no-resample", *common]
    first = command([*rl, "--num-steps", "1"], case / "rl1.json", args.threads)
    resumed = command([*rl, "--num-steps", "2", "--resume", "auto"], case / "rl2.json", args.threads)
    runs = {"cold start": sft, "VSPO step 1": first, "VSPO step 2 (resumed)": resumed}
    return {"shape": shape, "training": training, "rank": args.rank if training == "lora" else 0,
            "gradient_checkpointing": args.gradient_checkpointing, "threads": args.threads,
            "max_turns": args.max_turns, "max_new_tokens": args.max_new_tokens,
            "runs": {name: {"seconds": round(r["seconds"], 1), "peak_rss_gib": round(r["peak_rss_gib"], 3),
                            "phases": summed(r["phases"])} for name, r in runs.items()},
            "throughput": throughput(case / "rl" / "metrics.jsonl")}


def report(rows: list[dict]) -> str:
    """The rows as docs/benchmarks.md's table: per case and command, its peak and its phases."""
    lines = ["| shape | training | command | peak RSS | seconds | phases (seconds) |", "|---|---|---|---|---|---|"]
    for r in rows:
        kind = f"LoRA r={r['rank']}" if r["training"] == "lora" else "full"
        for name, run in r["runs"].items():
            phases = ", ".join(f"{k} {v['seconds']:.0f}" for k, v in run["phases"].items())
            lines.append(f"| {r['shape']} | {kind} | {name} | {run['peak_rss_gib']:.2f} GiB | {run['seconds']:.0f} | {phases} |")
    lines += ["", "| shape | training | rollout tok/s | update loss tok/s |", "|---|---|---|---|"]
    for r in rows:
        t = r["throughput"]
        kind = f"LoRA r={r['rank']}" if r["training"] == "lora" else "full"
        lines.append(f"| {r['shape']} | {kind} | {t['rollout_tokens_per_second']:.1f} | {t['update_loss_tokens_per_second']:.1f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--timed"]:
        return run_timed(argv[3:], argv[1])
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shape", choices=[*SHAPES, "smoke"], default="0.5b")
    parser.add_argument("--training", nargs="+", choices=["full", "lora"], default=["full", "lora"])
    parser.add_argument("--rank", type=int, default=16, help="LoRA rank")
    parser.add_argument("--gradient-checkpointing", action="store_true")
    parser.add_argument("--max-turns", type=int, default=3, help="ToolQA's turn limit (the env's default: 10)")
    parser.add_argument("--max-new-tokens", type=int, default=48)
    parser.add_argument("--eval-episodes", type=int, default=4)
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--work-dir", default="runs/real_shapes", help="models and runs go here")
    parser.add_argument("--out", default=None, help="add the results to this JSON file (a case replaces its own row)")
    parser.add_argument("--report", nargs="+", default=None, metavar="JSON", help="print the table of --out files and stop")
    args = parser.parse_args(argv)
    if args.report:
        print(report([row for f in args.report for row in json.loads(Path(f).read_text())]))
        return 0
    work = Path(args.work_dir)
    work.mkdir(parents=True, exist_ok=True)
    for training in args.training:
        row = one_case(args.shape, training, work, args)
        print(report([row]), flush=True)
        if args.out:
            out = Path(args.out)
            rows = json.loads(out.read_text()) if out.exists() else []
            rows = [r for r in rows if (r["shape"], r["training"]) != (row["shape"], row["training"])] + [row]
            out.write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
