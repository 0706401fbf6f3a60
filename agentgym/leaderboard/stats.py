"""One summary row per board block: the numbers a results table reports, and their stamps.

Every mean is over the block's finished episodes, taken in board order (tasks, then repeats), so a
resumed run and an uninterrupted one give the same row. ``success_std`` and ``prs_return_std``
are the standard deviation over the ``k`` repeats of each repeat's mean (0 with one repeat).

Outcome buckets, one per episode:

- ``solved``: the env reported success.
- ``failed``: the episode ended unsolved before the turn limit (a wrong ToolQA answer, a failed
  ScienceWorld task).
- ``turn_limit``: truncated by the env's ``max_turns``.
- ``context_limit``: the next prompt no longer fitted the model's context.
- ``invalid_format``: unsolved, and at least half of its turns were not one parseable action.
- ``env_error``: the engine failed (its worker died or hung, or a reset failed twice).
- ``agent_error``: the agent raised, timed out, or returned something that is not an action.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from agentgym.envs.task_refs import task_list_hash
from agentgym.leaderboard.store import Block

OUTCOMES = ("solved", "failed", "turn_limit", "context_limit", "invalid_format", "env_error", "agent_error")
ROW_FIELDS = ("agent", "env", "split", "episodes", "success", "success_std", "score", "prs_return",
              "prs_return_std", "terms", "by_task_type", "invalid_action_rate", "repeated_action_rate",
              "outcomes", "turns", "generated_tokens", "stamps")


def _mean(values) -> float | None:
    values = list(values)
    return float(np.mean(values)) if values else None


def _std_over_repeats(records: list[dict], key) -> float:
    by_repeat: dict[int, list[float]] = {}
    for r in records:
        by_repeat.setdefault(r["repeat"], []).append(float(key(r)))
    means = [np.mean(v) for v in by_repeat.values()]
    return float(np.std(means, ddof=1)) if len(means) > 1 else 0.0


def summarize(block: Block, episodes: dict[str, dict], code_stamps: dict[str, Any] | None = None) -> dict[str, Any]:
    """The summary row of a block from its episodes (``RunDir.episodes``)."""
    records = [episodes[k] for k in block.keys() if k in episodes]
    turns = sum(r["turns"] for r in records)
    term_names = sorted({t for r in records for t in r["terms"]})
    types: dict[str, list[dict]] = {}
    for task in block.tasks:
        types.setdefault(task["task_type"], [])
    for r in records:
        types.setdefault(r["task_type"], []).append(r)
    scores = [r["metrics"]["score"] for r in records if "score" in r["metrics"]]
    max_turns = sorted({r.get("max_turns") for r in records} - {None})
    stamps = {**(code_stamps or {}), **block.stamps,
              "task_list_hash": task_list_hash(t["task_id"] for t in block.tasks), "num_tasks": len(block.tasks),
              "repeats": block.repeats, "env_kwargs": block.env_kwargs}
    if max_turns:
        stamps["max_turns"] = max_turns[0] if len(max_turns) == 1 else max_turns
    row = {
        "agent": block.agent, "env": block.env, "split": block.split,
        "episodes": len(records), "expected_episodes": len(block.tasks) * block.repeats,
        "success": _mean(r["success"] for r in records),
        "success_std": _std_over_repeats(records, lambda r: r["success"]),
        "score": _mean(scores),
        "prs_return": _mean(r["prs_return"] for r in records),
        "prs_return_std": _std_over_repeats(records, lambda r: r["prs_return"]),
        "terms": {t: _mean(r["terms"].get(t, 0.0) for r in records) for t in term_names},
        "by_task_type": {t: {"episodes": len(rs), "success": _mean(x["success"] for x in rs)}
                         for t, rs in sorted(types.items())},
        "invalid_action_rate": sum(r["invalid_actions"] for r in records) / turns if turns else None,
        "repeated_action_rate": sum(r["repeated_actions"] for r in records) / turns if turns else None,
        "outcomes": {o: sum(r["outcome"] == o for r in records) for o in OUTCOMES},
        "turns": _mean(r["turns"] for r in records),
        "generated_tokens": _mean(r["generated_tokens"] for r in records),
        "stamps": stamps,
    }
    return row


def missing(block: Block, episodes: dict[str, dict]) -> list[str]:
    """Keys of the block's episodes that are not finished yet."""
    return [k for k in block.keys() if k not in episodes]

