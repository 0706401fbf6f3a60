"""The board as a paper's results table (Markdown) and as a chart (PNG).

The main table has one line per agent and one column per env split, each cell ``success ± std``
in percent (ScienceWorld cells add the mean score, 0-100). Below it, one table per env split
gives the details of each agent: per-task-type success, PRS return and terms, invalid- and
repeated-action rates, outcome buckets, turns and generated tokens. The stamps every number
depends on close the file.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from agentgym.leaderboard.stats import OUTCOMES


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}"


def _cell(row: dict) -> str:
    if row["success"] is None:
        return "-"
    text = f"{_pct(row['success'])} ± {_pct(row['success_std'])}"
    if row.get("score") is not None:
        text += f" (score {row['score']:.1f})"
    if row["episodes"] < row.get("expected_episodes", row["episodes"]):
        text += f" [{row['episodes']}/{row['expected_episodes']}]"
    return text


def _columns(rows: Sequence[dict]) -> list[tuple[str, str]]:
    seen: list[tuple[str, str]] = []
    for r in rows:
        if (r["env"], r["split"]) not in seen:
            seen.append((r["env"], r["split"]))
    return seen


def markdown(rows: Sequence[dict]) -> str:
    """The whole board as Markdown."""
    columns = _columns(rows)
    agents = list(dict.fromkeys(r["agent"] for r in rows))
    cell = {(r["agent"], r["env"], r["split"]): r for r in rows}
    lines = ["# Leaderboard", "", "Success rate (%) over every task of each split, mean ± std over repeats.", "",
             "| agent | " + " | ".join(f"{env} {split}" for env, split in columns) + " |",
             "| --- |" + " --- |" * len(columns)]
    for agent in agents:
        lines.append(f"| {agent} | " + " | ".join(_cell(cell[(agent, *c)]) if (agent, *c) in cell else "-"
                                                   for c in columns) + " |")
    for env, split in columns:
        block_rows = [r for r in rows if (r["env"], r["split"]) == (env, split)]
        types = list(dict.fromkeys(t for r in block_rows for t in r["by_task_type"]))
        terms = list(dict.fromkeys(t for r in block_rows for t in r["terms"]))
        lines += ["", f"## {env} — {split}", "",
                  f"Tasks: {block_rows[0]['stamps'].get('num_tasks')} (hash "
                  f"`{block_rows[0]['stamps'].get('task_list_hash')}`), max_turns "
                  f"{block_rows[0]['stamps'].get('max_turns', '-')}.", "",
                  "| agent | episodes | success | PRS return | " + " | ".join(terms) + " | invalid act. | "
                  "repeated act. | turns | gen. tokens |",
                  "| --- |" + " ---: |" * (7 + len(terms))]
        for r in block_rows:
            lines.append(f"| {r['agent']} | {r['episodes']} | {_pct(r['success'])} | {_num(r['prs_return'])} | "
                         + " | ".join(_num(r["terms"].get(t)) for t in terms)
                         + f" | {_pct(r['invalid_action_rate'])} | {_pct(r['repeated_action_rate'])} | "
                           f"{_num(r['turns'], 1)} | {_num(r['generated_tokens'], 0)} |")
        lines += ["", "Success by task type (%):", "",
                  "| agent | " + " | ".join(types) + " |", "| --- |" + " ---: |" * len(types)]
        for r in block_rows:
            lines.append(f"| {r['agent']} | " + " | ".join(
                _pct(r["by_task_type"].get(t, {}).get("success")) for t in types) + " |")
        lines += ["", "Outcomes (episodes):", "", "| agent | " + " | ".join(OUTCOMES) + " |",
                  "| --- |" + " ---: |" * len(OUTCOMES)]
        for r in block_rows:
            lines.append(f"| {r['agent']} | " + " | ".join(str(r["outcomes"].get(o, 0)) for o in OUTCOMES) + " |")
    lines += ["", "## Stamps", ""]
    for r in rows:
        lines.append(f"- **{r['agent']} / {r['env']} / {r['split']}**: `{json.dumps(r['stamps'], sort_keys=True, default=str)}`")
    return "\n".join(lines) + "\n"


def _num(x: Any, digits: int = 3) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def chart(rows: Sequence[dict], path: str) -> None:
    """Grouped bars: success per env split, one bar per agent, with the std over repeats."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    columns = _columns(rows)
    agents = list(dict.fromkeys(r["agent"] for r in rows))
    cell = {(r["agent"], r["env"], r["split"]): r for r in rows}
    width = 0.8 / max(len(agents), 1)
    fig, ax = plt.subplots(figsize=(max(6.0, 1.6 * len(columns) + 2), 4))
    x = np.arange(len(columns))
    for k, agent in enumerate(agents):
        means = [100 * (cell.get((agent, *c), {}).get("success") or 0.0) for c in columns]
        stds = [100 * (cell.get((agent, *c), {}).get("success_std") or 0.0) for c in columns]
        ax.bar(x + (k - (len(agents) - 1) / 2) * width, means, width, yerr=stds, capsize=3, label=agent)
    ax.set_xticks(x, [f"{env}\n{split}" for env, split in columns], fontsize=8)
    ax.set_ylabel("success (%)")
    ax.set_ylim(0, 105)
    ax.legend(fontsize=8)
    ax.set_title("agentgym leaderboard")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
