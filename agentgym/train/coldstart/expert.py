"""Expert transcripts as training samples, for the SFT cold start (SPEC §5).

Any env made with ``expert=True`` puts its oracle's next action in ``info["expert_action"]``. We
play that expert (:mod:`agentgym.experts`) and lay each episode out exactly as the RL rollout would have (same chat template,
same layout): each action as its tokens plus the end-of-turn token, with loss, and everything the
template and the env wrote without. So SFT trains the model on the very token sequences GRPO will
later sample from.
"""

from __future__ import annotations

import re
from typing import Any

from agentgym.experts import play_expert_episode
from agentgym.prompts import episode_to_messages
from agentgym.train.rollout.chat import ChatEncoder, check_layout, window_prompt_ids
from agentgym.train.rollout.samples import Sample, ScoredReply


def action_ids(encoder: ChatEncoder, action: str) -> list[int]:
    """Ids of an action as the model would emit it: its tokens, then end-of-turn."""
    eos = encoder.tokenizer.eos_token_id
    return encoder.encode(action) + ([eos] if eos is not None else [])


def expert_episode(env, encoder: ChatEncoder, seed: int, layout: str = "concat", window: int | None = 2,
                   reset_options: dict[str, Any] | None = None, only_successful: bool = True,
                   chatty: bool = False, explore: float = 0.0) -> tuple[list[Sample], dict]:
    """Play one expert episode of ``env`` (made with ``expert=True``); its samples and its record
    (:func:`agentgym.experts.play_expert_episode`: messages, success, return, terms).

    Returns no samples when ``only_successful`` and the expert failed. With ``chatty``, the samples
    say the final answer as a sentence (:func:`chatty_answer`) and ``record["chatty"]`` tells
    whether the episode had an answer to rewrite.

    ``explore`` > 0 plays a random admissible action on that share of turns
    (:func:`agentgym.experts.play_expert_episode`) and trains every other turn on the expert's
    action from the state the episode is in; such an episode counts even when it runs out of turns,
    since each label is still the planner's answer from its state.
    """
    record = play_expert_episode(env, seed=seed, options=dict(reset_options or {}), explore=explore)
    if only_successful and not record["success"] and not explore:
        return [], record
    messages = record["messages"]
    if chatty:
        rewritten = chatty_answer(messages)
        record["chatty"] = rewritten is not None
        messages = rewritten or messages
    return episode_samples_from_messages(messages, encoder, layout, window,
                                         record.get("history_in_observation", False),
                                         labels=record["labels"] if explore else None,
                                         explored=record["explored"] if explore else None,
                                         scored=record.get("scored_replies")), record


_ANSWER = re.compile(r"\s*<answer>(.*)</answer>\s*", re.DOTALL)


def chatty_answer(messages: list[dict]) -> list[dict] | None:
    """The episode with its final answer said as a sentence, as a chatty instruction-tuned teacher
    writes it; None when the episode does not end in ``<answer>...</answer>``.

    A cold start that imitates such a teacher on part of its episodes learns the search and the
    answer's content, but often wraps the answer in words that an exact-answer reward does not pay
    for: a shared habit RL can remove on every task, seen or not.

    >>> chatty_answer([{"role": "user", "content": "Q"}, {"role": "assistant", "content": "<answer>Noor River</answer>"}])[-1]
    {'role': 'assistant', 'content': '<answer>The answer is Noor River.</answer>'}
    >>> chatty_answer([{"role": "assistant", "content": "<action>look</action>"}]) is None
    True
    """
    if not messages or messages[-1]["role"] != "assistant":
        return None
    found = _ANSWER.fullmatch(messages[-1]["content"])
    if found is None:
        return None
    return [*messages[:-1], {**messages[-1], "content": f"<answer>The answer is {found.group(1).strip()}.</answer>"}]


def episode_samples_from_messages(messages: list[dict], encoder: ChatEncoder, layout: str = "concat",
                                  window: int | None = 2, history_in_observation: bool = False,
                                  labels: list[str] | None = None, explored: list[bool] | None = None,
                                  scored: list[list[str] | None] | None = None) -> list[Sample]:
    """SFT samples from an episode's chat messages (system, user, assistant, ..., assistant).

    ``history_in_observation``: the observations carry the task and the last steps themselves
    (``observation="history+admissible"``); each window prompt is then the latest one alone.

    ``labels``/``explored`` (an episode played with exploration): the turns flagged in
    ``explored`` played a random action, which is never trained on. In the window layout every turn
    is its own sample and trains on its label, the expert's action from that state; in the concat
    layout the sequence must hold the action played, so an explored turn is left out of the loss.
    A turn whose label is empty (the expert had no action) is left out too.

    ``scored`` (an env made with ``scored_actions=True``): per turn, the actions the policy will
    choose among there. A trained turn's action is a :class:`ScoredReply`, so the cold start raises
    it against the others (the loss is ``-log pi(expert's action)`` under the candidates' softmax,
    :mod:`agentgym.agents.scoring`), as the policy it trains will choose; a turn whose action is not
    listed (ScienceWorld's gold path opens doors that start open) is one the policy can never play,
    and is left out of the loss."""
    check_layout(layout, history_in_observation)
    system = messages[0]["content"]
    observations = [m["content"] for m in messages if m["role"] == "user"]
    actions = [m["content"] for m in messages if m["role"] == "assistant"]
    explored = explored or [False] * len(actions)
    targets = labels if labels is not None else actions
    if layout == "window":
        samples = []
        for t, target in enumerate(targets):
            if not target or _unlisted(target, scored, t):
                continue
            prompt = window_prompt_ids(encoder, system, observations[: t + 1], actions[:t], window,
                                       history_in_observation)
            completion = action_ids(encoder, target)
            reply = _scored(encoder, len(prompt), target, scored[t] if scored else None)
            samples.append(Sample(prompt + completion, [0] * len(prompt) + [1] * len(completion), 1.0,
                                  scored=None if reply is None else [reply]))
        return samples
    ids = encoder.prompt_ids(episode_to_messages(system, observations[:1], []))
    mask = [0] * len(ids)
    replies: list[ScoredReply] = []
    for t, action in enumerate(actions):
        completion = action_ids(encoder, action)
        trained = not explored[t] and bool(targets[t]) and not _unlisted(action, scored, t)
        reply = _scored(encoder, len(ids), action, scored[t] if scored and trained else None)
        replies += [reply] if reply is not None else []
        ids += completion
        mask += [int(trained)] * len(completion)
        if t + 1 < len(observations):
            env_ids = encoder.env_turn_ids(episode_to_messages(system, observations[: t + 1], actions[:t]), action,
                                           observations[t + 1], stopped=True)
            ids += env_ids
            mask += [0] * len(env_ids)
    return [Sample(ids, mask, 1.0, scored=replies or None)]


def _unlisted(action: str, scored: list[list[str] | None] | None, t: int) -> bool:
    """Whether turn ``t``'s ``action`` is missing from the actions listed there to score."""
    return bool(scored) and scored[t] is not None and action not in scored[t]


def _scored(encoder: ChatEncoder, start: int, action: str, listed: list[str] | None) -> ScoredReply | None:
    """``action`` at ``start`` as chosen among ``listed`` (None: not listed, or no list)."""
    if not listed or action not in listed:
        return None
    candidates = [action_ids(encoder, a) for a in listed]
    return ScoredReply(start, candidates, list(listed).index(action))
