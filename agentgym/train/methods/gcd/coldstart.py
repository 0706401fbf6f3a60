"""Judge samples for the cold start (SPEC §4.4): critique-and-verdict targets written from rule
labels, mixed into the expert SFT set as the paper's cold start does.

Expert episodes alone give good steps (the last step of each solved episode) but hardly any bad
ones, so most episodes here are played with one deliberate slip: at a random early step the expert's
action is replaced by

- ``invalid``: a command that looks like the env's own but is not admissible (an admissible
  command with its object number past any in the room), or, for envs without an admissible list,
  the expert's action cut in half, so that it no longer parses;
- ``detour``: another admissible command, after which the expert plays on from where it landed, so
  the agent often comes back to a state it already left.

The real env plays every step, and the labels are read off what it answered (``action_valid``,
the observations), never assumed from the slip: a "bad" label is one the env confirmed.
Each labelled step becomes one sample: the judge prompt (:func:`~agentgym.train.methods.gcd.judge.judge_prompt`)
with no loss, then :func:`~agentgym.train.methods.gcd.judge.judge_sft_target` of a
:func:`~agentgym.train.methods.gcd.judge.rule_critique` with loss. The classes are balanced.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from agentgym.train.coldstart.expert import action_ids
from agentgym.train.methods.gcd.judge import judge_prompt, judge_sft_target, rule_critique
from agentgym.train.methods.gcd.labels import balance_labels, step_label_reasons
from agentgym.train.methods.gcd.steps import cap_steps
from agentgym.train.rollout.samples import Sample

KINDS = ("expert", "invalid", "detour")
"""How each played episode goes, in turn: one clean expert episode to two with a slip."""

_TRAILING_NUMBER = re.compile(r"(\d+)\s*$")


def invalid_action(expert_action: str, admissible: Sequence[str], rng: np.random.Generator) -> str:
    """A command that looks valid but is not in ``admissible`` (or a broken ``expert_action``
    when the env lists no admissible commands).

    >>> invalid_action("go to desk 1", ["go to desk 1", "go to bed 2"], np.random.default_rng(0))[:6]
    'go to '
    >>> invalid_action('<answer>Paris</answer>', [], np.random.default_rng(0))
    '<answer>Par'
    """
    if not admissible:
        return expert_action[: max(len(expert_action) // 2, 1)]
    numbers = [int(m.group(1)) for a in admissible if (m := _TRAILING_NUMBER.search(a))]
    base = admissible[int(rng.integers(len(admissible)))]
    beyond = str(max(numbers, default=1) + 1 + int(rng.integers(3)))
    match = _TRAILING_NUMBER.search(base)
    action = base[:match.start()] + beyond if match else f"{base} {beyond}"
    return action if action not in admissible else f"{action} {beyond}"


def play_with_slip(env, seed: int, options: dict[str, Any], kind: str, rng: np.random.Generator) -> dict[str, Any]:
    """One episode of the expert of ``env`` (made with ``expert=True``) with one slip of ``kind``
    at a random step among the first three; ``"expert"`` plays it clean. Returns the task, the
    observations, actions, validity and state keys of every step, and success."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    obs, info = env.reset(seed=seed, options=options)
    if "expert_action" not in info:
        raise ValueError("the env gives no info['expert_action']: make it with expert=True")
    task = str(info.get("instruction") or obs)
    slip_at = None if kind == "expert" else int(rng.integers(3))
    observations, actions, valid, keys = [obs], [], [], [info.get("state_key")]
    raw = [info.get("raw_observation", obs)]  # the engine's text: what a revisit compares
    while True:
        action = str(info.get("expert_action") or "")
        if len(actions) == slip_at:
            admissible = list(info.get("admissible_actions") or [])
            others = [a for a in admissible if a != action]
            if kind == "detour" and others:
                action = others[int(rng.integers(len(others)))]
            else:
                action = invalid_action(action, admissible, rng)
        obs, _, terminated, truncated, info = env.step(action)
        actions.append(action)
        valid.append(bool(info.get("action_valid", True)))
        observations.append(obs)
        raw.append(info.get("raw_observation", obs))
        keys.append(info.get("state_key"))
        if terminated or truncated:
            return {"task": task, "observations": observations, "actions": actions, "valid": valid,
                    "state_keys": keys, "success": bool(info.get("success", False)), "kind": kind,
                    "raw_observations": raw}


def labelled_items(record: dict[str, Any]) -> list[tuple[str | None, tuple[str, str, str, str | None]]]:
    """``(label, (task, observation, action, reason))`` for every step of a played record."""
    n = len(record["actions"])
    keys = record["state_keys"][:n]
    texts = record.get("raw_observations", record["observations"])[:n]
    reasons = step_label_reasons(texts, record["valid"], record["success"],
                                 keys if all(k is not None for k in keys) else None)
    return [(label, (record["task"], record["observations"][t], record["actions"][t], reason))
            for t, (label, reason) in enumerate(reasons)]


def judge_cold_start_samples(env, encoder, count: int, requests: Sequence[tuple[int, dict]], seed: int = 0,
                             max_episodes: int | None = None):
    """``count`` balanced judge SFT samples (fewer when the episodes did not give enough of both
    classes), from episodes played on ``requests`` (``(seed, reset options)`` pairs, cycled).

    Returns ``(samples, stats)``; stats counts the episodes played and the labels before and after
    balancing.
    """
    if count < 1:
        raise ValueError(f"count must be >= 1, got {count}")
    if not requests:
        raise ValueError("judge cold-start samples need at least one task to play")
    rng = np.random.default_rng([int(seed), 0x6CD])
    limit = max_episodes if max_episodes is not None else 3 * count + 12
    items: list = []
    played = 0
    while played < limit:
        want = (count + 1) // 2
        if sum(label == "good" for label, _ in items) >= want and sum(label == "bad" for label, _ in items) >= want:
            break
        task_seed, options = requests[played % len(requests)]
        record = play_with_slip(env, task_seed, dict(options), KINDS[played % len(KINDS)], rng)
        items += labelled_items(record)
        played += 1
    kept, stats = balance_labels(items, rng)
    kept = cap_steps(kept, count, rng)
    samples = []
    for label, (task, observation, action, reason) in kept:
        prompt = encoder.prompt_ids(judge_prompt(task, observation, action))
        target = action_ids(encoder, judge_sft_target(label, rule_critique(observation, action, label, reason)))
        samples.append(Sample(prompt + target, [0] * len(prompt) + [1] * len(target), 1.0, kind="judge"))
    stats = {**stats, "episodes": played, "samples": len(samples)}
    return samples, stats
