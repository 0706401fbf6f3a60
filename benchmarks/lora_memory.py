"""Peak memory of one GRPO-style update at a real model shape, full fine-tuning against LoRA, on the CPU.

Each case runs in a fresh process (its peak RSS is its own): a model of Qwen2.5-0.5B's (or 1.5B's) shape
from ``benchmarks/configs`` with random weights (nothing downloaded) is set up the way the trainers set
it up (``agentgym.train.base.models``: a second, frozen copy for the KL reference in full fine-tuning;
with LoRA the same model with its adapters off), then takes the reference pass, one forward and backward
over a batch of sequences and an AdamW step. It prints peak RSS after each phase and the phase's seconds.

    python benchmarks/lora_memory.py --shape 0.5b --seq-len 256 --batch 2
    python benchmarks/lora_memory.py --shape 0.5b --cases lora --out docs/results/lora_memory.json

The difference between the ``full`` and ``lora`` rows' "model" phase is the reference copy LoRA does
not load, plus the gradients and AdamW state of the frozen weights it does not keep.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

CONFIGS = Path(__file__).resolve().parent / "configs"
SHAPES = {"0.5b": "qwen2.5-0.5b.json", "1.5b": "qwen2.5-1.5b.json"}


def peak_gib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # Linux: KiB


def one_case(shape: str, case: str, seq_len: int, batch: int, rank: int, checkpointing: bool) -> dict:
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    from agentgym.agents.lora import adapters_off
    from agentgym.train.base.models import add_adapters, enable_gradient_checkpointing, trainable_parameters
    from agentgym.train.config.lora import LoraConfig
    from agentgym.train.optim.update import logprobs_and_hidden

    torch.manual_seed(0)
    out: dict = {"shape": shape, "case": case, "seq_len": seq_len, "batch": batch, "rank": rank if case == "lora" else 0,
                 "gradient_checkpointing": checkpointing, "threads": torch.get_num_threads()}
    config = AutoConfig.for_model(**json.loads((CONFIGS / SHAPES[shape]).read_text()))
    t = time.perf_counter()
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    out["parameters"] = sum(p.numel() for p in model.parameters())
    if case == "full":
        reference = AutoModelForCausalLM.from_config(config, dtype=torch.float32).eval().requires_grad_(False)
    else:
        model.requires_grad_(False)
        model = add_adapters(model, LoraConfig(r=rank), str(CONFIGS))
        reference = None
    if checkpointing:
        enable_gradient_checkpointing(model)
    optimizer = torch.optim.AdamW(trainable_parameters(model), lr=1e-5)
    out["trained_parameters"] = sum(p.numel() for p in trainable_parameters(model))
    phases = {"model": (time.perf_counter() - t, peak_gib())}

    ids = torch.randint(0, config.vocab_size, (batch, seq_len))
    mask = torch.ones_like(ids)
    keep = torch.zeros(batch, seq_len - 1, dtype=torch.bool)
    keep[:, seq_len // 2:] = True  # the reply: the second half of each sequence
    t = time.perf_counter()
    with torch.no_grad():
        if reference is not None:
            ref = logprobs_and_hidden(reference, ids, mask, keep=keep)[0]
        else:
            with adapters_off(model):
                ref = logprobs_and_hidden(model, ids, mask, keep=keep)[0]
    phases["reference"] = (time.perf_counter() - t, peak_gib())
    t = time.perf_counter()
    model.train()
    lp = logprobs_and_hidden(model, ids, mask, keep=keep)[0]
    d = (ref - lp)[keep]
    loss = -(lp[keep]).mean() + 0.01 * (torch.exp(d) - d - 1).mean()
    loss.backward()
    phases["forward_backward"] = (time.perf_counter() - t, peak_gib())
    t = time.perf_counter()
    optimizer.step()
    phases["optimizer"] = (time.perf_counter() - t, peak_gib())
    out["phases"] = {k: {"seconds": round(s, 2), "peak_rss_gib": round(m, 3)} for k, (s, m) in phases.items()}
    out["peak_rss_gib"] = round(peak_gib(), 3)
    return out


def predicted_gib(row: dict) -> float:
    """The memory formula's peak for a measured row (``agentgym.train.base.memory``), in GiB."""
    from transformers import AutoConfig

    from agentgym.train.base.memory import GIB, estimate, shape_of
    from agentgym.train.config.lora import LoraConfig

    config = AutoConfig.for_model(**json.loads((CONFIGS / SHAPES[row["shape"]]).read_text()))
    shape = shape_of(config, LoraConfig(r=row["rank"]) if row["case"] == "lora" else None)
    return estimate(shape, micro_batch=row["batch"], seq_len=row["seq_len"], reply_tokens=row["seq_len"] // 2,
                    reference=True, checkpointing=row["gradient_checkpointing"]).peak / GIB


def table(rows: list[dict]) -> str:
    """The rows as docs/trainers.md's memory table: measured, predicted, error."""
    lines = ["| shape | training | checkpointing | tokens (batch x length) | peak RSS measured | predicted | error |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        p = predicted_gib(r)
        kind = f"LoRA r={r['rank']}" if r["case"] == "lora" else "full"
        lines.append(f"| {r['shape']} | {kind} | {'on' if r['gradient_checkpointing'] else 'off'} | "
                     f"{r['batch']} x {r['seq_len']} | {r['peak_rss_gib']:.2f} GiB | {p:.2f} GiB | "
                     f"{100 * (p / r['peak_rss_gib'] - 1):+.0f}% |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shape", choices=sorted(SHAPES), default="0.5b")
    parser.add_argument("--cases", nargs="+", choices=["full", "lora"], default=["full", "lora"])
    parser.add_argument("--seq-len", type=int, default=256)
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--rank", type=int, default=16, help="LoRA rank")
    parser.add_argument("--gradient-checkpointing", choices=["off", "on", "both"], default="off")
    parser.add_argument("--out", default=None, help="write the results as JSON here")
    parser.add_argument("--report", nargs="+", default=None, metavar="JSON",
                        help="print the memory table of earlier --out files (measured beside predicted) and stop")
    parser.add_argument("--case", default=None, help=argparse.SUPPRESS)  # one case, in this process
    args = parser.parse_args(argv)
    if args.report:
        print(table([row for f in args.report for row in json.loads(Path(f).read_text())]))
        return 0
    if args.case:
        print(json.dumps(one_case(args.shape, args.case, args.seq_len, args.batch, args.rank,
                                  args.gradient_checkpointing == "on")))
        return 0
    rows = []
    modes = ["off", "on"] if args.gradient_checkpointing == "both" else [args.gradient_checkpointing]
    for case, mode in [(c, m) for c in args.cases for m in modes]:
        cmd = [sys.executable, __file__, "--case", case, "--shape", args.shape, "--seq-len", str(args.seq_len),
               "--batch", str(args.batch), "--rank", str(args.rank), "--gradient-checkpointing", mode]
        done = subprocess.run(cmd, capture_output=True, text=True, check=False, env=os.environ.copy())
        if done.returncode != 0:
            print(done.stderr[-3000:], file=sys.stderr)
            return done.returncode
        row = json.loads(done.stdout.strip().splitlines()[-1])
        rows.append(row)
        phases = "  ".join(f"{k} {v['seconds']:.1f}s/{v['peak_rss_gib']:.2f}GiB" for k, v in row["phases"].items())
        row["predicted_peak_gib"] = round(predicted_gib(row), 3)
        print(f"{args.shape} {case:4s} checkpointing {mode:3s} T={args.seq_len} predicted {row['predicted_peak_gib']:.2f} GiB params {row['parameters'] / 1e6:.0f}M trained {row['trained_parameters'] / 1e6:.1f}M"
              f"  peak {row['peak_rss_gib']:.2f} GiB  ({phases})", flush=True)
    if len(rows) == 2 and len(modes) == 1:
        print(f"LoRA saves {rows[0]['peak_rss_gib'] - rows[1]['peak_rss_gib']:.2f} GiB of peak RSS "
              f"({rows[0]['phases']['model']['peak_rss_gib'] - rows[1]['phases']['model']['peak_rss_gib']:.2f} GiB "
              "at set-up: the reference copy)")
    if args.out:
        Path(args.out).write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
