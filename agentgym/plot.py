"""``agentgym plot``: learning curves of training runs, read from their ``metrics.jsonl``, as a PNG.

    agentgym plot runs/grpo                       # writes runs/grpo/learning_curves.png
    agentgym plot runs/grpo runs/vspo --out cmp.png

Four panels, every run overlaid in its own colour: the batch's mean PRS return (``reward/mean``),
its success rate (``success/mean``), the mean episode value of each PRS term (``terms/<name>``, one
line style per term) and the held-out evaluation before and after training (``eval/success/*`` and
``eval/return/*``, logged once at the end of a run; the panel is empty for runs without it). The
trainers write these keys (docs/trainers.md). A line that does not parse, such as a last line cut
short when the machine lost power, is skipped with a warning.

Needs matplotlib: ``pip install "agentgym[bench]"`` (``[dev]`` has it too).
"""

from __future__ import annotations

import argparse
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agentgym.extras import require, require_for_script

TERM_STYLES = ("-", "--", ":", "-.")
EVAL_KEYS = (("eval/success/before", "eval/success/after", "success", "o"),
             ("eval/return/before", "eval/return/after", "return", "s"))


def read_metrics_lines(run_dir: str | os.PathLike) -> list[dict[str, Any]]:
    """The rows of ``run_dir/metrics.jsonl``; a line cut short (a run killed mid-write) is skipped
    with a warning."""
    from agentgym.train.base.metrics import read_metrics

    path = Path(run_dir) / "metrics.jsonl"
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found: is {run_dir} the --output-dir of a training run?")
    return read_metrics(run_dir)


def _series(rows: list[dict[str, Any]], key: str) -> tuple[list[float], list[float]]:
    """(steps, values) of ``key`` over the rows that have a finite number for it."""
    steps, values = [], []
    for row in rows:
        value = row.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
            steps.append(row.get("step", len(steps)))
            values.append(float(value))
    return steps, values


def _labels(run_dirs: Sequence[str | os.PathLike]) -> list[str]:
    """Each run's folder name, or its whole path where two runs share a name."""
    names = [Path(d).resolve().name for d in run_dirs]
    return [name if names.count(name) == 1 else str(d) for name, d in zip(names, run_dirs)]


def plot_runs(run_dirs: Sequence[str | os.PathLike], out: str | os.PathLike, title: str | None = None):
    """Draw the learning curves of ``run_dirs`` into the PNG ``out``; returns the matplotlib Figure."""
    require(["matplotlib"], "bench", "agentgym plot")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = [read_metrics_lines(d) for d in run_dirs]
    fig, axes = plt.subplots(2, 2, figsize=(12, 8))
    ax_reward, ax_success, ax_terms, ax_eval = axes.flat
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for k, (label, rows) in enumerate(zip(_labels(run_dirs), runs)):
        color = colors[k % len(colors)]
        for ax, key in ((ax_reward, "reward/mean"), (ax_success, "success/mean")):
            steps, values = _series(rows, key)
            if values:
                ax.plot(steps, values, color=color, label=label)
        terms = sorted({key for row in rows for key in row if key.startswith("terms/")})
        for t, key in enumerate(terms):
            steps, values = _series(rows, key)
            if values:
                ax_terms.plot(steps, values, color=color, linestyle=TERM_STYLES[t % len(TERM_STYLES)],
                              label=f"{label}: {key.removeprefix('terms/')}")
        for before_key, after_key, name, marker in EVAL_KEYS:
            before, after = _series(rows, before_key)[1], _series(rows, after_key)[1]
            if before and after:  # the last evaluation of the run
                ax_eval.plot([0, 1], [before[-1], after[-1]], color=color, marker=marker,
                             linestyle="-" if name == "success" else "--", label=f"{label}: {name}")
    for ax, name in ((ax_reward, "mean PRS return (reward/mean)"), (ax_success, "success rate (success/mean)"),
                     (ax_terms, "PRS terms (terms/*)")):
        ax.set_title(name)
        ax.set_xlabel("step")
    ax_eval.set_title("held-out evaluation (eval/*)")
    ax_eval.set_xticks([0, 1], ["before training", "after training"])
    ax_eval.set_xlim(-0.3, 1.3)
    for ax in axes.flat:
        ax.grid(alpha=0.3)
        if ax.get_lines():
            ax.legend(fontsize="small")
        else:
            ax.text(0.5, 0.5, "not logged", ha="center", va="center", transform=ax.transAxes, color="gray")
    fig.suptitle(title or "learning curves: " + ", ".join(_labels(run_dirs)))
    fig.tight_layout()
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=100)
    plt.close(fig)
    return fig


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="agentgym plot", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run_dirs", nargs="+", metavar="RUN_DIR", help="a trainer's --output-dir (holds metrics.jsonl)")
    parser.add_argument("--out", default=None,
                        help="PNG to write (default: RUN_DIR/learning_curves.png for one run, "
                             "./learning_curves.png for several)")
    parser.add_argument("--title", default=None, help="figure title (default: the runs' names)")
    args = parser.parse_args(argv)
    require_for_script(["matplotlib"], "bench", "agentgym plot")
    out = args.out or (Path(args.run_dirs[0]) / "learning_curves.png" if len(args.run_dirs) == 1
                       else Path("learning_curves.png"))
    from agentgym.output_paths import OutputPathError, check_output_file, disk_full, disk_full_message

    try:
        check_output_file(out, "--out")
        plot_runs(args.run_dirs, out, args.title)
    except (FileNotFoundError, OutputPathError) as e:
        raise SystemExit(str(e)) from None
    except OSError as e:
        if not disk_full(e):
            raise
        raise SystemExit(disk_full_message("--out", out)) from None
    print(f"wrote {out}")
    return 0
