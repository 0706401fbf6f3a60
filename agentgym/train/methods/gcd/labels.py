"""Step labels for the GCD judge task, read off a trajectory with no model (SPEC §4.4).

A step is **bad** when its action was invalid, or when the state it started from comes back at a
later step start of the same episode: whatever was done in between went nowhere. A step is
**good** when it is the final step of a successful episode. Every other step is unlabelled
(``None``): an outcome reward says little about a middle step, so we do not guess.

>>> step_labels(["room", "hall", "room", "kitchen"], [True, True, True], success=True)
['bad', None, 'good']
>>> step_labels(["a", "b", "c"], [True, False, True], success=False)
[None, 'bad', None]

Good steps are rare (one per successful episode) while bad ones are common, so a judge trained
on raw labels wins by always saying "bad". :func:`balance_labels` keeps the two classes equal.

>>> import random
>>> items = [("bad", i) for i in range(5)] + [("good", 9), (None, 7)]
>>> kept, stats = balance_labels(items, random.Random(0))
>>> sorted(label for label, _ in kept), stats["method"]
(['bad', 'good'], 'downsample')
"""

from __future__ import annotations

import random
from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np

GOOD, BAD = "good", "bad"

REASON_INVALID = "invalid"
"""The action was invalid (the env's ``info["action_valid"]`` was False)."""
REASON_REVISIT = "revisit"
"""The state the step started from came back at a later step start."""
REASON_SOLVED = "solved"
"""The final step of a successful episode."""

BALANCE_MODES = ("downsample", "none")


def step_label_reasons(observations: Sequence[str], actions_valid: Sequence[bool], success: bool,
                       state_keys: Sequence[Hashable] | None = None) -> list[tuple[str | None, str | None]]:
    """``(label, reason)`` for every step of one episode; see :func:`step_labels` for the arguments.

    The reason is one of :data:`REASON_INVALID`, :data:`REASON_REVISIT`, :data:`REASON_SOLVED` or
    None for an unlabelled step. An invalid action that also revisits a state reports
    ``"invalid"``: it names what was wrong with the action itself, not just its outcome.

    >>> step_label_reasons(["s", "s", "t"], [False, True], success=True)
    [('bad', 'invalid'), ('good', 'solved')]
    """
    n_steps = len(actions_valid)
    if len(observations) not in (n_steps, n_steps + 1):
        raise ValueError(f"{n_steps} steps need {n_steps} or {n_steps + 1} observations, got {len(observations)}")
    if state_keys is not None and len(state_keys) not in (n_steps, n_steps + 1):
        raise ValueError(f"{n_steps} steps need {n_steps} or {n_steps + 1} state keys, got {len(state_keys)}")
    keys = list(state_keys if state_keys is not None else observations)[:n_steps]
    # The last step start of each key: a step revisits when its key starts a later step too. Only
    # step starts count, as the spec words it: the final observation started no step.
    last_start: dict[Hashable, int] = {}
    for t, key in enumerate(keys):
        last_start[key] = t
    out: list[tuple[str | None, str | None]] = []
    for t in range(n_steps):
        if not actions_valid[t]:
            out.append((BAD, REASON_INVALID))
        elif last_start[keys[t]] > t:
            out.append((BAD, REASON_REVISIT))
        elif success and t == n_steps - 1:
            out.append((GOOD, REASON_SOLVED))
        else:
            out.append((None, None))
    return out


def step_labels(observations: Sequence[str], actions_valid: Sequence[bool], success: bool,
                state_keys: Sequence[Hashable] | None = None) -> list[str | None]:
    """``"good"``, ``"bad"`` or None (unlabelled) for every step of one episode.

    Bad wins when a step is both: only the final step of a successful episode can be good, and if
    its action was invalid the success did not come from that action (the env ended the episode
    for another reason, or parsed a reply it also flagged). Calling it good would teach the judge
    that an invalid action can be right, the very confusion between similar good and bad actions
    GCD is meant to pull apart; "invalid" is a fact about the action, "good" only an inference
    from the outcome.

    Args:
        observations: ``observations[t]`` is the observation step ``t`` started from. ``T`` or
            ``T + 1`` entries; a final observation (after the last action) is accepted and ignored.
        actions_valid: ``info["action_valid"]`` of each step; its length ``T`` is the step count.
        success: whether the episode ended in success.
        state_keys: optional hashable state of each step start (same length rules as
            ``observations``), used instead of the observation text when given. Use it when the
            observation text is not the state, e.g. it echoes feedback such as "Nothing happens."
            from different places, or carries a step counter that never repeats.

    >>> step_labels(["s0", "s1", "s2"], [True, True, True], success=False, state_keys=["x", "y", "x"])
    ['bad', None, None]
    >>> step_labels(["s0"], [False], success=True)
    ['bad']
    """
    return [label for label, _ in step_label_reasons(observations, actions_valid, success, state_keys)]


def balance_labels(items: Sequence[tuple[str | None, Any]], rng: random.Random | np.random.Generator,
                   mode: str = "downsample") -> tuple[list[tuple[str, Any]], dict[str, Any]]:
    """Keep equal numbers of good and bad ``(label, payload)`` items.

    ``"downsample"`` draws, without replacement, as many items of the larger class as the smaller
    class has. When one class is empty nothing is kept: a batch of one verdict only rewards
    saying that verdict. ``"none"`` keeps every labelled item as it is. Unlabelled items (label
    None) are always dropped. Kept items stay in their input order, so the result depends only on
    the items and the state of ``rng``.

    Args:
        items: ``(label, payload)`` pairs, label ``"good"``, ``"bad"`` or None.
        rng: a :class:`random.Random` or :class:`numpy.random.Generator`; only the downsampled
            class draws from it.
        mode: ``"downsample"`` or ``"none"``.

    Returns:
        ``(kept, stats)``; stats has ``good_before``, ``bad_before``, ``unlabelled``, ``good``,
        ``bad`` (counts) and ``method``: ``"downsample"``, ``"none"`` or ``"one_class_empty"``.

    >>> kept, stats = balance_labels([("good", "a"), ("good", "b")], random.Random(0))
    >>> kept, stats["method"]
    ([], 'one_class_empty')
    """
    if mode not in BALANCE_MODES:
        raise ValueError(f"mode must be one of {BALANCE_MODES}, got {mode!r}")
    good = [i for i, (label, _) in enumerate(items) if label == GOOD]
    bad = [i for i, (label, _) in enumerate(items) if label == BAD]
    unknown = [label for label, _ in items if label not in (GOOD, BAD, None)]
    if unknown:
        raise ValueError(f"labels must be 'good', 'bad' or None, got {unknown[0]!r}")
    stats: dict[str, Any] = {"good_before": len(good), "bad_before": len(bad),
                             "unlabelled": len(items) - len(good) - len(bad)}
    if mode == "none":
        keep = sorted(good + bad)
        method = "none"
    elif not good or not bad:
        keep, method = [], "one_class_empty"
    else:
        n = min(len(good), len(bad))
        larger, smaller = (good, bad) if len(good) > len(bad) else (bad, good)
        keep = sorted(smaller + _draw(larger, n, rng))
        method = "downsample"
    kept = [(items[i][0], items[i][1]) for i in keep]
    stats.update(good=sum(label == GOOD for label, _ in kept), bad=sum(label == BAD for label, _ in kept),
                 method=method)
    return kept, stats


def _draw(indices: list[int], n: int, rng: random.Random | np.random.Generator) -> list[int]:
    if n >= len(indices):
        return list(indices)  # nothing to drop: leave the rng untouched
    if isinstance(rng, np.random.Generator):
        return [indices[int(j)] for j in rng.choice(len(indices), size=n, replace=False)]
    if isinstance(rng, random.Random):
        return rng.sample(indices, n)
    raise TypeError(f"rng must be a random.Random or numpy.random.Generator, got {type(rng).__name__}")
