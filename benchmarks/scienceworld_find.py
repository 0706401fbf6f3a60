"""The ``scienceworld-find`` recipe's results per find task, beside DRRN's published scores.

Reads the held-out evaluations a run saved (``OUTPUT_DIR/episodes/eval_step_N_test.jsonl``: the
cold start's at step 0, then every ``--eval-every`` steps) and reports, per task and evaluation,
the mean score (ScienceWorld's 0-100 over 100, a failed task counting 0, as its results give it),
the success rate, and how the episodes ended (``OUTCOMES``); every evaluation plays the same
episodes (seeds), so a run's rows are paired, and ``paired`` compares its last evaluation with its
first episode by episode (the gain, its standard error, the episodes up and down). ``training``
reads the RL batches' episodes (``episodes/step_N.jsonl``) by outcome: how long they ran, what they
returned, their advantage, and how hard the update pushed on their focus actions (``focus_push``).

    python trainers/grpo.py --recipe scienceworld-find --seed 0 --output-dir runs/find-0
    agentgym eval --model tiny-small --env-id ScienceWorld-v0 --preset tiny-find-scored --split test \
        --num-episodes 48 --batch-size 32 --seed 10000 --temperature 1.0 --window 2 --output untrained.json
    python benchmarks/scienceworld_find.py runs/find-0 runs/find-1 --untrained untrained.json \
        --out docs/results/scienceworld_find.json

``--untrained`` adds the untrained model's result on the same episodes (``agentgym eval --output``,
with the trainers' held-out settings: the seed of their first episode, temperature 1, window 2).
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from pathlib import Path

DRRN = {"find-living-thing": 0.26, "find-plant": 0.19, "find-animal": 0.19}
"""DRRN's test-variation scores on the three tasks (Wang et al., 2022, Table 2: 8 env threads x 100k steps, 100-step episodes)."""

OUTCOMES = ("solved", "focused", "failed", "unfocused")
"""How a find episode ends: ``solved``; ``focused`` on the right thing but not moved where the task
says by the last turn (the engine's score rises at the focus); ``failed``, the engine's -100 (in the
find tasks, a focus on the wrong thing ends the episode); ``unfocused``, no focus by the last turn."""

_EVAL = re.compile(r"eval_step_(\d+)_test\.jsonl$")
_BATCH = re.compile(r"step_(\d+)\.jsonl$")


def is_focus(turn: dict) -> bool:
    """Whether a saved turn's reply is a ``focus on ...`` action."""
    return turn["reply"].strip().startswith("focus on")


def outcome(episode: dict) -> str:
    """Which of ``OUTCOMES`` a saved episode (a row of ``eval_step_N_test.jsonl``) is."""
    if episode["success"]:
        return "solved"
    if episode["metrics"]["engine_score"] < 0:
        return "failed"
    if any(is_focus(turn) for turn in episode["turns"]):
        return "focused"
    return "unfocused"


def saved_evaluations(run_dir: Path) -> dict[int, list[dict]]:
    """Step -> the episodes of the test evaluation the run saved at that step, in played order."""
    return {int(_EVAL.search(path.name)[1]): [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
            for path in sorted((run_dir / "episodes").glob("eval_step_*_test.jsonl"),
                               key=lambda p: int(_EVAL.search(p.name)[1]))}


def run_summary(evaluations: dict[int, list[dict]]) -> dict:
    """Per evaluation step: per task and over all, episodes, mean score / 100, success rate and the
    episodes per outcome."""
    steps = {}
    for step, rows in evaluations.items():
        by_task: dict[str, list[dict]] = {}
        for row in rows:
            by_task.setdefault(row["task_id"].split("/")[0], []).append(row)
        by_task["all"] = rows
        steps[step] = {
            task: {"episodes": len(eps),
                   "score": round(statistics.fmean(ep["metrics"]["score"] / 100 for ep in eps), 4),
                   "success": round(statistics.fmean(float(ep["success"]) for ep in eps), 4),
                   "outcomes": {name: sum(outcome(ep) == name for ep in eps) for name in OUTCOMES}}
            for task, eps in sorted(by_task.items())}
    return steps


def paired_gain(before: list[dict], after: list[dict]) -> dict:
    """Evaluation ``after`` against ``before`` episode by episode (every evaluation plays the same
    episodes in the same order): the mean score gain with its standard error, the episodes whose
    score rose and fell, and the mean turns an episode took at each."""
    if [r["task_id"] for r in before] != [r["task_id"] for r in after]:
        raise ValueError("the two evaluations did not play the same episodes")
    gains = [(b["metrics"]["score"] - a["metrics"]["score"]) / 100 for a, b in zip(before, after)]
    se = statistics.stdev(gains) / len(gains) ** 0.5 if len(gains) > 1 else float("nan")
    return {"episodes": len(gains), "gain": round(statistics.fmean(gains), 4),
            "standard_error": round(se, 4), "up": sum(g > 0 for g in gains), "down": sum(g < 0 for g in gains),
            "turns": [round(statistics.fmean(len(r["turns"]) for r in played), 1) for played in (before, after)]}


def training_outcomes(run_dir: Path) -> dict:
    """The RL batches' episodes (``episodes/step_N.jsonl``, those trained on) by outcome: episodes,
    mean turns, return and advantage, and ``focus_push``, the sum over them of each focus turn's
    advantage times its share of the loss under each aggregation, per batch episode: under
    ``episode-mean`` its reply tokens over its own episode's, under ``token-mean`` over the mean
    episode's (docs/trainers.md, "Loss aggregation"). A short failed episode's focus weighs more
    under ``episode-mean`` than a long one's."""
    episodes = [json.loads(line) for path in (run_dir / "episodes").glob("step_*.jsonl") if _BATCH.fullmatch(path.name)
                for line in path.read_text().splitlines() if line.strip()]
    episodes = [ep for ep in episodes if ep.get("trained", True)]
    if not episodes:
        return {}
    mean_tokens = statistics.fmean(sum(t["tokens"] for t in ep["turns"]) for ep in episodes)
    out = {}
    for name in OUTCOMES:
        eps = [ep for ep in episodes if outcome(ep) == name]
        push = {"episode-mean": 0.0, "token-mean": 0.0}
        for ep in eps:
            tokens = sum(t["tokens"] for t in ep["turns"])
            for turn in ep["turns"]:
                if is_focus(turn):
                    credit = turn.get("advantage", ep["advantage"]) * turn["tokens"]
                    push["episode-mean"] += credit / tokens / len(episodes)
                    push["token-mean"] += credit / mean_tokens / len(episodes)
        out[name] = {"episodes": len(eps),
                     **({"turns": round(statistics.fmean(len(ep["turns"]) for ep in eps), 1),
                         "return": round(statistics.fmean(ep["return"] for ep in eps), 4),
                         "advantage": round(statistics.fmean(ep["advantage"] for ep in eps), 4)} if eps else {}),
                     "focus_push": {k: round(v, 4) for k, v in push.items()}}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", help="output directories of scienceworld-find runs")
    parser.add_argument("--untrained", default=None, metavar="EVAL_JSON",
                        help="an `agentgym eval --output` file of the untrained model on the same episodes")
    parser.add_argument("--out", default=None, help="write the summary as JSON here")
    args = parser.parse_args(argv)
    result = {"drrn_test_score": DRRN, "runs": {}, "paired": {}, "training": {}}
    if args.untrained:
        played = json.loads(Path(args.untrained).read_text())
        result["untrained"] = {"model": played.get("model"), "episodes": played["num_episodes"],
                               "score": round(played["metrics"]["score"] / 100, 4),
                               "success": round(played["success_rate"], 4)}
        print(f"untrained  all  score {result['untrained']['score']:.3f}   success "
              f"{result['untrained']['success']:.3f}   ({played['num_episodes']} episodes)")
    for run in args.runs:
        evaluations = saved_evaluations(Path(run))
        steps = run_summary(evaluations)
        if not steps:
            parser.error(f"{run}: no saved test evaluations (episodes/eval_step_N_test.jsonl)")
        result["runs"][run] = steps
        first, last = min(steps), max(steps)
        for task in steps[first]:
            a, b = steps[first][task], steps[last].get(task, {})
            print(f"{run}  {task:18s} score {a['score']:.3f} -> {b.get('score', float('nan')):.3f}   "
                  f"success {a['success']:.3f} -> {b.get('success', float('nan')):.3f}   "
                  f"({a['episodes']} episodes, step {first} -> {last})" + (f"   DRRN {DRRN[task]:.2f}" if task in DRRN else ""))
        if last != first:
            pair = result["paired"][run] = {"steps": [first, last],
                                             **paired_gain(evaluations[first], evaluations[last])}
            print(f"{run}  paired over {pair['episodes']} episodes, step {first} -> {last}: gain "
                  f"{pair['gain']:+.3f} +- {pair['standard_error']:.3f} (s.e.), up {pair['up']} / down {pair['down']}, "
                  f"turns {pair['turns'][0]} -> {pair['turns'][1]}")
        ends = {step: steps[step]["all"]["outcomes"] for step in (first, last)}
        print(f"{run}  episodes by outcome, step {first} -> {last}: " + ", ".join(
            f"{name} {ends[first][name]} -> {ends[last][name]}" for name in OUTCOMES))
        trained = result["training"][run] = training_outcomes(Path(run))
        for name, row in trained.items():
            if row["episodes"]:
                print(f"{run}  training {name:9s} {row['episodes']:4d} episodes, {row['turns']:4.1f} turns, return "
                      f"{row['return']:.3f}, advantage {row['advantage']:+.3f}, focus push {row['focus_push']['episode-mean']:+.3f} "
                      f"(episode-mean) / {row['focus_push']['token-mean']:+.3f} (token-mean)")
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
