"""Env steps per second of the vector backends, next to Gymnasium's AsyncVectorEnv and a plain loop.

For each env (ToolQA-v0, ALFWorld-v0, ScienceWorld-v0) and each batch size (1, 2, 4, 8) it runs:

- ``sequential``: the envs made with ``gym.make`` in this process, stepped one after another;
- ``sync``, ``process``, ``ray``: ``agentgym.make_vec`` with that backend;
- ``gym_async``: ``gymnasium.vector.AsyncVectorEnv(shared_memory=False)``;
- ``process_ready``, ``ray_ready``: the process and ray backends driven ready-first with
  ``send()``/``recv()``: each env gets its next action (or its reset) as soon as its own result is
  back, instead of waiting for the whole batch.

Every mode does the same work: each env takes the same number of steps per round (calibrated so
that the sequential loop needs ``--seconds / --rounds``), with the same policy: the env's expert
action where the expert is cheap (ToolQA's oracle tool plan, ScienceWorld's gold path), else a
random admissible action from a per-env random stream (ALFWorld; its planner expert costs seconds a
step). Env i's k-th episode has the same seed in every mode, so every mode plays the same tasks
with the same actions; an episode that ends is reset at once, and reset time counts against the
mode that paid it. The rate is steps over wall time. Lockstep modes step every env, then reset the
finished ones (a reset mask for the vector envs); ready-first modes send each env its next action as
soon as its result is back, and still wait for the slowest env at the end of a round. All modes of
one (env, size) are alive together and measured in interleaved rounds, so that load from other
programs on a shared machine falls on every mode alike. The Ray modes run afterwards in a phase of
their own (Ray's background processes use CPU while Ray is up) with the same work per round. Envs
that are not installed are skipped. Results: ``<out>/vector_throughput.json`` and ``.png``.

    python benchmarks/vector_throughput.py                      # everything, ~30 min on 2 cores
    python benchmarks/vector_throughput.py --envs ToolQA-v0 --sizes 1 4 --seconds 5
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import gymnasium as gym
import numpy as np

import agentgym
from agentgym.extras import require_for_script
from agentgym.vector import AutoresetMode

ENVS = ("ToolQA-v0", "ALFWorld-v0", "ScienceWorld-v0")
MODES = ("sequential", "sync", "process", "ray", "gym_async", "process_ready", "ray_ready")
# Ready-first modes: the same backends driven through send()/recv() instead of lockstep step().
READY_MODES = {"process_ready": "process", "ray_ready": "ray"}
RAY_MODES = ("ray", "ray_ready")
# How each env picks its actions: "expert" reads info["expert_action"], "admissible" draws from
# info["admissible_actions"].
POLICY = {"ToolQA-v0": "expert", "ALFWorld-v0": "admissible", "ScienceWorld-v0": "expert"}
FALLBACK_ACTION = {"ToolQA-v0": "<answer>unknown</answer>", "ALFWorld-v0": "look",
                   "ScienceWorld-v0": "look around"}


def env_kwargs(env_id: str) -> dict:
    return {"expert": True} if POLICY.get(env_id) == "expert" else {}


class Policy:
    """Chooses each env's next action from the last info it produced."""

    def __init__(self, env_id: str, num_envs: int, seed: int = 0):
        self.mode = POLICY.get(env_id, "admissible")
        self.fallback = FALLBACK_ACTION.get(env_id, "look")
        # One stream per env: env i's actions depend on its own history only, so every mode plays
        # the same trajectories whatever order the envs are stepped in.
        self.rngs = [np.random.default_rng((seed, i)) for i in range(num_envs)]
        self.last: list[dict] = [{} for _ in range(num_envs)]

    def observe(self, i: int, info: dict) -> None:
        self.last[i] = info

    def observe_batch(self, infos: dict, env_ids=None) -> None:
        """Take a vector info dict; entry k belongs to env ``env_ids[k]`` (default: env k)."""
        for key in ("expert_action", "admissible_actions"):
            if key in infos:
                for k in np.flatnonzero(infos[f"_{key}"]):
                    i = int(k if env_ids is None else env_ids[k])
                    self.last[i] = {**self.last[i], key: infos[key][k]}

    def act(self, i: int) -> str:
        info = self.last[i]
        if self.mode == "expert" and info.get("expert_action"):
            return info["expert_action"]
        actions = info.get("admissible_actions")
        if actions:
            return str(actions[int(self.rngs[i].integers(len(actions)))])
        return self.fallback


def available(env_id: str) -> str | None:
    """None if the env can be made here, else why not."""
    try:
        env = gym.make(env_id, **env_kwargs(env_id))
        env.close()
        return None
    except (ImportError, gym.error.Error, OSError) as e:
        return f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"


def episode_seed(i: int, k: int) -> int:
    """The seed of env ``i``'s k-th episode, the same in every mode, so all modes play the same
    tasks (ScienceWorld's task loads and episode lengths differ a lot between tasks)."""
    return 1000 * k + i


class SequentialRunner:
    """The baseline: ``n`` envs in this process, stepped one after another, reset when done."""

    def __init__(self, env_id: str, n: int):
        self.envs = [gym.make(env_id, disable_env_checker=True, **env_kwargs(env_id)) for _ in range(n)]
        self.policy = Policy(env_id, n)
        self.episodes = [0] * n
        for i, env in enumerate(self.envs):
            self.policy.observe(i, env.reset(seed=episode_seed(i, 0))[1])

    def batch_step(self) -> int:
        for i, env in enumerate(self.envs):
            _, _, term, trunc, info = env.step(self.policy.act(i))
            if term or trunc:
                self.episodes[i] += 1
                _, info = env.reset(seed=episode_seed(i, self.episodes[i]))
            self.policy.observe(i, info)
        return len(self.envs)

    def run(self, k: int) -> int:
        """Every env takes ``k`` steps (and the resets they lead to); returns the steps taken."""
        return sum(self.batch_step() for _ in range(k))

    def close(self) -> None:
        for env in self.envs:
            env.close()


class VectorRunner:
    """A vector env (ours or Gymnasium's): step every env, then reset the finished ones (reset
    mask) with the same seeds the sequential baseline uses."""

    def __init__(self, env_id: str, n: int, mode: str):
        self.vec = make_vector(env_id, n, mode)
        self.n = n
        self.policy = Policy(env_id, n)
        self.episodes = np.zeros(n, dtype=int)
        _, infos = self.vec.reset(seed=[episode_seed(i, 0) for i in range(n)])
        self.policy.observe_batch(infos)
        self.errors = 0

    def batch_step(self) -> int:
        _, _, term, trunc, infos = self.vec.step([self.policy.act(i) for i in range(self.n)])
        self.errors += int(np.sum(infos.get("_error", np.zeros(self.n, bool))))
        self.policy.observe_batch(infos)
        ended = np.asarray(term | trunc, dtype=bool)
        if ended.any():
            self.episodes += ended
            seeds = [episode_seed(i, int(k)) for i, k in enumerate(self.episodes)]
            _, infos = self.vec.reset(seed=seeds, options={"reset_mask": ended})
            self.policy.observe_batch(infos)
        return self.n

    def run(self, k: int) -> int:
        return sum(self.batch_step() for _ in range(k))

    def close(self) -> None:
        self.vec.close()


class ReadyRunner:
    """An agentgym vector env driven ready-first: ``recv()`` whichever envs are done, send each
    its next action, or its reset (same seeds as the other modes) if its episode ended."""

    def __init__(self, env_id: str, n: int, backend: str):
        self.vec = agentgym.make_vec(env_id, n, backend=backend, **env_kwargs(env_id))
        self.n = n
        self.policy = Policy(env_id, n)
        self.episodes = np.zeros(n, dtype=int)
        self.errors = 0
        self.vec.send_reset(seed=[episode_seed(i, 0) for i in range(n)])

    def run(self, k: int) -> int:
        """Every env takes ``k`` steps, each sent as soon as that env's last result is back; an
        episode that ends is reset at once (and that reset finishes within this call)."""
        budget = np.full(self.n, k)
        idle = [i for i in range(self.n) if i not in self.vec.pending]
        if idle and k > 0:
            self.vec.send([self.policy.act(i) for i in idle], idle)
        steps = 0
        while self.vec.pending:
            batch = self.vec.recv(min_envs=1)
            infos = batch.infos
            self.errors += int(np.sum(infos.get("_error", np.zeros(len(batch.env_ids), bool))))
            to_step, to_reset = [], []
            self.policy.observe_batch(infos, batch.env_ids)
            for j, i in enumerate(batch.env_ids.tolist()):
                if not batch.resets[j]:
                    steps += 1
                    budget[i] -= 1
                if batch.terminated[j] or batch.truncated[j]:
                    to_reset.append(i)
                elif budget[i] > 0:
                    to_step.append(i)
            if to_reset:
                self.episodes[to_reset] += 1
                self.vec.send_reset(to_reset, seed=[episode_seed(i, int(e)) for i, e in enumerate(self.episodes)])
            if to_step:
                self.vec.send([self.policy.act(i) for i in to_step], to_step)
        return steps

    def close(self) -> None:
        self.vec.close()


def make_runner(env_id: str, n: int, mode: str):
    if mode == "sequential":
        return SequentialRunner(env_id, n)
    if mode in READY_MODES:
        return ReadyRunner(env_id, n, READY_MODES[mode])
    return VectorRunner(env_id, n, mode)


def make_vector(env_id: str, n: int, mode: str):
    kwargs = env_kwargs(env_id)
    if mode == "gym_async":
        return gym.vector.AsyncVectorEnv(
            [lambda: gym.make(env_id, disable_env_checker=True, **kwargs)] * n, shared_memory=False,
            autoreset_mode=AutoresetMode.DISABLED)
    return agentgym.make_vec(env_id, n, backend=mode, **kwargs)


def measure(runner, steps_per_env: int, warmup: int) -> tuple[int, float]:
    runner.run(warmup)
    start = time.perf_counter()
    steps = runner.run(steps_per_env)
    return steps, time.perf_counter() - start


def calibrate(env_id: str, n: int, seconds: float, warmup: int) -> int:
    """Steps per env that take the sequential loop about ``seconds``: every mode then does that
    same work (same tasks, same actions) in each round, and its rate is steps over wall time."""
    runner = SequentialRunner(env_id, n)
    try:
        runner.run(warmup)
        start, k = time.perf_counter(), 0
        while k < 2 or time.perf_counter() - start < min(seconds / 3, 10.0):
            runner.run(1)
            k += 1
        per_step = (time.perf_counter() - start) / k
    finally:
        runner.close()
    return max(2, int(seconds / per_step))


def bench_config(env_id: str, n: int, modes, seconds: float, warmup: int, rounds: int,
                 max_live_envs: int, steps_per_env: int | None = None) -> list[dict]:
    """All modes for one (env, n), measured in interleaved rounds so that load from other programs
    on a shared machine falls on every mode alike. In each round every mode makes each env take
    the same number of steps (calibrated so that the sequential loop needs ``seconds / rounds``).
    When that would keep more than ``max_live_envs`` envs alive at once (a JVM each for
    ScienceWorld), modes run one at a time."""
    if steps_per_env is None:
        steps_per_env = calibrate(env_id, n, seconds / rounds, warmup)
    if n * len(modes) > max_live_envs and len(modes) > 1:
        return [row for mode in modes
                for row in bench_config(env_id, n, [mode], seconds, warmup, rounds, max_live_envs, steps_per_env)]
    rows, runners = {}, {}
    for mode in modes:
        rows[mode] = {"env": env_id, "num_envs": n, "mode": mode, "policy": POLICY.get(env_id, "admissible"),
                      "steps_per_env_per_round": steps_per_env, "steps": 0, "seconds": 0.0}
        t0 = time.perf_counter()
        try:
            runners[mode] = make_runner(env_id, n, mode)
            rows[mode]["setup_s"] = time.perf_counter() - t0
        except Exception as e:  # noqa: BLE001  a mode that fails is reported, not fatal
            rows[mode]["error"] = f"{type(e).__name__}: {e}"
    try:
        for _ in range(rounds):
            for mode, runner in runners.items():
                try:
                    steps, elapsed = measure(runner, steps_per_env, warmup)
                    rows[mode]["steps"] += steps
                    rows[mode]["seconds"] += elapsed
                except Exception as e:  # noqa: BLE001
                    rows[mode]["error"] = f"{type(e).__name__}: {e}"
            runners = {m: r for m, r in runners.items() if "error" not in rows[m]}
    finally:
        for runner in runners.values():
            runner.close()
    for mode, row in rows.items():
        if "error" not in row and row["seconds"] > 0:
            row["steps_per_s"] = row["steps"] / row["seconds"]
            row["fault_errors"] = getattr(runners.get(mode), "errors", 0)
    return list(rows.values())


def plot(results: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    env_ids = sorted({r["env"] for r in results}, key=lambda e: ENVS.index(e) if e in ENVS else 99)
    fig, axes = plt.subplots(1, max(1, len(env_ids)), figsize=(5 * max(1, len(env_ids)), 4), squeeze=False)
    for ax, env_id in zip(axes[0], env_ids):
        for mode in MODES:
            rows = sorted((r for r in results if r["env"] == env_id and r["mode"] == mode and "steps_per_s" in r),
                          key=lambda r: r["num_envs"])
            if rows:
                ax.plot([r["num_envs"] for r in rows], [r["steps_per_s"] for r in rows], marker="o", label=mode,
                        color=f"C{MODES.index(mode)}")
        ax.set_title(env_id)
        ax.set_xlabel("envs")
        ax.set_ylabel("env steps / s")
        ax.set_xscale("log", base=2)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(f"agentgym vector throughput ({os.cpu_count()} CPUs)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def table(results: list[dict]) -> str:
    lines = []
    for env_id in dict.fromkeys(r["env"] for r in results):
        sizes = sorted({r["num_envs"] for r in results if r["env"] == env_id})
        lines.append(f"\n{env_id} (env steps/s; x = speed-up over sequential)")
        lines.append(f"{'mode':<14}" + "".join(f"{n:>16}" for n in sizes))
        for mode in MODES:
            cells = []
            for n in sizes:
                row = next((r for r in results if r["env"] == env_id and r["mode"] == mode and r["num_envs"] == n), None)
                base = next((r for r in results if r["env"] == env_id and r["mode"] == "sequential"
                             and r["num_envs"] == n and "steps_per_s" in r), None)
                if row is None or "steps_per_s" not in row:
                    cells.append(f"{'-':>16}")
                else:
                    x = f" ({row['steps_per_s'] / base['steps_per_s']:.2f}x)" if base else ""
                    cells.append(f"{row['steps_per_s']:>9.1f}{x:>7}")
            lines.append(f"{mode:<14}" + "".join(cells))
    return "\n".join(lines)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--envs", nargs="+", default=list(ENVS))
    parser.add_argument("--sizes", nargs="+", type=int, default=[1, 2, 4, 8])
    parser.add_argument("--modes", nargs="+", default=list(MODES), choices=MODES)
    parser.add_argument("--seconds", type=float, default=8.0,
                        help="the sequential loop's measured time per configuration; sets the work every mode does")
    parser.add_argument("--warmup", type=int, default=2, help="steps per env before each round's clock starts")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds per configuration")
    parser.add_argument("--max-live-envs", type=int, default=24,
                        help="above this many envs across modes, measure modes one at a time")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    parser.add_argument("--append", action="store_true",
                        help="keep the rows of an earlier run in <out> that this run does not measure again "
                             "(e.g. cheap envs with few --seconds, engines with many)")
    args = parser.parse_args(argv)
    # The plot is drawn after the first configuration: check for matplotlib before measuring.
    require_for_script(["matplotlib"], "bench", "benchmarks/vector_throughput.py")
    args.earlier = None  # the JSON an --append run adds to, read once
    args.out.mkdir(parents=True, exist_ok=True)

    # Ray's own processes (raylet, GCS, idle actors' threads) keep using CPU while it is up, which
    # would slow every mode measured beside it: the Ray modes run last, in a phase of their own.
    ray_modes = [m for m in args.modes if m in RAY_MODES]
    phases = [[m for m in args.modes if m not in RAY_MODES], ray_modes]
    results: list[dict] = []
    skipped: dict[str, str] = {}
    envs = []
    for env_id in args.envs:
        why = available(env_id)
        if why:
            print(f"skip {env_id}: {why}")
            skipped[env_id] = why
        else:
            envs.append(env_id)
    work: dict[tuple[str, int], int] = {}  # (env, n) -> steps per env per round, shared by both phases
    for modes in phases:
        if not modes:
            continue
        ray = None
        if modes is ray_modes:
            try:
                import ray

                ray.init(num_cpus=os.cpu_count(), include_dashboard=False, log_to_driver=False)
            except ImportError:
                print("ray is not installed: skipping the ray backend")
                continue
        try:
            for env_id in envs:
                for n in args.sizes:
                    if (env_id, n) not in work:
                        work[env_id, n] = calibrate(env_id, n, args.seconds / args.rounds, args.warmup)
                    for row in bench_config(env_id, n, modes, args.seconds, args.warmup, args.rounds,
                                            args.max_live_envs, work[env_id, n]):
                        row["settings"] = {"seconds": args.seconds, "warmup": args.warmup, "rounds": args.rounds}
                        results.append(row)
                        if "steps_per_s" in row:
                            print(f"{env_id:<16} n={n} {row['mode']:<13} {row['steps_per_s']:8.1f} steps/s "
                                  f"(setup {row['setup_s']:.1f}s)", flush=True)
                        else:
                            print(f"{env_id:<16} n={n} {row['mode']:<13} FAILED {row.get('error')}", flush=True)
                    save(results, skipped, args)
        finally:
            if ray is not None:
                ray.shutdown()
    all_rows = save(results, skipped, args)
    print(table(all_rows))
    print(f"\nwrote {args.out / 'vector_throughput.json'} and .png")


def save(results: list[dict], skipped: dict[str, str], args) -> list[dict]:
    """Write the JSON (and the plot) with every row so far; called after each configuration, so
    an interrupted run keeps what it measured. Returns all rows, earlier ones kept with --append."""
    path = args.out / "vector_throughput.json"
    if args.append and args.earlier is None:
        args.earlier = json.loads(path.read_text()) if path.exists() else {}
    earlier = args.earlier or {}
    measured = {(r["env"], r["num_envs"], r["mode"]) for r in results}
    rows = [r for r in earlier.get("results", []) if (r["env"], r["num_envs"], r["mode"]) not in measured] + results
    report = {"machine": {"cpus": os.cpu_count(), "platform": platform.platform(),
                          "python": platform.python_version()},
              "skipped": {**earlier.get("skipped", {}), **skipped}, "results": rows}
    path.write_text(json.dumps(report, indent=2))
    if rows:
        plot(rows, args.out / "vector_throughput.png")
    return rows


if __name__ == "__main__":
    main()
