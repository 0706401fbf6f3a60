"""Playing one board block (one agent on one env split) through ``agentgym.make_vec``.

Envs run ready-first (``send`` / ``recv``): each env starts its next task as soon as its episode
ends. A scripted agent is asked for an action the moment an env is ready, so the board runs at
the engines' pace; a model agent is asked once for every env that is waiting, so its calls are
batched. Every episode starts from a seed derived from its env, split, task and repeat, and a
scripted agent's randomness from the same key: which worker plays an episode, and whether the
run was interrupted before it, changes nothing about it.
"""

from __future__ import annotations

import hashlib
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from agentgym.leaderboard.agents import EpisodeView
from agentgym.leaderboard.calls import Failure, call_agent
from agentgym.leaderboard.plan import agent_env_kwargs
from agentgym.leaderboard.store import Block, RunDir, append_record, episode_key
from agentgym.prompts import MAX_ACTION_CHARS, check_max_action_chars, cut_action, observations_carry_history
from agentgym.vector.options import WorkerOptions

MAX_TRANSCRIPT_CHARS = 20_000
"""Longest observation or action kept in a transcript (the rest is cut, with a note)."""


@dataclass
class RunnerConfig:
    """How blocks are played."""

    num_envs: int = 4
    """Envs played at once."""
    backend: str | None = None
    """``sync``, ``process`` or ``ray``; None: ``process`` for the engines, ``sync`` for ToolQA."""
    agent_timeout: float | None = 300.0
    """Seconds one agent call may take before its episodes end as ``agent_error``."""
    step_timeout: float | None = WorkerOptions.step_timeout
    """Seconds one env step may take before the env is restarted and its episode ends as ``env_error``."""
    progress: bool = True
    """Show a tqdm progress bar per block."""
    max_action_chars: int | None = MAX_ACTION_CHARS
    """Each past action goes back into the agent's history cut to this many characters
    (:func:`agentgym.prompts.cut_action`): a runaway reply is not sent again every turn."""

    def __post_init__(self) -> None:
        check_max_action_chars(self.max_action_chars)


def episode_seed(env: str, split: str, task_id: str, repeat: int, salt: str = "") -> int:
    digest = hashlib.sha256(f"{env}|{split}|{task_id}|{repeat}|{salt}".encode()).digest()
    return int.from_bytes(digest[:4], "little") % 2**31


def info_at(infos: dict, j: int) -> dict[str, Any]:
    """Env ``j``'s info out of Gymnasium's vector layout (the inverse of ``batch_infos``)."""
    out = {}
    for key, value in infos.items():
        if key.startswith("_") or not infos.get(f"_{key}", np.zeros(j + 1, bool))[j]:
            continue
        item = info_at(value, j) if isinstance(value, dict) else value[j]
        out[key] = item.item() if isinstance(item, np.generic) else item
    return out


def _cut(text: str) -> str:
    text = str(text)
    return text if len(text) <= MAX_TRANSCRIPT_CHARS else text[:MAX_TRANSCRIPT_CHARS] + f"... [{len(text)} chars]"


@dataclass
class _Running:
    task: dict
    repeat: int
    seed: int
    view: EpisodeView | None = None
    steps: list[dict] = field(default_factory=list)
    generated_tokens: int = 0
    pending_action: str = ""
    max_turns: int | None = None
    started: float = field(default_factory=time.monotonic)


def _record(block: Block, run: _Running, outcome: str, info: dict, error: str | None) -> dict:
    view = run.view
    # a choice number names a different action in each state: compare the actions it named
    actions = [s.get("chosen_action") or s["action"] for s in run.steps]
    normalized = [" ".join(a.lower().split()) for a in actions]
    repeated = sum(1 for k, a in enumerate(normalized) if a in normalized[:k])
    return {
        "agent": block.agent, "env": block.env, "split": block.split,
        "task_id": run.task["task_id"], "task_type": run.task["task_type"], "repeat": run.repeat,
        "seed": run.seed, "outcome": outcome, "success": outcome == "solved",
        "prs_return": float(sum(s["reward"] for s in run.steps)),
        "terms": info.get("episode_terms") or {}, "metrics": info.get("metrics") or {},
        "turns": len(run.steps), "max_turns": run.max_turns, "generated_tokens": run.generated_tokens,
        "invalid_actions": sum(1 for s in run.steps if not s["valid"]),
        "format_errors": sum(1 for s in run.steps if s["parse_error"]),
        "repeated_actions": repeated, "error": error,
        "first_observation": _cut(view.observations[0]) if view and view.observations else None,
        "transcript": run.steps,
    }


def _outcome(run: _Running, terminated: bool, truncated: bool, info: dict) -> tuple[str, str | None]:
    if info.get("error"):
        return "env_error", str(info["error"])
    if info.get("success"):
        return "solved", None
    if run.steps and sum(1 for s in run.steps if s["parse_error"]) * 2 >= len(run.steps):
        return "invalid_format", None  # at least half the turns were not one action
    return ("turn_limit" if truncated else "failed"), None


def run_block(block: Block, agent, run_dir: RunDir, cfg: RunnerConfig) -> int:
    """Play the block's unfinished episodes; returns how many were played now."""
    from agentgym.vector import make_vec

    done = set(run_dir.episodes(block))
    todo = deque((t, r) for r in range(block.repeats) for t in block.tasks
                 if episode_key(t["task_id"], r) not in done)
    total = len(block.tasks) * block.repeats
    bar = None
    if cfg.progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=total, initial=total - len(todo), desc=f"{block.agent} | {block.env} {block.split}",
                   unit="ep", dynamic_ncols=True)
    if not todo:
        if bar is not None:
            bar.close()
        return 0
    n = min(cfg.num_envs, len(todo))
    env_kwargs = {**block.env_kwargs, **agent_env_kwargs(agent)}  # checked by the plan
    vec = make_vec(block.env, num_envs=n, backend=cfg.backend or "sync", step_timeout=cfg.step_timeout, **env_kwargs)
    running: dict[int, _Running] = {}
    played = 0
    out = run_dir.open_for_append(block)

    def start(i: int) -> None:
        if not todo:
            return
        task, repeat = todo.popleft()
        seed = episode_seed(block.env, block.split, task["task_id"], repeat)
        running[i] = _Running(task, repeat, seed)
        seeds = [0] * n
        seeds[i] = seed
        vec.send_reset(env_ids=[i], seed=seeds, options=dict(task["options"]))

    def finish(i: int, outcome: str, info: dict, error: str | None) -> None:
        nonlocal played
        append_record(out, _record(block, running.pop(i), outcome, info, error))
        played += 1
        if bar is not None:
            bar.update(1)
        start(i)

    try:
        for i in range(n):
            start(i)
        while running:
            batch = vec.recv(min_envs=1 if getattr(agent, "ready_first", True) else len(vec.pending))
            ready = []
            for j, i in enumerate(batch.env_ids.tolist()):
                run, obs, info = running[i], batch.observations[j], info_at(batch.infos, j)
                if batch.resets[j]:
                    run.view = EpisodeView(block.env, block.split, run.task["task_id"], run.repeat,
                                           info.get("system_prompt", ""), [obs], [], info,
                                           np.random.default_rng(episode_seed(block.env, block.split,
                                                                              run.task["task_id"], run.repeat,
                                                                              block.agent)),
                                           task_type=run.task["task_type"],
                                           history_in_observation=observations_carry_history(info),
                                           max_action_chars=cfg.max_action_chars)
                    run.max_turns = info.get("max_turns")
                    ready.append(i)
                    continue
                if run.view is None:  # the reset itself failed
                    finish(i, "env_error", info, str(info.get("error", "reset failed")))
                    continue
                terminated, truncated = bool(batch.terminated[j]), bool(batch.truncated[j])
                run.steps.append({"action": _cut(run.pending_action), "observation": _cut(obs),
                                  "reward": float(batch.rewards[j]), "terms": info.get("reward_terms", {}),
                                  "valid": bool(info.get("action_valid", False)),
                                  "parse_error": info.get("parse_error"),
                                  **({"chosen_action": info["chosen_action"]} if "chosen_action" in info else {})})
                run.view.actions.append(cut_action(run.pending_action, cfg.max_action_chars))
                run.view.observations.append(obs)
                run.view.info = info
                if terminated or truncated:
                    outcome, error = _outcome(run, terminated, truncated, info)
                    finish(i, outcome, info, error)
                else:
                    ready.append(i)
            _act(agent, ready, running, vec, cfg, finish)
    finally:
        out.close()
        vec.close()
        if bar is not None:
            bar.close()
    return played


def _act(agent, ready: list[int], running: dict[int, _Running], vec, cfg: RunnerConfig, finish) -> None:
    """Ask the agent for the ready envs' actions and send them; failed episodes end here."""
    asking = []
    for i in ready:
        try:
            fits = agent.fits(running[i].view)
        except Exception:  # noqa: BLE001  a broken fits() is the agent's fault, not the run's
            fits = True
        if fits:
            asking.append(i)
        else:
            finish(i, "context_limit", running[i].view.info, "the next prompt does not fit the model's context")
    if not asking:
        return
    results = call_agent(agent, [running[i].view for i in asking], cfg.agent_timeout)
    send_ids, send_actions = [], []
    for i, result in zip(asking, results):
        if isinstance(result, Failure):
            finish(i, result.outcome, running[i].view.info, result.message)
            continue
        action, tokens = result
        running[i].pending_action = action
        running[i].generated_tokens += tokens
        send_ids.append(i)
        send_actions.append(action)
    if send_ids:
        vec.send(send_actions, env_ids=send_ids)
