"""Success on training-distribution tasks that neither the cold start nor RL played: checkpoints
compared on the same tasks and seeds, paired.

    python benchmarks/fresh_games.py --cold-start runs/sft/final --seed 0 --skip 400 --episodes 256 \\
        --models runs/sft/final runs/grpo/checkpoints/step_100 --env-kwargs '{"max_turns": 15}'

An RL run draws its tasks from one stream (``agentgym.train.rollout.tasks``): the training split's
tasks without the cold start's, in an order fixed by the run's ``--seed``. Position p of the stream
is the same task for every method run with that seed and cold start, and a run of N steps of G
groups trains on the positions below N x G (VSPO's resampling and DAPO's oversampling take more
positions; ``--skip`` must cover them). The positions from ``--skip`` on are tasks of the training
distribution that the run never played and the cold start never saw. No split gives those:
``--split train`` holds the cold start's own tasks (half of them in a 2,048-task cold start on
4,000 games), and ALFWorld's L0 is made of training games. So this measures what RL learnt about
the training distribution, beside what a held-out level (L1, L2) says about games unlike it.

Each model plays each task once (T=``--temperature``, the trainers' 1.0 by default) from the same
reset seeds and sampling seed, with the env kwargs its directory records (``--env-kwargs`` merges
over them, as in ``agentgym eval``). Prints success and PRS return per model and each model's
paired difference from the first with a 95% interval over tasks; ``--output`` writes JSON.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys


def paired_difference(first: list[float], other: list[float]) -> tuple[float, float]:
    """Mean of ``other - first`` over tasks and the half-width of its 95% interval (normal).

    >>> paired_difference([0, 0, 1, 1], [1, 0, 1, 1])
    (0.25, 0.49)
    """
    d = [b - a for a, b in zip(first, other)]
    n = len(d)
    mean = sum(d) / n
    sd = math.sqrt(sum((x - mean) ** 2 for x in d) / (n - 1)) if n > 1 else float("nan")
    return round(mean, 4), round(1.96 * sd / math.sqrt(n), 4)


def fresh_tasks(cold_start: str, seed: int, skip: int, count: int) -> tuple[dict, list[str]]:
    """The cold start's record and the stream's tasks at positions ``skip .. skip + count - 1``
    for a run with ``--seed seed`` from that cold start."""
    import gymnasium as gym

    import agentgym  # noqa: F401  registers the envs
    from agentgym.train.rollout.tasks import TaskStream

    path = os.path.join(cold_start, "agentgym_sft.json")
    if not os.path.isfile(path):
        raise SystemExit(f"fresh_games.py: {cold_start} has no agentgym_sft.json: give the cold start's directory "
                         "(trainers/sft.py's final/, or a trainer's OUTPUT_DIR/sft/final)")
    record = json.load(open(path))
    env = gym.make(record["env_id"], **record["recipe"]["env_kwargs"])
    try:
        task_ids = env.unwrapped.task_ids(record["split"])
    finally:
        env.close()
    stream = TaskStream(seed, task_ids, record["task_ids"])
    if skip + count > len(stream.pool):
        raise SystemExit(f"fresh_games.py: --skip {skip} + --episodes {count} passes the {len(stream.pool)} tasks "
                         "the stream has before it repeats one")
    return record, [stream.request(p).options["task_id"] for p in range(skip, skip + count)]


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", nargs="+", required=True, help="checkpoint directories; the first is the baseline")
    p.add_argument("--cold-start", required=True, help="the cold start the runs started from (its task record)")
    p.add_argument("--seed", type=int, default=0, help="the RL runs' --seed (their task stream)")
    p.add_argument("--skip", type=int, required=True,
                   help="stream positions the runs played (steps x groups, plus any extra rollouts)")
    p.add_argument("--episodes", type=int, default=256, help="tasks to play, one episode each")
    p.add_argument("--env-kwargs", default="{}", help="JSON merged over each model's recorded env kwargs")
    p.add_argument("--temperature", type=float, default=1.0)
    p.add_argument("--max-new-tokens", type=int, default=8)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--cpu-threads", type=int, default=1)
    p.add_argument("--output", default=None)
    args = p.parse_args(argv)
    from agentgym.extras import require_for_script

    require_for_script(["torch", "transformers", "tokenizers"], "bench", "benchmarks/fresh_games.py")
    import torch

    from agentgym.agents import HFPolicy, SamplingConfig
    from agentgym.train.base.models import load_model, load_tokenizer
    from agentgym.train.config.presets import resolve_env_kwargs
    from agentgym.train.evaluate import evaluate

    record, tasks = fresh_tasks(args.cold_start, args.seed, args.skip, args.episodes)
    env_id, split = record["env_id"], record["split"]
    torch.set_num_threads(args.cpu_threads)
    sampling = SamplingConfig(temperature=args.temperature, max_new_tokens=args.max_new_tokens)
    rows = []
    for model_dir in args.models:
        _, kwargs = resolve_env_kwargs(env_id, model_dir, "auto", json.loads(args.env_kwargs))
        policy = HFPolicy(load_model(model_dir, "cpu", trainable=False), load_tokenizer(model_dir), sampling)
        torch.manual_seed(1_000_003)
        res = evaluate(policy, env_id, {**kwargs, "reward_mode": "prs"}, split, batch_size=args.batch_size,
                       seed=10_000, sampling=sampling, task_ids=tasks, per_episode=True)
        rows.append({"model": model_dir, "env_kwargs": kwargs, "success": res["success_rate"],
                     "prs_return": res["prs_return"], "episodes": res["episodes"]})
    base = [e["success"] for e in rows[0]["episodes"]]
    for row in rows:
        row["success_minus_first"] = paired_difference(base, [e["success"] for e in row["episodes"]])
    result = {"env_id": env_id, "split": split, "cold_start": args.cold_start, "seed": args.seed,
              "positions": [args.skip, args.skip + args.episodes], "tasks": tasks, "models": rows}
    print(f"{env_id} [{split}], stream positions {args.skip}-{args.skip + args.episodes - 1} of --seed {args.seed} "
          f"(tasks neither the cold start nor the first {args.skip} RL groups played), T={args.temperature}")
    for row in rows:
        d, h = row["success_minus_first"]
        print(f"  {row['model']}: success {row['success']:.3f}  PRS return {row['prs_return']:.3f}  "
              f"minus the first {d:+.3f} ± {h:.3f}")
    if args.output:
        with open(args.output, "w") as f:
            json.dump(result, f, indent=1)
    return result


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
