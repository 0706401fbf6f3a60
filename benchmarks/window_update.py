"""One RL update on a windowed ALFWorld batch: the way the trainers run it against the way it ran
before, on the same batch and weights, in one run.

    python benchmarks/window_update.py                                  # tiny-small, the tiny ALFWorld preset
    python benchmarks/window_update.py --model runs/sft/final --env-kwargs '{"max_turns": 15}'

In the window layout a sample is the system prompt, one observation (with ALFWorld's admissible
list, hundreds of tokens) and a reply of a few tokens. The update now (``train_step``) computes the
policy's logprobs at the reply tokens only and puts samples of similar length in one micro-batch;
the reference sends every position through the output layer and its log-softmax, and micro-batches
samples in the order they came. The script collects one GRPO batch (``--groups`` x ``--group-size``
episodes) with the model, then times ``--repeats`` updates each way from the same weights,
alternating which goes first so a load change on the machine hits both, and checks that both give
the same loss and gradient norm. Prints the table; ``--output`` writes JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from unittest import mock


def reference_micro_batches(samples, size):
    """Micro-batches as the update made them before: each kind's samples in their order."""
    by_kind: dict[str, list[int]] = {}
    for i, s in enumerate(samples):
        by_kind.setdefault(s.kind, []).append(i)
    return [idx[j:j + size] for idx in by_kind.values() for j in range(0, len(idx), size)]


def timed_update(model, tokenizer, samples, micro_batch_size: int, reference: bool) -> tuple[float, dict]:
    """Seconds of one ``train_step`` on a copy of ``model`` (learning rate 0) and its metrics."""
    import copy

    import torch

    import agentgym.train.optim.update as update
    from agentgym.train.config.optim import LossConfig

    model = copy.deepcopy(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.0)
    every_position = update.logprobs_and_hidden
    patches = ([mock.patch.object(update, "logprobs_and_hidden", lambda *a, keep=None, **kw: every_position(*a, **kw)),
                mock.patch.object(update, "_micro_batches", reference_micro_batches)] if reference else [])
    for p in patches:
        p.start()
    try:
        t = time.perf_counter()
        metrics = update.train_step(model, opt, samples, LossConfig(beta=0.0), tokenizer.pad_token_id, micro_batch_size)
        return time.perf_counter() - t, metrics
    finally:
        for p in patches:
            p.stop()


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default="tiny-small", help="a built-in tiny model or a checkpoint directory")
    p.add_argument("--env-kwargs", default="{}", help="JSON merged over the model's env kwargs (--preset auto)")
    p.add_argument("--groups", type=int, default=4)
    p.add_argument("--group-size", type=int, default=8)
    p.add_argument("--micro-batch-size", type=int, default=8, help="the trainers' default")
    p.add_argument("--repeats", type=int, default=3, help="updates timed each way")
    p.add_argument("--cpu-threads", type=int, default=1)
    p.add_argument("--seed", type=int, default=3)
    p.add_argument("--output", default=None)
    args = p.parse_args(argv)
    from agentgym.extras import require_for_script

    require_for_script(["torch", "transformers", "tokenizers"], "bench", "benchmarks/window_update.py")
    import torch

    from agentgym.agents.tiny import resolve_model_path
    from agentgym.train.base.models import load_model, load_tokenizer
    from agentgym.train.config.presets import resolve_env_kwargs

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from trainer_throughput import _grpo_batch

    torch.set_num_threads(args.cpu_threads)
    env_id = "ALFWorld-v0"
    _, kwargs = resolve_env_kwargs(env_id, args.model, overrides=json.loads(args.env_kwargs))
    path = resolve_model_path(args.model, (env_id,), kwargs)
    model, tok = load_model(path, "cpu"), load_tokenizer(path)
    torch.manual_seed(args.seed)
    samples, roll = _grpo_batch(model, tok, args.groups, args.group_size, 8, layout="window", env_kwargs=kwargs,
                                seed=args.seed, env_id=env_id)
    lengths = sorted(len(s.input_ids) for s in samples)
    times: dict[str, list[float]] = {"now": [], "reference": []}
    metrics = {}
    for r in range(args.repeats):
        for way in (("now", "reference") if r % 2 == 0 else ("reference", "now")):
            seconds, metrics[way] = timed_update(model, tok, samples, args.micro_batch_size, way == "reference")
            times[way].append(seconds)
    same = (abs(metrics["now"]["loss/policy"] - metrics["reference"]["loss/policy"]) < 1e-5
            and abs(metrics["now"]["grad_norm"] - metrics["reference"]["grad_norm"])
            <= 1e-4 * max(metrics["reference"]["grad_norm"], 1e-8))
    result = {"model": path, "env_kwargs": kwargs, "samples": len(samples), "tokens": sum(lengths),
              "sample_tokens_min_median_max": [lengths[0], lengths[len(lengths) // 2], lengths[-1]],
              "reply_tokens": sum(s.num_loss_tokens for s in samples), "rollout_s": roll["rollout_s"],
              "update_s_now": min(times["now"]), "update_s_reference": min(times["reference"]),
              "speedup": min(times["reference"]) / min(times["now"]), "times": times,
              "same_loss_and_grad_norm": same,
              "grad_norm": [metrics["now"]["grad_norm"], metrics["reference"]["grad_norm"]]}
    for k, v in result.items():
        print(f"{k:30s} {json.dumps(v) if not isinstance(v, float) else f'{v:.4g}'}")
    if args.output:
        with open(args.output, "w") as f:
            json.dump(result, f, indent=1)
    if not same:
        print("the two updates disagree", file=sys.stderr)
        sys.exit(1)
    return result


if __name__ == "__main__":
    main()
