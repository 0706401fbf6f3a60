"""Directories the viewer tests read: synthetic runs and boards written in the formats the trainers
and the leaderboard write (a uniquely named module: every test dir has a conftest)."""

from __future__ import annotations

import json
from pathlib import Path

HOSTILE_OBSERVATION = '<script>window.pwned = "script"</script> \x1b[31mred alert\x1b[0m <b>bold?</b>'
HOSTILE_REPLY = '<img src=x onerror="window.pwned = \'img\'"><tool_call>{"name": "x"}</tool_call>'
HUGE_REPLY = "A" * 10_000_000


def run_episode(task: str, group: int, success: bool, ret: float, observation: str = "Question: what?",
                reply: str = "<answer>x</answer>", step: int = 1, turns: int = 1) -> dict:
    """One line as ``agentgym.train.run.episode_log.episode_record`` writes it."""
    return {"step": step, "split": "train", "trained": True, "version": step - 1, "lag": 0, "task_id": task,
            "group_key": f"k/{task}", "group": group, "seed": group, "tag": "batch", "system_prompt": "Answer.",
            "instruction": f"solve {task}",
            "turns": [{"observation": observation, "reply": reply, "reward": ret / turns,
                       "terms": {"format": 1.0, "answer": float(success)}, "action_valid": True, "tokens": 5,
                       "advantage": 0.5 if success else -0.5, "signals": {"gigpo/step_advantage": 0.25}}
                      for _ in range(turns)],
            "final_observation": "done", "return": ret, "success": success, "terminated": True, "truncated": False,
            "cut_by_length": False, "error": None, "episode_terms": {"answer": float(success)}, "metrics": {},
            "advantage": 0.5 if success else -0.5, "signals": {"vspo/task_value": 0.3}}


def write_run(root: Path, steps: dict[int, list[dict]], metrics: list[dict] | None = None) -> Path:
    """A run directory with these episodes per step (and metrics rows)."""
    (root / "episodes").mkdir(parents=True, exist_ok=True)
    for step, episodes in steps.items():
        with open(root / "episodes" / f"step_{step}.jsonl", "w", encoding="utf-8") as f:
            for ep in episodes:
                f.write(json.dumps(ep) + "\n")
    rows = metrics if metrics is not None else [{"step": s, "reward/mean": s / 10, "success/mean": 0.5} for s in steps]
    (root / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return root


def hostile_run(root: Path) -> Path:
    """A run whose one step holds markup, scripts, ANSI escapes and a 10 MB reply."""
    return write_run(root, {1: [
        run_episode("hostile-task", 0, False, 0.0, observation=HOSTILE_OBSERVATION, reply=HOSTILE_REPLY),
        run_episode("<script>window.pwned='task'</script>", 0, True, 1.0, reply=HUGE_REPLY),
    ]})


def large_run(root: Path, episodes: int = 3000) -> Path:
    """A run with one step of ``episodes`` episodes (groups of 8)."""
    return write_run(root, {1: [run_episode(f"task-{k // 8}", k // 8, k % 3 == 0, (k % 7) / 6) for k in range(episodes)]})
