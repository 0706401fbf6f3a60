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
"""

from __future__ import annotations

from typing import Sequence


def episode_to_messages(
    system_prompt: str,
    observations: Sequence[str],
    actions: Sequence[str],
    window: int | None = None,
) -> list[dict[str, str]]:
    """Chat messages for an episode so far.

    Args:
        system_prompt: ``info["system_prompt"]`` from reset.
        observations: every observation so far, the reset observation first.
        actions: the actions sent so far; ``len(observations) - 1`` or ``len(observations)`` of them.
        window: keep only the last ``window`` (action, observation) turns after the first
            observation, which always stays since it states the task (the ``window`` layout of
            SPEC §4.2). None keeps everything.
    """
    if not observations:
        raise ValueError("an episode has at least the reset observation")
    if len(actions) not in (len(observations) - 1, len(observations)):
        raise ValueError(f"{len(observations)} observations need {len(observations) - 1} or "
                         f"{len(observations)} actions, got {len(actions)}")
    if window is not None and window < 0:
        raise ValueError(f"window must be >= 0 or None, got {window}")
    messages = [{"role": "system", "content": system_prompt}, {"role": "user", "content": observations[0]}]
    turns = [(actions[i], observations[i + 1]) for i in range(len(observations) - 1)]
    if window is not None:
        turns = turns[len(turns) - window:] if window else []
    for action, observation in turns:
        messages.append({"role": "assistant", "content": action})
        messages.append({"role": "user", "content": observation})
    if len(actions) == len(observations):
        messages.append({"role": "assistant", "content": actions[-1]})
    return messages
