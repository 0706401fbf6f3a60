"""Asynchronous rollouts: seconds per training step under ``--async-steps K`` against the
synchronous loop (K = 0), and who was busy when.

    python benchmarks/async_rollouts.py                                           # both scenarios, K 0 1 2, 2 rounds
    python benchmarks/async_rollouts.py --env-id ToolQA-v0 --steps 3 --repeats 1  # a quick check
    python benchmarks/async_rollouts.py --env-id ToolQA-v0 --override '{"backend": "process"}'

Scenarios (``--env-id``, default both):

- ``ALFWorld-v0``: the tiny model (no cold start) plays 4 x 4 generated small-room
  games of up to 10 turns in 16 process workers (window layout, numbered admissible actions with
  the played ones marked, 8 new tokens a turn).
- ``ToolQA-v0`` with ``search_latency`` (``--search-latency``, 0.2 s): every search and open waits
  like a web search API's round trip. The main job's settings (``tiny-wide``, the env kwargs its
  cold start records, 4 x 8 episodes, 48 new tokens, envs in the trainer's process, so the searches
  of a turn wait one after another; ``--override '{"backend": "process"}'`` gives each env a worker
  process and they wait at once), from a short SFT cold start (``--cold-start-steps`` on
  ``--cold-start-episodes`` expert episodes, played without the latency) built once and reused by
  every K: the untrained model never searches. One batch played with it first says how many
  searches an episode makes.

For each scenario, ``--repeats`` rounds; a round runs every K of ``--async-steps`` in turn (K=0,
K=1, K=2, K=0, ...), so that a change of load on the machine hits all alike, with the round's seed
for every K. A run trains ``--steps`` steps of ``trainers/<--method>.py`` with no checkpoint before
the last step (a checkpoint drains the pipeline) and no held-out evaluation (it pauses the rollout
thread). From the run's ``TrainResult.timeline``, over the same steps for every K: from step 2 (step
1 is warm-up) to step ``--steps`` - max K (in a run's last K steps the rollout thread runs out of
batches to play, so the update overlaps less or nothing: the pipeline drains;
``seconds_per_step_with_drain`` keeps them): seconds per step (the end of step 1's update to the end
of the last measured one's), and utilization, the fraction of that window in which the rollout
thread generated (``generate``) and waited on envs (``env``) and the learner updated (``update``):
the union of their spans, clipped to the window (``rollout`` and ``learner`` are each side's union;
``learner`` includes publishing weights). Per K: the means over rounds and their ratio to K=0. K=1
has a target (ALFWorld <= 0.85x, ToolQA <= 0.75x); when it is missed the summary names the
bottleneck, the side busiest under K=1, and ``overlap_bound``, the best ratio a perfect overlap of
K=0's rollout and update could give.

Writes OUT/async_rollouts.json (every run, its timeline and the summary) and
OUT/async_rollouts_timeline.png (per scenario, K=0 above K=1 over measured steps 2-5 of the first
round, on one time axis: learner update, rollout generate, rollout env).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import time

from agentgym.train.methods import METHODS

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = "benchmarks/async_rollouts.py"

# scenario -> the run settings (build() names) every K shares; "target": K=1 over K=0
SCENARIOS = {
    "ALFWorld-v0": {
        "target": 0.85,
        "settings": dict(model="tiny", preset="none", split="train", layout="window", num_groups=4, group_size=4,
                         max_new_tokens=8, cold_start={"num_steps": 0}, backend="process"),
        "env_kwargs": {"observation": "history+admissible", "history": 2, "action_format": "choice",
                       "mark_played": True, "max_turns": 10, "data_path": "generated:4000:small"},
    },
    "ToolQA-v0": {
        "target": 0.75,
        # the main job's (TrainConfig's defaults, --preset auto: the env kwargs the cold start records)
        "settings": dict(preset="auto", split="train"),
        "env_kwargs": {},
    },
}
# the timeline's spans of each part: (who, what)
PARTS = {"generate": ("rollout", "generate"), "env": ("rollout", "env"), "update": ("learner", "update"),
         "publish": ("learner", "publish"), "wait": ("learner", "wait")}
SIDES = {"rollout": ("generate", "env"), "learner": ("update", "publish")}
HISTORY_KEYS = ("time/step", "time/rollout", "time/generate", "time/env", "time/update", "time/rollout_wait",
                "async/version_lag")
PLOT_STEPS = (2, 5)


def trainer(script: str):
    """The registered method ``script`` as a trainer (learning_curves.py's, cached)."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from learning_curves import trainer as load

    return load(script)


# ----- the timeline -----
def busy_seconds(spans, start: float, end: float) -> float:
    """Seconds of ``[start, end]`` covered by at least one ``(start, end)`` span (their union, clipped).

    >>> busy_seconds([(0, 2), (1, 3), (5, 6)], 1, 5.5)
    2.5
    >>> busy_seconds([], 0, 1)
    0.0
    """
    total, cur = 0.0, None
    for s, e in sorted((max(s, start), min(e, end)) for s, e in spans if e > start and s < end):
        if cur is None or s > cur[1]:
            total += 0.0 if cur is None else cur[1] - cur[0]
            cur = [s, e]
        else:
            cur[1] = max(cur[1], e)
    return total + (0.0 if cur is None else cur[1] - cur[0])


def spans_of(timeline: list[dict], *parts: str) -> list[tuple[float, float]]:
    keys = {PARTS[p] for p in parts}
    return [(s["start"], s["end"]) for s in timeline if (s["who"], s["what"]) in keys]


def step_ends(timeline: list[dict]) -> list[float]:
    """When each step's update ended (one update a step), in order: the step boundaries."""
    return sorted(e for _, e in spans_of(timeline, "update"))


def utilization(timeline: list[dict], start: float, end: float) -> dict[str, float]:
    """The fraction of ``[start, end]`` each part (and each side: the union of its parts) was busy.

    >>> t = [{"who": "rollout", "what": "generate", "start": 0, "end": 1},
    ...      {"who": "rollout", "what": "env", "start": 1, "end": 3},
    ...      {"who": "learner", "what": "update", "start": 2, "end": 4}]
    >>> u = utilization(t, 0, 4); u["generate"], u["env"], u["update"], u["rollout"], u["learner"]
    (0.25, 0.5, 0.5, 0.75, 0.5)
    """
    width = end - start
    out = {p: busy_seconds(spans_of(timeline, p), start, end) / width for p in PARTS}
    out.update({side: busy_seconds(spans_of(timeline, *parts), start, end) / width for side, parts in SIDES.items()})
    return out


# ----- one run -----
def scenario_config(args, env_id: str, k: int, seed: int, model: str | None, out: str):
    """The config of one run: the method's defaults, the scenario's settings, ``--override``."""
    from agentgym.train.base.flags import build

    sc = SCENARIOS[env_id]
    defaults = trainer(args.method).defaults()
    env_kwargs = dict(sc["env_kwargs"])
    if env_id == "ToolQA-v0":
        env_kwargs["search_latency"] = args.search_latency
    values = dict(sc["settings"], env_id=env_id, env_kwargs=json.dumps(env_kwargs), num_steps=args.steps,
                  async_steps=k, save_every=0, eval_episodes=0, progress=False, quiet=True, tensorboard=False,
                  output_dir=out, seed=seed)
    if model is not None:
        values["model"] = model
    values.update(args.override)
    return build(type(defaults), **values, _default=defaults)


def run_once(args, env_id: str, k: int, repeat: int, model: str | None, tail: int) -> dict:
    """One run of ``--steps`` steps; measured over steps 2 to ``--steps`` - ``tail``."""
    seed = args.seed + repeat
    out = os.path.join(args.out, "work", env_id, f"k{k}-round{repeat}")
    shutil.rmtree(out, ignore_errors=True)  # a run starts fresh, never from an earlier run's checkpoint
    config = scenario_config(args, env_id, k, seed, model, out)
    t = time.perf_counter()
    result = trainer(args.method).main(config)
    wall = time.perf_counter() - t
    shutil.rmtree(out, ignore_errors=True)
    ends = step_ends(result.timeline)
    if len(ends) != len(result.history):
        raise RuntimeError(f"{env_id} K={k}: {len(ends)} updates in the timeline for {len(result.history)} steps")
    last = len(ends) - tail  # the steps measured: 2 .. last (1-based)
    measured = result.history[1:last]
    return {"env_id": env_id, "async_steps": k, "round": repeat, "seed": seed, "steps": len(result.history),
            "measured_steps": [2, last], "wall_seconds": wall,
            "seconds_per_step": (ends[last - 1] - ends[0]) / (last - 1),
            "seconds_per_step_with_drain": (ends[-1] - ends[0]) / (len(ends) - 1),
            "window": [ends[0], ends[last - 1]], "step_ends": ends,
            "utilization": utilization(result.timeline, ends[0], ends[last - 1]),
            "history_means": {key: sum(h.get(key, 0.0) for h in measured) / len(measured) for key in HISTORY_KEYS},
            "timeline": result.timeline}


# ----- ToolQA's cold start -----
def toolqa_cold_start(args) -> str:
    """The short cold start every ToolQA run starts from (built once; reused when its recipe matches)."""
    from agentgym.train.base.flags import build
    from agentgym.train.run.setup import cold_start

    module = trainer(args.method)
    defaults = module.defaults()
    values = dict(SCENARIOS["ToolQA-v0"]["settings"], env_id="ToolQA-v0", model=args.toolqa_model,
                  cold_start={"num_steps": args.cold_start_steps, "num_episodes": args.cold_start_episodes},
                  output_dir=os.path.join(args.out, "work", "cold_start"), seed=args.seed, progress=False,
                  quiet=True, tensorboard=False)
    values.update({k: v for k, v in args.override.items() if k not in ("env_kwargs", "preset")})
    config = build(type(defaults), **values, _default=defaults)
    return cold_start(config, module.extensions(config))


def searches_per_episode(args, model: str) -> dict:
    """Play one training batch with ``model`` (the run's env kwargs, without the latency, its
    layout and sampling): search and open calls per episode."""
    import torch

    from agentgym.agents import HFPolicy
    from agentgym.train.base.models import load_model, load_tokenizer
    from agentgym.train.rollout.chat import ChatEncoder
    from agentgym.train.rollout.envs import make_env_batch
    from agentgym.train.rollout.episodes import collect_episodes
    from agentgym.train.rollout.tasks import task_seed

    config = scenario_config(args, "ToolQA-v0", 0, args.seed, model, os.path.join(args.out, "work", "probe"))
    r = config.rollout
    env_kwargs = {**config.env.kwargs(config.model.model), "search_latency": 0.0}
    lm, tok = load_model(model, "cpu"), load_tokenizer(model)
    torch.manual_seed(args.seed)
    envs = make_env_batch("ToolQA-v0", r.num_groups, r.group_size, "sync", env_kwargs)
    try:
        episodes, _ = collect_episodes(envs, HFPolicy(lm, tok, r.sampling), ChatEncoder(tok),
                                       [task_seed(args.seed, g) for g in range(r.num_groups)], r, r.sampling,
                                       {"split": config.env.split})
    finally:
        envs.close()
    calls = [sum(info.get("tool") in ("search", "open") for info in ep.step_infos) for ep in episodes]
    return {"episodes": len(episodes), "searches_per_episode": sum(calls) / len(calls),
            "episodes_that_search": sum(c > 0 for c in calls) / len(calls),
            "success": sum(ep.success for ep in episodes) / len(episodes)}


def available(env_id: str) -> str | None:
    """None if the scenario's env can be made here, else why not."""
    import gymnasium as gym

    import agentgym  # noqa: F401  registers the envs

    try:
        gym.make(env_id, **SCENARIOS[env_id]["env_kwargs"]).close()
        return None
    except (ImportError, gym.error.Error, OSError) as e:
        return f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"


# ----- the summary -----
def _mean(values):
    values = list(values)
    return sum(values) / len(values) if values else float("nan")


def summarize(runs: list[dict], env_id: str, ks: list[int]) -> dict:
    """Per K: the means over rounds and the ratio to K=0; K=1 against the target, and what held it back."""
    mine = {k: [r for r in runs if r["env_id"] == env_id and r["async_steps"] == k] for k in ks}
    per_k = {}
    for k, rs in mine.items():
        if not rs:
            continue
        per_k[k] = {"rounds": len(rs), "seconds_per_step": _mean(r["seconds_per_step"] for r in rs),
                    "seconds_per_step_each": [r["seconds_per_step"] for r in rs],
                    "seconds_per_step_with_drain": _mean(r["seconds_per_step_with_drain"] for r in rs),
                    "utilization": {p: _mean(r["utilization"][p] for r in rs) for p in rs[0]["utilization"]},
                    "history_means": {h: _mean(r["history_means"][h] for r in rs) for h in HISTORY_KEYS}}
    out = {"env_id": env_id, "target_k1": SCENARIOS[env_id]["target"], "per_k": per_k}
    if 0 not in per_k:
        return out
    sync = per_k[0]
    out["overlap_bound"] = max(sync["utilization"]["rollout"], sync["utilization"]["learner"])
    for s in per_k.values():
        s["ratio_to_sync"] = s["seconds_per_step"] / sync["seconds_per_step"]
        # how much slower each part ran beside the other than in K=0 (the two share the CPU)
        s["part_seconds_over_sync"] = {
            p: (s["history_means"][f"time/{p}"] / sync["history_means"][f"time/{p}"]
                if sync["history_means"][f"time/{p}"] > 0 else float("nan")) for p in ("generate", "env", "update")}
    if 1 in per_k:
        one = per_k[1]
        out["target_met"] = bool(one["ratio_to_sync"] <= out["target_k1"])
        u = one["utilization"]
        side = "rollout" if u["rollout"] >= u["learner"] else "learner"
        part = max(("generate", "env"), key=u.get) if side == "rollout" else "update"
        out["bottleneck"] = {"side": side, "part": part, "busy": u[side], "part_busy": u[part],
                             "learner_waiting": u["wait"]}
    return out


def verdict(summary: dict) -> str:
    if "target_met" not in summary:
        return "no K=1 against K=0"
    ratio, target = summary["per_k"][1]["ratio_to_sync"], summary["target_k1"]
    line = f"K=1 {ratio:.2f}x sync (target <= {target:.2f}x): {'met' if summary['target_met'] else 'NOT met'}"
    if not summary["target_met"]:
        b, slow = summary["bottleneck"], summary["per_k"][1]["part_seconds_over_sync"]
        line += (f"; bottleneck: {b['side']} ({b['part']}), busy {b['busy']:.0%} of K=1's steps "
                 f"({b['part']} {b['part_busy']:.0%}), learner waiting {b['learner_waiting']:.0%}; "
                 f"a perfect overlap of K=0's rollout and update gives >= {summary['overlap_bound']:.2f}x; "
                 f"beside each other generate took {slow['generate']:.2f}x and update {slow['update']:.2f}x "
                 "their K=0 time")
    return line


def table(summary: dict) -> str:
    lines = [f"{summary['env_id']}", "  K  s/step  x sync  generate  env    update  rollout  learner  wait   lag"]
    for k, s in summary["per_k"].items():
        u = s["utilization"]
        lines.append(f"  {k}  {s['seconds_per_step']:6.2f}  {s.get('ratio_to_sync', float('nan')):5.2f}   "
                     f"{u['generate']:6.0%}  {u['env']:5.0%}  {u['update']:6.0%}  {u['rollout']:7.0%}  "
                     f"{u['learner']:7.0%}  {u['wait']:4.0%}  {s['history_means']['async/version_lag']:4.2f}")
    lines.append("  " + verdict(summary))
    return "\n".join(lines)


# ----- the plot -----
def plot(runs: list[dict], envs: list[str], path: str) -> None:
    """Per scenario, the first round's K=0 above its K=1 over steps 2-5, on one time axis."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [("update", "learner update", "tab:red"), ("generate", "rollout generate", "tab:blue"),
            ("env", "rollout env", "tab:green")]
    pairs = []
    for env_id in envs:
        pick = {r["async_steps"]: r for r in runs if r["env_id"] == env_id and r["round"] == min(
            x["round"] for x in runs if x["env_id"] == env_id)}
        pairs += [(env_id, pick[k]) for k in (0, 1) if k in pick]
    if not pairs:
        return
    fig, axes = plt.subplots(len(pairs), 1, figsize=(12, 1.7 * len(pairs) + 0.6), squeeze=False)
    first, last = PLOT_STEPS
    # step s runs from the end of step s-1's update to the end of its own
    shown = [min(last, r["measured_steps"][1]) for _, r in pairs]
    windows = [(r["step_ends"][first - 2], r["step_ends"][n - 1]) for (_, r), n in zip(pairs, shown)]
    width = {e: max(hi - lo for (e2, _), (lo, hi) in zip(pairs, windows) if e2 == e) for e, _ in pairs}
    for ax, (env_id, run), (lo, hi), n in zip(axes[:, 0], pairs, windows, shown):
        for y, (part, _label, color) in enumerate(rows):
            bars = [(max(s, lo) - lo, min(e, hi) - max(s, lo)) for s, e in spans_of(run["timeline"], part)
                    if e > lo and s < hi]
            ax.broken_barh(bars, (len(rows) - 1 - y - 0.4, 0.8), facecolors=color)
        for e in run["step_ends"]:
            if lo < e <= hi:
                ax.axvline(e - lo, color="black", linestyle=":", linewidth=0.8)
        ax.set_yticks(range(len(rows)), [label for _, label, _ in reversed(rows)])
        ax.set_xlim(0, width[env_id])
        steps = f"step {first}" if n == first else f"steps {first}-{n}"
        ax.set_title(f"{env_id}, --async-steps {run['async_steps']}: {steps}; {run['seconds_per_step']:.2f} s/step "
                     f"over steps 2-{run['measured_steps'][1]}", fontsize=9)
    axes[-1, 0].set_xlabel("seconds since the end of step 1 (dotted: a step's update ends)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# ----- main -----
def save(args, runs: list[dict], summaries: dict, extra: dict) -> None:
    report = {"machine": {"cpus": os.cpu_count(), "platform": platform.platform(),
                          "python": platform.python_version()},
              "settings": {"method": args.method, "steps": args.steps, "repeats": args.repeats,
                           "async_steps": args.async_steps, "seed": args.seed, "search_latency": args.search_latency,
                           "override": args.override, "scenarios": {e: SCENARIOS[e] for e in args.env_id}},
              **extra, "summary": summaries, "runs": runs}
    with open(os.path.join(args.out, "async_rollouts.json.tmp"), "w") as f:
        json.dump(report, f, indent=1)
    os.replace(os.path.join(args.out, "async_rollouts.json.tmp"), os.path.join(args.out, "async_rollouts.json"))


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--env-id", nargs="+", default=list(SCENARIOS), choices=list(SCENARIOS))
    p.add_argument("--async-steps", nargs="+", type=int, default=[0, 1, 2], help="the K to compare (0: synchronous)")
    p.add_argument("--repeats", type=int, default=2, help="rounds; each runs every K once, in turn")
    p.add_argument("--steps", type=int, default=8, help="training steps a run (the first is warm-up)")
    p.add_argument("--method", default="grpo", choices=[m for m, method in METHODS.items() if not method.cold_start],
                   help="the trainer script (VSPO and DAPO gate their after_rollout, so K > 1 adds no overlap)")
    p.add_argument("--seed", type=int, default=0, help="round r's seed is this + r, the same for every K")
    p.add_argument("--search-latency", type=float, default=0.2, help="ToolQA: seconds each search and open waits")
    p.add_argument("--toolqa-model", default="tiny-wide", help="ToolQA: the built-in model the cold start trains")
    p.add_argument("--cold-start-steps", type=int, default=200, help="ToolQA: SFT steps of the cold start")
    p.add_argument("--cold-start-episodes", type=int, default=128, help="ToolQA: expert episodes of the cold start")
    p.add_argument("--override", type=json.loads, default={},
                   help='JSON of run settings for every scenario, flat names as build() takes them, '
                        'e.g. \'{"num_groups": 2, "backend": "process"}\'')
    p.add_argument("--out", default=os.path.join(ROOT, "benchmarks", "results"),
                   help="where the JSON and the PNG go (runs and the cold start under OUT/work); "
                        "default: benchmarks/results")
    args = p.parse_args(argv)
    if 0 not in args.async_steps:
        p.error("--async-steps must include 0, the synchronous baseline every ratio is taken against")
    if args.steps < max(args.async_steps) + 2 or args.repeats < 1 or min(args.async_steps) < 0:
        p.error("--steps must be at least the largest --async-steps + 2 (the first step is warm-up, the last K "
                "drain the pipeline), --repeats >= 1 and every --async-steps >= 0")
    from agentgym.extras import require_for_script

    require_for_script(["torch", "transformers", "tokenizers", "matplotlib"], "bench", SCRIPT)
    os.makedirs(args.out, exist_ok=True)

    runs: list[dict] = []
    summaries, extra, skipped, envs = {}, {}, {}, []
    for env_id in args.env_id:
        why = available(env_id)
        if why:
            print(f"skip {env_id}: {why}", flush=True)
            skipped[env_id] = why
            continue
        envs.append(env_id)
        model = None
        if env_id == "ToolQA-v0":
            t = time.perf_counter()
            model = toolqa_cold_start(args)
            probe = searches_per_episode(args, model)
            extra["toolqa_cold_start"] = {"model": model, "seconds": time.perf_counter() - t, **probe}
            print(f"ToolQA-v0 cold start ({args.cold_start_steps} steps, {args.cold_start_episodes} episodes): "
                  f"{probe['searches_per_episode']:.2f} searches per episode, "
                  f"{probe['episodes_that_search']:.0%} of episodes search, success {probe['success']:.2f} "
                  f"({extra['toolqa_cold_start']['seconds']:.0f}s)", flush=True)
        for repeat in range(args.repeats):
            for k in args.async_steps:
                row = run_once(args, env_id, k, repeat, model, max(args.async_steps))
                runs.append(row)
                u = row["utilization"]
                print(f"{env_id} K={k} round {repeat}: {row['seconds_per_step']:.2f} s/step over steps "
                      f"2-{row['measured_steps'][1]} "
                      f"(generate {u['generate']:.0%}, env {u['env']:.0%}, update {u['update']:.0%}; "
                      f"{row['wall_seconds']:.0f}s)", flush=True)
                summaries[env_id] = summarize(runs, env_id, args.async_steps)
                save(args, runs, summaries, {**extra, "skipped": skipped})
    save(args, runs, summaries, {**extra, "skipped": skipped})
    plot(runs, envs, os.path.join(args.out, "async_rollouts_timeline.png"))
    for env_id in envs:
        print(table(summaries[env_id]))
    print(f"wrote {os.path.join(args.out, 'async_rollouts.json')} and async_rollouts_timeline.png")
    return summaries


if __name__ == "__main__":
    sys.exit(0 if main() is not None else 1)
