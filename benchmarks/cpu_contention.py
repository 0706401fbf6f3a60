"""Two CPU training runs on one machine: seconds per step alone against two side by side.

    python benchmarks/cpu_contention.py                        # default, threads2-spin, threads1; 3 rounds
    python benchmarks/cpu_contention.py --settings default threads2-spin --rounds 5 --out contention.json

Each setting runs ``trainers/sft.py --model tiny-wide`` once alone and then twice at the same time
(two seeds, two output folders). The script watches each run's ``metrics.jsonl`` as it grows, so
it knows when each step ended: a run's s/step is the median ``time/step`` of its steps after the
first few (the expert episodes and model loading are not steps). Side by side, a run that reaches
its first step is stopped until the other reaches its own, and only the steps taken while both
were training count.
Rounds interleave the settings (alone, pair, next setting, ...), so a machine whose load drifts
shifts every setting alike. The number that matters is the ratio: a run's s/step beside a second
run over its s/step alone (2.0: the cores shared fairly; the target is at most 2.5). Each run's
CPU seconds are printed too: spinning OpenMP threads show there as CPU burnt without steps. So is
the machine's 1-minute load average after each measurement: on a machine other jobs load, a second
run of ours is a small share of the contention, and the ratio understates what two runs on a quiet
machine cost each other.

Settings:

- ``default``: the trainer's defaults (threads chosen from the cores this process may use,
  passive OpenMP wait policy).
- ``threadsN``: ``--cpu-threads N`` with the passive wait policy.
- ``threadsN-spin``: ``--cpu-threads N`` with OpenMP's own wait policy (torch imported before
  agentgym, so the passive default never reaches OpenMP): what the trainers did before they chose
  a wait policy (``threads2-spin`` was their default).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SFT = ROOT / "trainers" / "sft.py"
SKIP_STEPS = 5  # warm-up steps left out (allocator, first autograd graph)
POLL_S = 0.01


def _command(setting: str, steps: int, episodes: int, seed: int, out: str) -> list[str]:
    argv = [str(SFT), "--model", "tiny-wide", "--num-steps", str(steps), "--num-episodes", str(episodes),
            "--seed", str(seed), "--output-dir", out, "--no-progress", "--quiet", "--no-tensorboard"]
    found = re.fullmatch(r"threads(\d+)(-spin)?", setting)
    if setting != "default" and found is None:
        raise SystemExit(f"unknown setting {setting!r}: use default, threadsN or threadsN-spin")
    if found:
        argv += ["--cpu-threads", found.group(1)]
    if found and found.group(2):
        # torch (and its OpenMP runtime) loaded before agentgym can choose a wait policy
        code = f"import torch, runpy, sys; sys.argv = {argv!r}; runpy.run_path({str(SFT)!r}, run_name='__main__')"
        return [sys.executable, "-c", code]
    return [sys.executable, *argv]


def _rows(out: str) -> list[dict]:
    path = Path(out, "metrics.jsonl")
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.endswith("}")]


def run_together(setting: str, copies: int, steps: int, episodes: int, root: str) -> dict:
    """``copies`` runs of one setting started at once: each one's s/step over the steps all of them
    were training for, its CPU seconds, and the wall time of all."""
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "OMP_WAIT_POLICY")}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    outs = [tempfile.mkdtemp(prefix=f"{setting}-", dir=root) for _ in range(copies)]
    logs = [open(Path(out, "stderr.txt"), "w") for out in outs]
    t0 = time.perf_counter()
    procs = [subprocess.Popen(_command(setting, steps, episodes, seed, out), env=env, cwd=str(ROOT),
                              stdout=subprocess.DEVNULL, stderr=log) for seed, (out, log) in enumerate(zip(outs, logs))]
    seen: list[list[float]] = [[] for _ in procs]  # when each step's line appeared
    sizes = [0] * len(procs)
    stopped: set[int] = set()
    cpu: dict[int, float] = {}
    while len(cpu) < len(procs):
        for k, (p, out) in enumerate(zip(procs, outs)):
            if p.pid in cpu:
                continue
            path = Path(out, "metrics.jsonl")
            size = path.stat().st_size if path.exists() else 0
            if size != sizes[k]:  # read only when it grew: this loop shares the cores it measures
                sizes[k] = size
                n = path.read_bytes().count(b"\n")
                seen[k] += [time.perf_counter()] * (n - len(seen[k]))
                if n and not all(seen):
                    # a run that reached training waits (stopped) for the others to reach it, so
                    # that their steps overlap however long each took to start
                    os.kill(p.pid, signal.SIGSTOP)
                    stopped.add(p.pid)
            pid, status, usage = os.wait4(p.pid, os.WNOHANG)  # the run's own CPU time, spinning included
            if pid:
                cpu[pid] = usage.ru_utime + usage.ru_stime
                p.returncode = os.waitstatus_to_exitcode(status)
        if stopped and (all(seen) or cpu):  # all are training, or one ended (failed) before it did
            for pid in stopped:
                os.kill(pid, signal.SIGCONT)
            stopped.clear()
        time.sleep(POLL_S)
    wall = time.perf_counter() - t0
    for p, out, log in zip(procs, outs, logs):
        log.close()
        if p.returncode != 0:
            err = Path(out, "stderr.txt").read_text()[-2000:]
            raise SystemExit(f"{setting}: trainers/sft.py failed (rc {p.returncode}):\n{err}")
    # the window in which every run was past its warm-up steps and not yet done
    start = max(s[SKIP_STEPS - 1] for s in seen)
    end = min(s[-1] for s in seen)
    per_run, counted = [], []
    for out, s in zip(outs, seen):
        times = [r["time/step"] for r, t_prev, t in zip(_rows(out)[1:], s, s[1:]) if t_prev >= start and t <= end]
        counted.append(len(times))
        per_run.append(round(statistics.median(times), 4) if times else float("nan"))
    return {"s_per_step": per_run, "steps_counted": counted, "cpu_s": [round(cpu[p.pid], 1) for p in procs],
            "wall_s": round(wall, 1), "load_1min": round(os.getloadavg()[0], 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--settings", nargs="+", default=["default", "threads2-spin", "threads1"])
    parser.add_argument("--rounds", type=int, default=3, help="alone/pair measurements per setting, interleaved")
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--episodes", type=int, default=8, help="expert episodes each run plays first")
    parser.add_argument("--out", default=None, help="also write the results here as JSON")
    args = parser.parse_args()
    for s in args.settings:
        _command(s, 1, 1, 0, "")  # an unknown setting stops the run before the first measurement
    from agentgym.train.base.threads import available_cores

    results: dict[str, dict[str, list]] = {s: {"alone": [], "pair": []} for s in args.settings}
    with tempfile.TemporaryDirectory() as root:
        for r in range(args.rounds):
            for s in args.settings:
                alone = run_together(s, 1, args.steps, args.episodes, root)
                pair = run_together(s, 2, args.steps, args.episodes, root)
                results[s]["alone"].append(alone)
                results[s]["pair"].append(pair)
                print(f"round {r + 1} {s:>14}: alone {alone['s_per_step'][0]:.3f} s/step ({alone['cpu_s'][0]} CPU s), "
                      f"side by side {' and '.join(f'{x:.3f}' for x in pair['s_per_step'])} s/step over "
                      f"{'/'.join(str(c) for c in pair['steps_counted'])} shared steps "
                      f"({' and '.join(str(c) for c in pair['cpu_s'])} CPU s; "
                      f"{max(pair['s_per_step']) / alone['s_per_step'][0]:.1f}x; load average "
                      f"{alone['load_1min']} / {pair['load_1min']})", flush=True)
    print(f"\n{available_cores()} cores available; medians over {args.rounds} rounds of {args.steps} steps")
    print(f"{'setting':>14} {'alone s/step':>13} {'pair s/step':>12} {'slowdown':>9}")
    summary = {}
    for s, res in results.items():
        alone = statistics.median(a["s_per_step"][0] for a in res["alone"])
        pair = statistics.median(x for p in res["pair"] for x in p["s_per_step"])
        summary[s] = {"alone": alone, "pair": pair, "slowdown": pair / alone}
        print(f"{s:>14} {alone:13.3f} {pair:12.3f} {pair / alone:8.1f}x")
    if args.out:
        Path(args.out).write_text(json.dumps({"cores": available_cores(), "steps": args.steps, "rounds": args.rounds,
                                              "summary": summary, "runs": results}, indent=1))


if __name__ == "__main__":
    main()
