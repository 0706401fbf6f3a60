"""Episodes per second of the leaderboard against a one-env loop, for a scripted agent.

Both sides play the same episodes: the same tasks (the first ``--episodes`` of an ALFWorld split,
enumerated as the board does), the same reset seeds and the same actions (the board's random
agent, each episode drawing from its own seeded stream). ``loop`` is the plainest evaluation
there is: one ``gym.make`` env in this process, an episode at a time. ``board`` is
:func:`agentgym.leaderboard.runner.run_block` on ``--workers`` process workers (ready-first), its
worker start-up and the JSONL writes included. The two alternate for ``--rounds`` rounds so that
load from other programs on a shared machine falls on both alike; the ratio of the medians is the
number to read: above 1 the board is bound by the engines, not by its own code.

On a shared machine the cores other programs leave free set the ceiling of any speed-up, so each
round also measures it: the same pure-Python work done ``--workers`` times in a row and by a pool
of ``--workers`` processes at once (``cpu_ceiling``). A board ratio near the ceiling means the board
uses what the machine gives it.

    python benchmarks/leaderboard_throughput.py                   # ALFWorld, 16 episodes, 3 rounds
    python benchmarks/leaderboard_throughput.py --episodes 24 --workers 4 --max-turns 20

Writes ``<out>/leaderboard_throughput.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import tempfile
import time

import gymnasium as gym
import numpy as np

import agentgym  # noqa: F401  registers the envs
from agentgym.leaderboard.agents import EpisodeView, RandomAgent
from agentgym.leaderboard.runner import RunnerConfig, episode_seed, run_block
from agentgym.leaderboard.store import Block, RunDir
from agentgym.leaderboard.tasks import enumerate_tasks


def one_env_loop(env_id: str, split: str, tasks, env_kwargs: dict) -> int:
    """Play every task once in one env, an episode at a time; returns the steps taken."""
    agent, steps = RandomAgent(), 0
    env = gym.make(env_id, **env_kwargs)
    try:
        for task in tasks:
            seed = episode_seed(env_id, split, task.task_id, 0)
            obs, info = env.reset(seed=seed, options=dict(task.options))
            view = EpisodeView(env_id, split, task.task_id, 0, info["system_prompt"], [obs], [], info,
                               np.random.default_rng(episode_seed(env_id, split, task.task_id, 0, agent.name)),
                               task.task_type)
            done = False
            while not done:
                action = agent.act([view])[0]
                obs, _, terminated, truncated, info = env.step(action)
                view.actions.append(action)
                view.observations.append(obs)
                view.info = info
                steps += 1
                done = terminated or truncated
    finally:
        env.close()
    return steps


def _cpu(who) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def _burn(n: int) -> int:
    total = 0
    for i in range(n):
        total += i * i
    return total


def cpu_ceiling(workers: int, n: int = 4_000_000) -> float:
    """The speed-up ``workers`` processes get over one on this machine right now (pure CPU work)."""
    import multiprocessing as mp

    with mp.get_context("spawn").Pool(workers) as pool:
        pool.map(_burn, [1000] * workers)  # start the pool outside the timing
        t = time.perf_counter()
        pool.map(_burn, [n] * workers)
        parallel = time.perf_counter() - t
    t = time.perf_counter()
    for _ in range(workers):
        _burn(n)
    return (time.perf_counter() - t) / parallel


def board(env_id: str, split: str, tasks, env_kwargs: dict, workers: int) -> int:
    block = Block("random", env_id, split, [{"task_id": t.task_id, "task_type": t.task_type, "options": t.options}
                                            for t in tasks], 1, env_kwargs)
    with tempfile.TemporaryDirectory() as out:
        run = RunDir(out)
        run.write_block(block)
        run_block(block, RandomAgent(), run, RunnerConfig(num_envs=workers, backend="process", progress=False))
        return sum(r["turns"] for r in run.episodes(block).values())


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--env", default="ALFWorld-v0")
    p.add_argument("--split", default="valid_seen")
    p.add_argument("--episodes", type=int, default=16)
    p.add_argument("--workers", type=int, default=4)
    p.add_argument("--max-turns", type=int, default=20)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--out", default="benchmarks/results")
    args = p.parse_args()
    env_kwargs = {"split": args.split, "max_turns": args.max_turns}
    tasks = enumerate_tasks(args.env, args.split, env_kwargs, limit=args.episodes)
    times: dict[str, list[float]] = {"loop": [], "board": []}
    steps, ceilings, cpu = {}, [], {"loop": [], "board_main": [], "board_workers": []}
    for r in range(args.rounds):
        ceilings.append(cpu_ceiling(args.workers))
        print(f"round {r} cpu ceiling: {ceilings[-1]:.2f}x", flush=True)
        for mode in ("loop", "board") if r % 2 == 0 else ("board", "loop"):
            own, children = _cpu(resource.RUSAGE_SELF), _cpu(resource.RUSAGE_CHILDREN)
            t = time.perf_counter()
            if mode == "loop":
                steps[mode] = one_env_loop(args.env, args.split, tasks, env_kwargs)
            else:
                steps[mode] = board(args.env, args.split, tasks, env_kwargs, args.workers)
            times[mode].append(time.perf_counter() - t)
            own, children = _cpu(resource.RUSAGE_SELF) - own, _cpu(resource.RUSAGE_CHILDREN) - children
            if mode == "loop":
                cpu["loop"].append(own)
            else:  # the board's own process vs its env workers: where the time goes
                cpu["board_main"].append(own)
                cpu["board_workers"].append(children)
            print(f"round {r} {mode:5s}: {len(tasks) / times[mode][-1]:.2f} episodes/s "
                  f"({steps[mode]} steps in {times[mode][-1]:.1f} s)", flush=True)
    if steps["loop"] != steps["board"]:
        raise SystemExit(f"the two sides did different work: {steps}")
    eps = {m: len(tasks) / statistics.median(v) for m, v in times.items()}
    result = {"env": args.env, "split": args.split, "episodes": len(tasks), "steps": steps["loop"],
              "workers": args.workers, "max_turns": args.max_turns, "rounds": args.rounds,
              "episodes_per_s": eps, "ratio": eps["board"] / eps["loop"], "seconds": times,
              "cpu_ceiling": statistics.median(ceilings), "cpu_ceilings": ceilings,
              "cpu_seconds": {k: statistics.median(v) for k, v in cpu.items()},
              "cpus": os.cpu_count(), "load_avg": os.getloadavg(), "python": platform.python_version()}
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "leaderboard_throughput.json"), "w") as f:
        json.dump(result, f, indent=1)
    print("CPU seconds (median): " + ", ".join(f"{k} {v:.1f}" for k, v in result["cpu_seconds"].items()))
    print(f"loop {eps['loop']:.2f} episodes/s, board on {args.workers} process workers {eps['board']:.2f} "
          f"episodes/s: {result['ratio']:.2f}x; the machine's ceiling now: {result['cpu_ceiling']:.2f}x "
          f"(load average {result['load_avg'][0]:.1f} on {result['cpus']} cpus)")


if __name__ == "__main__":
    main()
