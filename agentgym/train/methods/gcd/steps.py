"""Which steps of a rollout batch the judge trains on, and how its judgments scored (SPEC §4.4).

:func:`labelled_steps` reads the rule labels (:mod:`~agentgym.train.methods.gcd.labels`) off every played
episode; :func:`cap_steps` keeps at most a step budget of the balanced ones without tipping the
balance; :func:`judgment_metrics` scores k judgments per step against the labels.

>>> from agentgym.train.rollout.episodes import Episode
>>> ep = Episode(group=0, task_id="t", group_key="t", system_prompt="", instruction="find the key",
...              observations=["hall", "room", "hall", "done"], actions=["go room", "go hall", "take key"],
...              step_infos=[{"action_valid": True}] * 3, success=True)
>>> [(label, s.turn, s.reason) for label, s in labelled_steps([ep])]
[('bad', 0, 'revisit'), (None, 1, None), ('good', 2, 'solved')]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from agentgym.train.methods.gcd.labels import BAD, GOOD, step_label_reasons


@dataclass(frozen=True)
class JudgedStep:
    """One step of one episode, as the judge is shown it."""

    episode: int
    """Index of its episode in the batch."""
    turn: int
    """Its turn within the episode."""
    task: str
    """The task in words (the env's instruction; the first observation when it gives none)."""
    observation: str
    """The observation the step started from."""
    action: str
    """The action the model took."""
    reason: str | None = None
    """Why the rules labelled it (``invalid``, ``revisit``, ``solved``); None for an unlabelled step
    or a label from an external judge."""


def episode_task(ep) -> str:
    """The task text of an episode: its instruction, else its first observation (which states it)."""
    return ep.instruction or (ep.observations[0] if ep.observations else "")


def labelled_steps(episodes: Sequence[Any]) -> list[tuple[str | None, JudgedStep]]:
    """``(label, step)`` for every step of every episode, label ``"good"``, ``"bad"`` or None.

    The env's ``info["state_key"]`` stands for the state where it is given at every step start
    (different states can print the same text); otherwise the engine's text does
    (``ep.raw_observations``: an observation that also shows the history never repeats). A step whose
    info lacks ``action_valid`` counts as valid: only the env can call an action invalid.
    """
    out: list[tuple[str | None, JudgedStep]] = []
    for i, ep in enumerate(episodes):
        n = min(len(ep.actions), len(ep.step_infos), len(ep.observations))
        if n == 0:
            continue
        valid = [bool(ep.step_infos[t].get("action_valid", True)) for t in range(n)]
        keys = list(ep.state_keys[:n]) if len(ep.state_keys) >= n else []
        # a key missing at any step start would mix text and keys; fall back to text for the episode
        keys = keys if keys and all(k is not None for k in keys) else None
        texts = ep.raw_observations[:n] if len(ep.raw_observations) >= n else ep.observations[:n]
        reasons = step_label_reasons(texts, valid, bool(ep.success), keys)
        task = episode_task(ep)
        for t, (label, reason) in enumerate(reasons):
            out.append((label, JudgedStep(i, t, task, ep.observations[t], ep.actions[t], reason)))
    return out


def cap_steps(kept: Sequence[tuple[str, Any]], limit: int, rng: np.random.Generator,
              balanced: bool = True) -> list[tuple[str, Any]]:
    """At most ``limit`` of ``kept``, drawn without replacement, input order preserved.

    With ``balanced`` (the items are already balanced) each class keeps ``limit // 2``, so the cap
    never tips the balance; otherwise ``limit`` items are drawn regardless of class.

    >>> items = [("bad", 1), ("good", 2), ("bad", 3), ("good", 4)]
    >>> sorted(label for label, _ in cap_steps(items, 2, np.random.default_rng(0)))
    ['bad', 'good']
    """
    if limit < 0:
        raise ValueError(f"limit must be >= 0, got {limit}")
    if len(kept) <= limit:
        return list(kept)
    if not balanced:
        pick = rng.choice(len(kept), size=limit, replace=False)
        return [kept[i] for i in sorted(int(j) for j in pick)]
    chosen: list[int] = []
    for label in (GOOD, BAD):
        idx = [i for i, (lab, _) in enumerate(kept) if lab == label]
        n = min(limit // 2, len(idx))
        chosen += [idx[int(j)] for j in rng.choice(len(idx), size=n, replace=False)] if n < len(idx) else idx
    return [kept[i] for i in sorted(chosen)]


def judgment_metrics(labels: Sequence[str], verdicts: Sequence[Sequence[str | None]]) -> dict[str, float]:
    """Judge accuracy over every judgment, per class, and how often a reply held a verdict at all.

    ``verdicts[j]`` are the parsed verdicts of the k judgments of step j (None: no single verdict).
    A class with no judged step reports NaN (logged as null), not a made-up 0.

    >>> m = judgment_metrics(["bad", "good"], [["bad", None], ["bad", "good"]])
    >>> m["gcd/judge_accuracy"], m["gcd/judge_accuracy_bad"], m["gcd/judge_accuracy_good"], m["gcd/judge_parse_rate"]
    (0.5, 0.5, 0.5, 0.75)
    """
    if len(labels) != len(verdicts):
        raise ValueError(f"{len(labels)} labels but {len(verdicts)} verdict lists")
    right = {GOOD: [], BAD: []}
    parsed: list[bool] = []
    for label, said in zip(labels, verdicts):
        right[label] += [v == label for v in said]
        parsed += [v is not None for v in said]
    every = right[GOOD] + right[BAD]
    mean = lambda xs: float(np.mean(xs)) if xs else float("nan")  # noqa: E731
    return {"gcd/judge_accuracy": mean(every), "gcd/judge_accuracy_good": mean(right[GOOD]),
            "gcd/judge_accuracy_bad": mean(right[BAD]), "gcd/judge_parse_rate": mean(parsed),
            "gcd/judge_said_bad_rate": mean([v == BAD for said in verdicts for v in said])}
