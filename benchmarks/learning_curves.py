"""Learning curves: held-out success over training for GRPO, VSPO, GiGPO, DAPO, GCD and PPO, and
PRS against binary reward, several seeds each, every method on the same budget of env episodes.

    python benchmarks/learning_curves.py                        # ToolQA-v0, 7 methods x 3 seeds, CPU
    python benchmarks/learning_curves.py --methods grpo vspo --seeds 0 1 2 3 4
    python benchmarks/learning_curves.py --methods vspo vspo-async1   # learning with --async-steps 1 beside sync
    python benchmarks/learning_curves.py --methods grpo rft     # the RFT baseline (not in the default set)
    python benchmarks/learning_curves.py --report-only          # tables and plots from finished cells
    python benchmarks/learning_curves.py --jobs 2               # two cells at once (one core each)
    python benchmarks/learning_curves.py --recipe alfworld-l0 --eval-split L0,L1,L2 \
        --methods grpo control vspo gcd gcd-nocorrection gigpo grpo-binary   # ALFWorld at L0/L1/L2

A cell is one (method, seed): one run of that method's trainer on its defaults (the README's main
job), or on a run recipe's (``--recipe``, :mod:`agentgym.train.config.recipes`), stopped at ``--max-episodes`` env episodes (extra rollouts such as VSPO's resampling and
DAPO's oversampling count against it) and evaluated on the held-out split every ``--eval-every``
steps. Each seed's cold start is built once and handed to every method as ``--model DIR`` (GCD's
own recipe mixes in judge samples, so it gets its own). A finished cell is read back and a cell
cut short resumes from its checkpoint, so the script can be stopped and run again. ``--jobs N`` runs
N cells at once, each in its own process with its log in OUT/logs/<env>/ (a cell starts once its
seed's cold start is built, so two cells never build the same one). ``--final-eval-episodes N``
evaluates each finished cell's last checkpoint and its cold start once more, with N episodes
through ``agentgym eval`` on the run's sampling (a pool of at most N games is played whole, each
game N/size times): a tighter before and after than the curves' evaluation, in a table of its own.

Writes, per env, OUT/learning_curves_<env>.json (every curve, per-method summaries),
OUT/learning_curves_<env>.md (the table) and OUT/learning_curves_<env>.png (mean and min-max band
across seeds per method), so several envs can share one OUT.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import os
import subprocess
import sys
import time

from agentgym.train.command import trainer as registered_trainer
from agentgym.train.methods import METHODS as REGISTERED

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# method -> (registered method, settings the cell adds to its config): every registered RL method
# on its defaults (agentgym.train.methods.registry), and these variants of them
VARIANTS = {
    # GCD without its "Common mistakes" list (the judge's loss alone)
    "gcd-nocorrection": ("gcd", {"gcd": {"correction": False}}),
    "grpo-binary": ("grpo", {"reward_mode": "binary"}),
    # asynchronous rollouts (--async-steps 1): learning beside the synchronous run of the same
    # method; not in the default set. A cell checkpoints every --eval-every steps, and a checkpoint
    # step drains the rollout pipeline, so 1 step in --eval-every overlaps nothing.
    "vspo-async1": ("vspo", {"async_steps": 1}),
    "grpo-async1": ("grpo", {"async_steps": 1}),
    # the paired control: GRPO at a learning rate of ~0 on the same task stream (same tasks and
    # sampling seeds), so its curve is what the cold start does on that stream; not in the default set
    "control": ("grpo", {"learning_rate": 1e-12}),
    # LoRA adapters of rank 16 on every linear layer instead of every weight, at ten times the learning
    # rate (docs/trainers.md, "LoRA"); not in the default set
    "grpo-lora": ("grpo", {"lora": {"r": 16}, "learning_rate": 2e-3}),
}
METHODS = {**{name: (name, {}) for name, method in REGISTERED.items() if not method.cold_start}, **VARIANTS}
# rejection-sampling fine-tuning (SFT on the policy's own successes) is a baseline beside the RL
# methods, and not in the default set either
NOT_DEFAULT = ("rft", "control", "gcd-nocorrection", "grpo-lora")
DEFAULT_METHODS = [m for m, (_, extra) in METHODS.items() if not extra.get("async_steps") and m not in NOT_DEFAULT]


@functools.cache
def trainer(name: str):
    """The registered method ``name`` as a trainer (its ``defaults``, ``extensions`` and ``main``)."""
    return registered_trainer(name)


def t95(n: int) -> float:
    """Two-sided 95% Student-t quantile for n samples (n - 1 degrees of freedom)."""
    from scipy import stats

    return float(stats.t.ppf(0.975, n - 1)) if n > 1 else float("nan")


def mean_ci(values: list[float]) -> tuple[float, float]:
    """Mean and the half-width of its 95% confidence interval (t distribution over seeds).

    >>> m, h = mean_ci([0.2, 0.3, 0.4]); round(m, 3), round(h, 3)
    (0.3, 0.248)
    """
    n = len(values)
    m = sum(values) / n
    if n < 2:
        return m, float("nan")
    sd = math.sqrt(sum((v - m) ** 2 for v in values) / (n - 1))
    return m, t95(n) * sd / math.sqrt(n)


def first_reaching(curve: list[dict], threshold: float, metric: str = "success") -> dict | None:
    """The first curve point whose ``metric`` is at or above the threshold (None: never reached).

    >>> first_reaching([{"step": 0, "success": 0.1}, {"step": 5, "success": 0.3}], 0.25)["step"]
    5
    """
    return next((p for p in curve if p[metric] >= threshold), None)


def script_defaults(args, module):
    """The config ``module``'s script runs with when given no flags, or with ``--recipe`` alone."""
    from agentgym.train.config.recipes import apply_recipe

    defaults = module.defaults()
    return apply_recipe(type(defaults), defaults, args.recipe) if args.recipe else defaults


def cell_config(args, method: str, seed: int, model: str, out: str):
    """The config of one cell: the method's script defaults plus the benchmark's shared settings."""
    from agentgym.train.base.flags import build

    script, extra = METHODS[method]
    module = trainer(script)
    defaults = script_defaults(args, module)
    values = dict(seed=seed, output_dir=out, model=model, env_id=args.env_id, max_episodes=args.max_episodes,
                  num_steps=10 ** 6, eval_every=args.eval_every, eval_episodes=args.eval_episodes,
                  cpu_threads=args.cpu_threads, save_every=args.eval_every, resume="auto", progress=False,
                  quiet=True, tensorboard=False, **extra)
    if args.env_kwargs is not None:
        values["env_kwargs"] = args.env_kwargs
    if args.eval_split is not None:
        values["eval_split"] = args.eval_split
    values.update(args.override)
    return module, build(type(defaults), **values, _default=defaults)


def cold_start_kind(args, method: str) -> str:
    """Which cold start a method's cells start from: ``judge`` (GCD's, with judge samples) or ``plain``."""
    return "judge" if script_defaults(args, trainer(METHODS[method][0])).cold_start.judge_samples else "plain"


def cold_start_root(args, method: str, seed: int) -> str:
    """Where a seed's cold start of a method's kind lives (its SFT run, and its final evaluation)."""
    return os.path.join(args.out, "cold_start", args.env_id, f"{cold_start_kind(args, method)}-seed{seed}")


def cold_start_dir(args, method: str, seed: int) -> str:
    """Build (or reuse) the seed's cold start with the method's recipe, as ``train`` would."""
    from agentgym.train.base.flags import build
    from agentgym.train.run.setup import cold_start

    module = trainer(METHODS[method][0])
    defaults = script_defaults(args, module)
    recipe = cold_start_kind(args, method)
    out = cold_start_root(args, method, seed)
    values = dict(seed=seed, output_dir=out, env_id=args.env_id, cpu_threads=args.cpu_threads,
                  progress=False, quiet=True, tensorboard=False)
    if args.model is not None:
        values["model"] = args.model
    if args.env_kwargs is not None:
        values["env_kwargs"] = args.env_kwargs
    override = {k: v for k, v in args.override.items() if k not in values}
    if recipe == "plain" and isinstance(override.get("cold_start"), dict):
        # judge samples are GCD's (its extension makes them): a plain recipe has none to size
        override["cold_start"] = {k: v for k, v in override["cold_start"].items() if k != "judge_samples"}
    config = build(type(defaults), **values, **override, _default=defaults)
    return cold_start(config, module.extensions(config))


def cell_path(args, method: str, seed: int) -> str:
    """A cell's ``cell.json``, there once the cell has finished."""
    return os.path.join(args.out, "cells", args.env_id, method, f"seed{seed}", "cell.json")


def run_cell(args, method: str, seed: int) -> dict:
    done = cell_path(args, method, seed)
    out = os.path.dirname(done)
    if os.path.exists(done):
        row = json.load(open(done))
    else:
        model = cold_start_dir(args, method, seed)
        module, config = cell_config(args, method, seed, model, out)
        t = time.perf_counter()
        result = module.main(config)
        row = {"env_id": args.env_id, "method": method, "seed": seed, "curve": result.curve,
               "wall_seconds": time.perf_counter() - t, "steps": result.curve[-1]["step"],
               "episodes": result.curve[-1]["episodes"], **run_totals(os.path.join(out, "metrics.jsonl"))}
        _write_cell(done, row)
    if needs_final_eval(args, row, out):
        model = cold_start_dir(args, method, seed)
        _, config = cell_config(args, method, seed, model, out)
        split, n = config.eval.eval_splits[0], args.final_eval_episodes
        before = os.path.join(cold_start_root(args, method, seed), f"eval-{split}-{n}.json")
        row["final_eval"] = {"split": split, "episodes": n, "before": final_eval(args, config, model, before),
                             "after": final_eval(args, config, final_checkpoint(out), os.path.join(out, f"eval-{split}-{n}.json"))}
        _write_cell(done, row)
    return row


def _write_cell(done: str, row: dict) -> None:
    with open(done + ".tmp", "w") as f:
        json.dump(row, f)
    os.replace(done + ".tmp", done)


def final_checkpoint(run_dir: str) -> str | None:
    """The last checkpoint of a cell's run, None where the run left none here (a cell taken from a
    report)."""
    latest = os.path.join(run_dir, "checkpoints", "latest")
    if not os.path.exists(latest):
        return None
    path = os.path.join(run_dir, "checkpoints", open(latest).read().strip())
    return path if os.path.isdir(path) else None


def needs_final_eval(args, row: dict, run_dir: str) -> bool:
    """Whether ``--final-eval-episodes`` asks a finished cell for a final evaluation it has not got
    (and its run's last checkpoint is here to give it)."""
    n = getattr(args, "final_eval_episodes", 0)  # a job made by an older command line has none
    got = row.get("final_eval")
    return bool(n) and (got is None or got["episodes"] != n) and final_checkpoint(run_dir) is not None


def final_eval(args, config, model_dir: str, out: str) -> float:
    """Held-out success of the policy in ``model_dir`` on the cell's first ``--eval-split`` over
    ``--final-eval-episodes`` episodes, through ``agentgym eval`` with the run's env settings (the
    checkpoint's record), sampling, window and evaluation seed: the same evaluation as the curves',
    larger (a split of no more tasks than that is played whole, each task as often). The result is
    kept in ``out`` and read back from there."""
    if not os.path.exists(out):
        from agentgym.train.evaluate import main as evaluate

        r, e = config.rollout, config.eval
        argv = ["--model", model_dir, "--env-id", args.env_id, "--split", e.eval_splits[0],
                "--num-episodes", str(args.final_eval_episodes), "--batch-size", "32",
                "--max-new-tokens", str(r.sampling.max_new_tokens), "--temperature", repr(r.sampling.temperature),
                "--top-p", repr(r.sampling.top_p), "--top-k", str(r.sampling.top_k), "--seed", str(e.eval_seed),
                "--device", config.model.device, "--output", f"{out}.{os.getpid()}.tmp"]
        if r.layout == "window":  # the trainers' evaluation: every past turn otherwise
            argv += ["--window", str(r.window)]
        if evaluate(argv) != 0:
            raise RuntimeError(f"agentgym eval {' '.join(argv)} failed")
        os.replace(f"{out}.{os.getpid()}.tmp", out)
    with open(out) as f:
        return json.load(f)["success_rate"]


def unfinished(args, method: str, seed: int) -> bool:
    """Whether a cell has still to train, or to be given its final evaluation."""
    done = cell_path(args, method, seed)
    return not os.path.exists(done) or needs_final_eval(args, json.load(open(done)), os.path.dirname(done))


def run_jobs(args, jobs: int) -> None:
    """Every unfinished cell, ``jobs`` at a time, each in a child process of this script. One child
    per seed and cold-start kind builds that cold start, and a cell starts once its own is built (so
    two cells never build the same one, and no core waits on another seed's). A child's output goes
    to OUT/logs/<env>/; a failed child's log tail is printed, the others go on (a failed cold
    start's cells are not started), and the failures are raised at the end."""
    todo = [(m, s) for s in args.seeds for m in args.methods if unfinished(args, m, s)]
    tasks, starts = [], {}
    for method, seed in todo:
        key = (cold_start_kind(args, method), seed)
        if key not in starts:
            starts[key] = ("cold_start", method, seed, None)
            tasks.append(starts[key])
        tasks.append(("cell", method, seed, starts[key]))
    failed = _run_children(args, tasks, jobs)
    if failed:
        raise RuntimeError(f"{len(failed)} learning-curve job(s) failed: " + "; ".join(failed))


def _run_children(args, tasks: list[tuple], jobs: int) -> list[str]:
    """Run ``(kind, method, seed, needs)`` tasks ``jobs`` at a time, in order, each once the task it
    ``needs`` (None: none) has finished; returns the failed ones' log paths (and says which tasks
    were not started for a failed one they need)."""
    logs = os.path.join(args.out, "logs", args.env_id.replace("/", "_"))
    os.makedirs(logs, exist_ok=True)
    pending, running, done, failed, lost = list(tasks), {}, set(), [], set()
    while pending or running:
        for task in [t for t in pending if t[3] in lost]:  # what a failed task would have fed
            pending.remove(task)
            lost.add(task)
            print(f"{args.env_id} {task[0]} {task[1]} seed {task[2]} not started: its cold start failed",
                  file=sys.stderr, flush=True)
        ready = [t for t in pending if t[3] is None or t[3] in done]
        while ready and len(running) < jobs:
            task = ready.pop(0)
            pending.remove(task)
            kind, method, seed, _ = task
            log = os.path.join(logs, f"{kind}-{method}-seed{seed}.log")
            job = json.dumps({"kind": kind, "method": method, "seed": seed, "args": vars(args)})
            with open(log, "w") as f:
                child = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--job", job],
                                         stdout=f, stderr=subprocess.STDOUT, cwd=os.getcwd())
            running[child] = (task, log, time.perf_counter())
        for child in [c for c in running if c.poll() is not None]:
            task, log, t = running.pop(child)
            kind, method, seed, _ = task
            if child.returncode:
                failed.append(log)
                lost.add(task)
                with open(log) as f:
                    tail = f.read()[-3000:]
                print(f"{args.env_id} {kind} {method} seed {seed} failed (exit {child.returncode}), "
                      f"log {log}:\n{tail}", file=sys.stderr, flush=True)
                continue
            done.add(task)
            if kind == "cell":
                _print_cell(args, json.load(open(cell_path(args, method, seed))), time.perf_counter() - t)
        time.sleep(0.5)
    return failed


def _print_cell(args, row: dict, seconds: float) -> None:
    print(f"{args.env_id} {row['method']} seed {row['seed']}: success {row['curve'][0]['success']:.3f} -> "
          f"{row['curve'][-1]['success']:.3f} in {row['steps']} steps, {row['episodes']} episodes "
          f"({seconds:.0f}s)", flush=True)


def _job(payload: str) -> None:
    """One child of :func:`run_jobs`: build a cold start, or run a cell."""
    job = json.loads(payload)
    args = argparse.Namespace(**job["args"])
    if job["kind"] == "cold_start":
        cold_start_dir(args, job["method"], job["seed"])
    else:
        run_cell(args, job["method"], job["seed"])


def run_totals(metrics_path: str) -> dict:
    """What a cell's ``metrics.jsonl`` says over the whole run: the mean share of tied groups among
    those played, and VSPO's replaced groups in all (0 for other methods)."""
    rows = [json.loads(line) for line in open(metrics_path)] if os.path.exists(metrics_path) else []
    tied = [r["groups/played_tied_frac"] for r in rows if "groups/played_tied_frac" in r]
    return {"tied_frac": sum(tied) / len(tied) if tied else None,
            "groups_replaced": sum(r.get("vspo/groups_replaced", 0) for r in rows)}


def summarize(cells: list[dict], threshold: float | None, metric: str = "success") -> dict:
    """Per method: success and PRS return before and at the end (mean, 95% CI, per seed), and the
    steps, episodes and training seconds until ``metric`` (``success`` or ``return``) reached the
    threshold (mean over the seeds that reached it); and the final evaluation's before and after
    (``--final-eval-episodes``) of the cells that have one of the largest size."""
    methods = sorted({c["method"] for c in cells}, key=lambda m: list(METHODS).index(m))
    final_n = max((c["final_eval"]["episodes"] for c in cells if c.get("final_eval")), default=None)
    before = [c["curve"][0][metric] for c in cells]
    if threshold is None and cells:
        best = max(sum(c["curve"][-1][metric] for c in cells if c["method"] == m) /
                   sum(1 for c in cells if c["method"] == m) for m in methods)
        start = sum(before) / len(before)
        threshold = round(max((start + best) / 2, start + 0.05), 3)
    out = {"threshold": threshold, "metric": metric, "methods": {}}
    for m in methods:
        mine = sorted((c for c in cells if c["method"] == m), key=lambda c: c["seed"])
        first = [c["curve"][0]["success"] for c in mine]
        last = [c["curve"][-1]["success"] for c in mine]
        gains = [b - a for a, b in zip(first, last)]
        reached = [p for p in (first_reaching(c["curve"], threshold, metric) for c in mine) if p is not None]
        mean_of = (lambda key, reached=reached: sum(p[key] for p in reached) / len(reached)) if reached else (lambda key: None)
        out["methods"][m] = {
            "seeds": [c["seed"] for c in mine], "before": first, "after": last,
            "after_mean_ci": mean_ci(last), "gain_mean_ci": mean_ci(gains),
            "return_before": [c["curve"][0]["return"] for c in mine],
            "return_after": [c["curve"][-1]["return"] for c in mine],
            "return_after_mean_ci": mean_ci([c["curve"][-1]["return"] for c in mine]),
            "reached": len(reached), "to_threshold": {k: mean_of(k) for k in ("step", "episodes", "seconds")},
            "episodes": [c["episodes"] for c in mine], "steps": [c["steps"] for c in mine],
            "tied_frac": [c.get("tied_frac") for c in mine], "groups_replaced": [c.get("groups_replaced") for c in mine],
            "splits": {split: {"before": [c["curve"][0][f"{split}/success"] for c in mine],
                               "after": [c["curve"][-1][f"{split}/success"] for c in mine]}
                       for split in eval_splits(mine)},
        }
        finals = [c for c in mine if c.get("final_eval") and c["final_eval"]["episodes"] == final_n]
        if finals:
            out["methods"][m]["final_eval"] = {
                "split": finals[0]["final_eval"]["split"], "episodes": final_n, "seeds": [c["seed"] for c in finals],
                "before": [c["final_eval"]["before"] for c in finals], "after": [c["final_eval"]["after"] for c in finals],
                "gain_mean_ci": mean_ci([c["final_eval"]["after"] - c["final_eval"]["before"] for c in finals])}
    return out


def eval_splits(cells: list[dict]) -> list[str]:
    """The splits every one of ``cells`` evaluated (a comma-separated ``--eval-split``), in the
    order the first one lists them; [] for one-split cells.

    >>> eval_splits([{"curve": [{"success": 0.1, "L1/success": 0.1, "L0/success": 0.2}]}])
    ['L1', 'L0']
    """
    found = [[k[:-len("/success")] for k in c["curve"][0] if k.endswith("/success")] for c in cells]
    return [s for s in found[0] if all(s in f for f in found[1:])] if found else []


def table(env_id: str, summary: dict) -> str:
    def f(x, nd=3):
        return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{nd}f}"

    threshold = "none" if summary["threshold"] is None else f"{summary['threshold']:.3f}"
    lines = [f"**{env_id}**, held-out evaluation (the time-to columns: {summary['metric']} reaching {threshold}; "
             "tied groups: the mean share of played groups whose returns tie; groups replaced: VSPO's, per run)", "",
             "| method | success before | success after (mean ± 95% CI) | gain (mean ± 95% CI) | per seed "
             "(before → after) | PRS return before → after (± 95% CI) | reached | steps to it | episodes to it "
             "| train s to it | tied groups | groups replaced |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    most = max((len(s["seeds"]) for s in summary["methods"].values()), default=0)
    for m, s in summary["methods"].items():
        (a, ah), (g, gh) = s["after_mean_ci"], s["gain_mean_ci"]
        n = len(s["seeds"])
        name = m if n == most else f"{m} ({n} seed{'s' if n != 1 else ''})"  # fewer seeds than the rest: say so
        seeds = ", ".join(f"{x:.2f}→{y:.2f}" for x, y in zip(s["before"], s["after"]))
        t = s["to_threshold"]
        r0, (r1, rh) = sum(s["return_before"]) / len(s["return_before"]), s["return_after_mean_ci"]
        tied = [x for x in s.get("tied_frac", []) if x is not None]
        replaced = [x for x in s.get("groups_replaced", []) if x is not None]
        lines.append(f"| {name} | {f(sum(s['before']) / len(s['before']))} | {f(a)} ± {f(ah)} | {g:+.3f} ± {f(gh)} | "
                     f"{seeds} | {f(r0)} → {f(r1)} ± {f(rh)} | {s['reached']}/{len(s['seeds'])} | "
                     f"{f(t['step'], 0)} | {f(t['episodes'], 0)} | {f(t['seconds'], 0)} | "
                     f"{f(sum(tied) / len(tied) if tied else None, 2)} | "
                     f"{f(sum(replaced) / len(replaced) if replaced else None, 0)} |")
    splits = list(next(iter(summary["methods"].values()), {}).get("splits", {}))
    if splits:  # several --eval-split splits: success on each, before -> after
        lines += ["", "Held-out success by split, before → after (mean over seeds; gain ± 95% CI):", "",
                  "| method | " + " | ".join(splits) + " |", "|---|" + "---|" * len(splits)]
        for m, s in summary["methods"].items():
            cells = []
            for split in splits:
                got = s["splits"].get(split)
                if got is None:
                    cells.append("-")
                    continue
                b, a = got["before"], got["after"]
                g, gh = mean_ci([y - x for x, y in zip(b, a)])
                cells.append(f"{f(sum(b) / len(b))} → {f(sum(a) / len(a))} ({g:+.3f} ± {f(gh)})")
            lines.append(f"| {m} | " + " | ".join(cells) + " |")
    finals = {m: s["final_eval"] for m, s in summary["methods"].items() if s.get("final_eval")}
    if finals:  # --final-eval-episodes: each cell's cold start and last checkpoint, evaluated larger
        first = next(iter(finals.values()))
        lines += ["", f"Final evaluation on {first['split']}, {first['episodes']} episodes per policy (each cell's "
                  "cold start and last checkpoint; gain ± 95% CI over seeds):", "",
                  "| method | seeds | before | after | gain (mean ± 95% CI) | per seed (before → after) |",
                  "|---|---|---|---|---|---|"]
        for m, fe in finals.items():
            g, gh = fe["gain_mean_ci"]
            seeds = ", ".join(f"{x:.3f}→{y:.3f}" for x, y in zip(fe["before"], fe["after"]))
            lines.append(f"| {m} | {', '.join(map(str, fe['seeds']))} | {f(sum(fe['before']) / len(fe['before']))} | "
                         f"{f(sum(fe['after']) / len(fe['after']))} | {g:+.3f} ± {f(gh)} | {seeds} |")
    return "\n".join(lines)


def plot(env_id: str, cells: list[dict], path: str) -> None:
    """Held-out success and PRS return against env episodes (with several evaluated splits: success
    on each split instead): per method the mean over seeds and the min-max band."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    splits = eval_splits(cells)
    panels = ([(f"{split}/success", f"{split} success") for split in splits] if len(splits) > 1 else
              [("success", "held-out success"), ("return", "held-out PRS return")])
    fig, axes = plt.subplots(1, len(panels), figsize=(6 * len(panels), 4.5))
    for ax, (key, label) in zip(axes, panels):
        for m in [m for m in METHODS if any(c["method"] == m for c in cells)]:
            curves = [c["curve"] for c in cells if c["method"] == m]
            n = min(len(c) for c in curves)
            x = [sum(c[i]["episodes"] for c in curves) / len(curves) for i in range(n)]
            ys = [[c[i][key] for c in curves] for i in range(n)]
            seeds = f"{len(curves)} seed{'s' if len(curves) != 1 else ''}"
            ax.plot(x, [sum(y) / len(y) for y in ys], label=f"{m} ({seeds})")
            ax.fill_between(x, [min(y) for y in ys], [max(y) for y in ys], alpha=0.15)
        ax.set_xlabel("env episodes played")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.suptitle(f"{env_id}: mean and min-max across seeds")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


SETTINGS = ("env_id", "recipe", "max_episodes", "eval_every", "eval_episodes", "eval_split", "env_kwargs",
            "model", "override")
"""The command-line settings every cell of one table shares (a report records them)."""


def import_cells(args, path: str) -> int:
    """Write the finished cells of an earlier report (``learning_curves_<env>.json``, e.g. one kept
    under docs/results) into OUT, so that a table started on another machine goes on here; returns
    how many were new. The report must have been made with this command's settings."""
    with open(path) as f:
        old = json.load(f)
    made = old.get("settings")
    mine = {k: getattr(args, k) for k in SETTINGS}
    if made is None or json.loads(json.dumps(mine)) != made:
        differ = sorted(k for k in SETTINGS if (made or {}).get(k, "(not recorded)") != json.loads(json.dumps(mine[k])))
        raise SystemExit(f"--cells-from {path}: made with other settings ({', '.join(differ)}); give the same "
                         f"command-line settings it records")
    new = 0
    for cell in old["cells"]:
        done = cell_path(args, cell["method"], cell["seed"])
        if cell["method"] in args.methods and cell["seed"] in args.seeds and not os.path.exists(done):
            os.makedirs(os.path.dirname(done), exist_ok=True)
            with open(done, "w") as f:
                json.dump(cell, f)
            new += 1
    return new


def report(args) -> dict:
    root = os.path.join(args.out, "cells", args.env_id)
    cells = []
    for method in args.methods:
        for seed in args.seeds:
            path = os.path.join(root, method, f"seed{seed}", "cell.json")
            if os.path.exists(path):
                cells.append(json.load(open(path)))
    summary = summarize(cells, args.threshold, args.metric)
    md = table(args.env_id, summary)
    tag = args.env_id.replace("/", "_")
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, f"learning_curves_{tag}.md"), "w") as f:
        f.write(md + "\n")
    with open(os.path.join(args.out, f"learning_curves_{tag}.json"), "w") as f:
        json.dump({"env_id": args.env_id, "max_episodes": args.max_episodes, "eval_every": args.eval_every,
                   "eval_episodes": args.eval_episodes, "final_eval_episodes": args.final_eval_episodes,
                   "settings": {k: getattr(args, k) for k in SETTINGS},
                   "summary": summary, "cells": cells}, f, indent=1)
    if cells:
        plot(args.env_id, cells, os.path.join(args.out, f"learning_curves_{tag}.png"))
    print(md)
    return summary


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--recipe", default=None,
                   help="start every cell and cold start from this run recipe (e.g. alfworld-l0), the settings "
                        "below over it")
    p.add_argument("--env-id", default=None, help="default: the recipe's env, else ToolQA-v0")
    p.add_argument("--env-kwargs", default=None,
                   help="JSON merged over the trainers' env preset (--preset auto; "
                        "`--override '{\"preset\": \"none\"}'`: over the env's own defaults)")
    p.add_argument("--model", default=None,
                   help="built-in model the cold starts start from (tiny-wide, tiny, tiny-small; default: the trainers')")
    p.add_argument("--methods", nargs="+", default=DEFAULT_METHODS, choices=list(METHODS),
                   help=f"default: {' '.join(DEFAULT_METHODS)}")
    p.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    p.add_argument("--max-episodes", type=int, default=None,
                   help="env-episode budget of every cell (default: the main job's, num_steps x episodes per step)")
    p.add_argument("--eval-every", type=int, default=None,
                   help="held-out evaluation every N steps (default: the recipe's, else 25)")
    p.add_argument("--eval-episodes", type=int, default=None, help="default: the trainers' default")
    p.add_argument("--eval-split", default=None,
                   help="held-out split, or a comma-separated list (e.g. L1,L0,L2: the table then has "
                        "success by split; the first is the curves' and the threshold's); default: the trainers'")
    p.add_argument("--threshold", type=float, default=None,
                   help="success to reach (default: halfway from the mean start to the best method's mean end, "
                        "and at least 0.05 above the start)")
    p.add_argument("--metric", choices=["success", "return"], default="success",
                   help="what the threshold columns measure: held-out success or PRS return")
    p.add_argument("--cpu-threads", type=int, default=None, help="default: the trainers' default")
    p.add_argument("--final-eval-episodes", type=int, default=0, metavar="N",
                   help="after a cell, evaluate its cold start and its last checkpoint on the first --eval-split "
                        "with N episodes each (agentgym eval, the run's sampling; a split of no more than N tasks "
                        "is played whole, each task N/size times): a tighter before and after than the curves', "
                        "in a table of its own; finished cells get it too (default 0: none)")
    p.add_argument("--override", type=json.loads, default={},
                   help='JSON of trainer settings for every cell and cold start, flat names as build() takes '
                        'them, e.g. \'{"num_groups": 8, "cold_start": {"num_steps": 400}}\'')
    p.add_argument("--out", default="benchmarks/results/learning_curves")
    p.add_argument("--report-only", action="store_true", help="only read finished cells and write the report")
    p.add_argument("--cells-from", default=None, metavar="REPORT_JSON",
                   help="take the finished cells of an earlier report made with the same settings (e.g. "
                        "docs/results/learning_curves_ALFWorld-v0.json) and run only the missing ones")
    p.add_argument("--jobs", type=int, default=1,
                   help="cells run at once, each in its own process (give each --cpu-threads cores)")
    p.add_argument("--job", default=None, help=argparse.SUPPRESS)  # one child of --jobs
    args = p.parse_args(argv)
    if args.job is not None:
        _job(args.job)
        return {}
    if args.jobs < 1:
        p.error("--jobs must be at least 1")
    if args.final_eval_episodes < 0:
        p.error("--final-eval-episodes must be at least 0")
    from agentgym.train.base.flags import build
    from agentgym.train.config.recipes import apply_recipe
    from agentgym.train.config.tree import TrainConfig

    base = apply_recipe(TrainConfig, TrainConfig(), args.recipe) if args.recipe else TrainConfig()
    if args.env_id is None:
        args.env_id = base.env.env_id
    if args.eval_every is None:
        args.eval_every = base.eval.eval_every if args.recipe and base.eval.eval_every > 0 else 25
    for key, value in args.override.items():  # the budget follows overridden batch settings
        try:
            base = build(TrainConfig, _default=base, **{key: value})
        except TypeError:  # a method's own setting
            pass
    if args.max_episodes is None:
        args.max_episodes = base.run.num_steps * base.rollout.num_groups * base.rollout.group_size
    if args.eval_episodes is None:
        args.eval_episodes = base.eval.eval_episodes
    if args.cpu_threads is None:
        args.cpu_threads = base.model.cpu_threads
    if args.cells_from is not None:
        print(f"{import_cells(args, args.cells_from)} finished cell(s) taken from {args.cells_from}", flush=True)
    if not args.report_only and args.jobs > 1:
        run_jobs(args, args.jobs)
    elif not args.report_only:
        for seed in args.seeds:
            for method in args.methods:
                t = time.perf_counter()
                _print_cell(args, run_cell(args, method, seed), time.perf_counter() - t)
    return report(args)


if __name__ == "__main__":
    sys.exit(0 if main() is not None else 1)
