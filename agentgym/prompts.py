"""Episodes as chat messages: the one prompt layout shared by custom agents, evaluation and training.

An episode is the system prompt, the observations the env returned and the actions the agent sent:
``obs_0, act_0, obs_1, act_1, ...``. As chat messages it is ``system``, then ``user`` for every
observation and ``assistant`` for every action, ready for ``tokenizer.apply_chat_template``.

>>> messages = episode_to_messages("Answer with <answer>.", ["Q: 2+2?"], [])
>>> [m["role"] for m in messages]
['system', 'user']
>>> messages = episode_to_messages("sys", ["o0", "o1", "o2"], ["a0", "a1"], window=1)
>>> [m["content"] for m in messages]
['sys', 'o0', 'a1', 'o2']

When the env's observations already carry the task and the recent history (an embodied env made
with ``observation="history+admissible"``; :func:`observations_carry_history` reads it from the
reset info), the prompt is the system prompt and the latest observation, whatever ``window`` says:

>>> [m["content"] for m in episode_to_messages("sys", ["o0", "o1", "o2"], ["a0", "a1"], history_in_observation=True)]
['sys', 'o2']

A past action goes back into the history cut to ``max_action_chars`` (:data:`MAX_ACTION_CHARS`):
a runaway reply of megabytes, which the env rejects anyway, would otherwise be sent again with
every later turn. The cut keeps its beginning and end and says how much is gone:

>>> print(cut_action("a" * 300 + "b" * 300, max_chars=100))
aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa
[... 526 characters cut]
bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

MAX_ACTION_CHARS = 100_000
"""How much of one past action the history keeps: the envs' own default action limit (an action
longer than that is a format error), far above an ordinary reply (25,000 tokens of English are
about this many characters), so only runaway output is cut."""

MIN_ACTION_CHARS = 100
"""The smallest cap accepted: room for the note and a little of each end."""


def _cut_note(n: int) -> str:
    return f"\n[... {n:,} characters cut]\n"


def cut_action(text: str, max_chars: int | None = MAX_ACTION_CHARS) -> str:
    """``text`` as it goes back into the history: unchanged when it has at most ``max_chars``
    characters (None: no cap), else its first and last characters around a note of how many were
    cut, ``max_chars`` characters in all (so cutting again changes nothing)."""
    check_max_action_chars(max_chars)
    if max_chars is None or len(text) <= max_chars:
        return text
    keep = max_chars - len(_cut_note(len(text)))  # the note for the longest possible cut
    head, tail = (keep + 1) // 2, keep // 2
    return text[:head] + _cut_note(len(text) - head - tail) + text[len(text) - tail:]


def check_max_action_chars(value: int | None) -> None:
    """A precise error for a cap :func:`cut_action` cannot work with."""
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < MIN_ACTION_CHARS):
        raise ValueError(f"max_action_chars must be an integer >= {MIN_ACTION_CHARS} or None, got {value!r}")


def episode_to_messages(
    system_prompt: str,
    observations: Sequence[str],
    actions: Sequence[str],
    window: int | None = None,
    history_in_observation: bool = False,
    max_action_chars: int | None = MAX_ACTION_CHARS,
) -> list[dict[str, str]]:
    """Chat messages for an episode so far.

    Args:
        system_prompt: ``info["system_prompt"]`` from reset.
        observations: every observation so far, the reset observation first.
        actions: the actions sent so far; ``len(observations) - 1`` or ``len(observations)`` of them.
        window: keep only the last ``window`` (action, observation) turns after the first
            observation, which always stays since it states the task (the ``window`` layout of
            SPEC §4.2). None keeps everything.
        history_in_observation: each observation states the task and the last steps itself
            (``observations_carry_history(reset_info)``): keep only the latest observation (and
            the action that answers it, when given), so the history is not shown twice.
        max_action_chars: each action cut to this many characters (:func:`cut_action`); None
            keeps them whole.
    """
    if not observations:
        raise ValueError("an episode has at least the reset observation")
    if len(actions) not in (len(observations) - 1, len(observations)):
        raise ValueError(f"{len(observations)} observations need {len(observations) - 1} or "
                         f"{len(observations)} actions, got {len(actions)}")
    if window is not None and window < 0:
        raise ValueError(f"window must be >= 0 or None, got {window}")
    check_max_action_chars(max_action_chars)
    if history_in_observation:
        last = len(observations) - 1
        messages = [{"role": "system", "content": system_prompt}, {"role": "user", "content": observations[last]}]
        if len(actions) == len(observations):
            messages.append({"role": "assistant", "content": cut_action(actions[last], max_action_chars)})
        return messages
    messages = [{"role": "system", "content": system_prompt}, {"role": "user", "content": observations[0]}]
    turns = [(actions[i], observations[i + 1]) for i in range(len(observations) - 1)]
    if window is not None:
        turns = turns[len(turns) - window:] if window else []
    for action, observation in turns:
        messages.append({"role": "assistant", "content": cut_action(action, max_action_chars)})
        messages.append({"role": "user", "content": observation})
    if len(actions) == len(observations):
        messages.append({"role": "assistant", "content": cut_action(actions[-1], max_action_chars)})
    return messages


def observations_carry_history(info: Mapping[str, Any]) -> bool:
    """Whether an env's observations state the task and the recent history themselves, read from
    its reset ``info`` (``observation="history"`` or ``"history+admissible"``): prompts then show only the latest
    observation (:func:`episode_to_messages`'s ``history_in_observation``).

    >>> observations_carry_history({"observation_mode": "history+admissible"}), observations_carry_history({})
    (True, False)
    """
    return info.get("observation_mode") in ("history", "history+admissible")
