"""ALFWorld-v0 overhead against the raw engine it wraps.

Replays the planner expert's trajectories, action for action, through the raw engine (textworld's
``PddlEnv`` under alfworld's ``AlfredDemangler``/``AlfredInfos``, asked for the same infos our env
asks for) and through ``ALFWorld-v0``, alternating step by step so machine noise hits both alike,
and reports
per-step time of each and their ratio (target: ours <= 1.05 x raw), our own per-step overhead
(our step time less the engine's step time inside it, timed in place, and the ratio that implies,
which machine noise does not blur), reset time (new game, and the same game again, which keeps
the engine's loaded game) and resident memory per env (in a fresh process).

    python benchmarks/overhead/alfworld.py [--games 6] [--repeats 3] [--data-path DIR]

prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

if __name__ == "__main__":
    # Run as a script, this file's folder leads sys.path and "import alfworld" would find this file.
    _here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _here]


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def expert_trajectories(data_path: str, split: str, num_games: int) -> list[tuple[str, str, list[str]]]:
    """(task_id, game file, expert actions) for one game of each task type, then round-robin."""
    from agentgym.envs.alfworld.env import ALFWorldEnv

    env = ALFWorldEnv(data_path=data_path, split=split, expert=True)
    by_type: dict[str, list] = {}
    for game in env.games:
        by_type.setdefault(game.task_type, []).append(game)
    chosen = []
    while len(chosen) < num_games and any(by_type.values()):
        for games in by_type.values():
            if games and len(chosen) < num_games:
                chosen.append(games.pop(0))
    out = []
    for game in chosen:
        _, info = env.reset(options={"task_id": game.task_id})
        actions, done = [], False
        while not done and info.get("expert_action"):
            actions.append(info["expert_action"])
            _, _, terminated, truncated, info = env.step(actions[-1])
            done = terminated or truncated
        out.append((game.task_id, game.path, actions))
    env.close()
    return out


def replay(raw_engine, ours, game_file: str, task_id: str, actions: list[str]) -> dict[str, float]:
    """Reset both on the game, then step both through the actions, alternating step by step so
    that load from other processes falls on both alike. Returns the seconds spent in each part."""
    t0 = time.perf_counter()
    raw_engine.load(game_file)
    raw_engine.reset()
    t1 = time.perf_counter()
    ours.reset(options={"task_id": task_id})
    t2 = time.perf_counter()
    raw_steps = our_steps = 0.0
    for action in actions:
        a = time.perf_counter()
        raw_engine.step(action)
        b = time.perf_counter()
        ours.step(action)
        raw_steps += b - a
        our_steps += time.perf_counter() - b
    t3 = time.perf_counter()
    ours.reset(options={"task_id": task_id})  # same game again: the engine keeps it loaded
    return {"raw_reset": t1 - t0, "our_reset": t2 - t1, "raw_steps": raw_steps, "our_steps": our_steps,
            "our_same_reset": time.perf_counter() - t3}


_MEMORY_PROBE = """
import json, sys
from benchmark_alfworld import rss_bytes
from agentgym.envs.alfworld.env import ALFWorldEnv
import alfworld.agents.environment.alfred_tw_env, textworld.envs  # imports are not the env's cost
root, split, k, task_ids = sys.argv[1], sys.argv[2], int(sys.argv[3]), json.loads(sys.argv[4])
base = rss_bytes()
envs = [ALFWorldEnv(data_path=root, split=split)]
envs[0].reset(options={"task_id": task_ids[0]})
one = rss_bytes()
for i in range(1, k):
    envs.append(ALFWorldEnv(data_path=root, split=split))
    envs[-1].reset(options={"task_id": task_ids[i % len(task_ids)]})
print(json.dumps([base, one, rss_bytes()]))
"""


def measure_memory(data_path: str, split: str, task_ids: list[str], k: int) -> dict:
    """Resident memory of envs alive at once, each with a game loaded, in a fresh process."""
    import subprocess

    with tempfile.TemporaryDirectory() as tmp:
        # the probe imports this file under a name that does not shadow the alfworld package
        with open(os.path.join(tmp, "benchmark_alfworld.py"), "w") as f, open(os.path.abspath(__file__)) as src:
            f.write(src.read())
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([tmp, os.environ.get("PYTHONPATH", "")])}
        out = subprocess.run([sys.executable, "-c", _MEMORY_PROBE, data_path, split, str(k), json.dumps(task_ids)],
                             capture_output=True, text=True, check=True, env=env, cwd=tmp).stdout
    base, one, many = json.loads(out.strip().splitlines()[-1])
    mb = 2**20
    return {"rss_before_envs_mb": round(base / mb, 1), "rss_first_env_mb": round((one - base) / mb, 1),
            "rss_per_extra_env_mb": round((many - one) / max(k - 1, 1) / mb, 1)}


def measure(data_path: str | None = None, split: str = "train", num_games: int = 6, repeats: int = 3,
            envs_for_memory: int = 3) -> dict:
    """Run the comparison; returns the numbers as a dict (see the module docstring)."""
    from agentgym.envs.alfworld.engine import make_engine
    from agentgym.envs.alfworld.env import ALFWorldEnv
    from agentgym.envs.alfworld.generate import generate

    tmp = None
    if data_path is None:
        tmp = tempfile.TemporaryDirectory(prefix="agentgym-alfworld-bench-")
        data_path = tmp.name
        generate(data_path, 6 * ((num_games + 5) // 6), seed=1234, split=split)
    trajectories = expert_trajectories(data_path, split, num_games)
    raw_engine, _ = make_engine(expert=False)
    ours = ALFWorldEnv(data_path=data_path, split=split)
    # Time the engine's own step inside our env too: what remains of our step time is our overhead,
    # a number machine noise cannot blur the way it blurs two separate timings.
    inside = [0.0]
    engine_step = ours._raw_engine.step

    def timed_step(command):
        t = time.perf_counter()
        try:
            return engine_step(command)
        finally:
            inside[0] += time.perf_counter() - t

    ours._raw_engine.step = timed_step
    raw_step, our_step, raw_reset, our_reset, our_same_reset, overhead = [], [], [], [], [], []
    steps = sum(len(a) for _, _, a in trajectories)
    for _ in range(repeats):
        raw_total = our_total = 0.0
        inside[0] = 0.0
        for task_id, game_file, actions in trajectories:
            t = replay(raw_engine, ours, game_file, task_id, actions)
            raw_total += t["raw_steps"]
            our_total += t["our_steps"]
            raw_reset.append(t["raw_reset"])
            our_reset.append(t["our_reset"])
            our_same_reset.append(t["our_same_reset"])
        raw_step.append(raw_total / steps)
        our_step.append(our_total / steps)
        overhead.append((our_total - inside[0]) / steps)
    ours.close()
    raw_engine.close()

    memory = measure_memory(data_path, split, [t for t, _, _ in trajectories], envs_for_memory)
    if tmp is not None:
        tmp.cleanup()
    raw_ms, our_ms = statistics.median(raw_step) * 1e3, statistics.median(our_step) * 1e3
    return {
        "games": len(trajectories),
        "steps_per_pass": steps,
        "repeats": repeats,
        "raw_step_ms": round(raw_ms, 3),
        "ours_step_ms": round(our_ms, 3),
        "step_ratio": round(our_ms / raw_ms, 4),
        "ours_overhead_ms_per_step": round(statistics.median(overhead) * 1e3, 4),
        "overhead_ratio": round((raw_ms + statistics.median(overhead) * 1e3) / raw_ms, 4),
        "raw_reset_s": round(statistics.median(raw_reset), 3),
        "ours_reset_new_game_s": round(statistics.median(our_reset), 3),
        "ours_reset_same_game_s": round(statistics.median(our_same_reset), 3),
        **memory,
    }


def main(argv: list[str] | None = None) -> int:
    from agentgym.extras import require_for_script

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-path", default=None, help="official-layout data root (default: generate games)")
    ap.add_argument("--split", default="train")
    ap.add_argument("--games", type=int, default=6)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--envs-for-memory", type=int, default=3)
    args = ap.parse_args(argv)
    require_for_script(["alfworld", "textworld"], "bench", "benchmarks/overhead/alfworld.py")
    result = measure(args.data_path, args.split, args.games, args.repeats, args.envs_for_memory)
    json.dump(result, sys.stdout, indent=2)
    print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
