"""Token layouts of multi-turn episodes, built so training sees exactly the tokens generation saw.

Every prompt goes through the tokenizer's chat template (:func:`agentgym.episode_to_messages` gives
the messages), rendered to text and tokenized. Two layouts (SPEC §4.2):

``concat``: one growing token sequence per episode. Turn 0's prompt is the rendered first
    observation; after each turn the model's sampled ids are appended as they were sampled (never
    re-tokenized from text), then the env's turn: the text the template puts between that
    assistant message and the next assistant turn (end of turn, the observation as a user message,
    the next assistant header). The model generates every turn from this sequence, so the training
    sequence *is* the generation context; the loss mask is 1 only on sampled ids.
``window``: one sample per turn; the prompt is the template rendering of the system prompt, the
    first observation and the last ``k`` turns, and the sampled ids follow it. When the env's
    observations carry the task and the recent history themselves
    (``observation="history+admissible"``), the prompt is the system prompt and the latest
    observation, and ``concat`` is refused: it would show that history twice over.

Past actions go back into a prompt cut to ``max_action_chars`` (:func:`agentgym.prompts.cut_action`),
a guard against runaway output; a turn's own sample is never cut. In ``concat`` the history *is*
the sampled ids, bounded by ``max_new_tokens`` per turn and ``max_prompt_tokens`` per episode, so
there is nothing to cut; in ``window`` a prompt holds the cut text and the sample is trained with
that prompt, exactly as it was generated.

A chat template that rewrites earlier turns (some drop past ``<think>`` blocks) cannot give a
growing sequence; ``concat`` detects that and says so, and ``window`` works with any template.
"""

from __future__ import annotations

from collections.abc import Sequence

from agentgym.prompts import MAX_ACTION_CHARS, episode_to_messages

LAYOUTS = ("concat", "window")
MAX_PROMPT_TOKENS = 3072
"""The default longest prompt (``--max-prompt-tokens``)."""


class ChatEncoder:
    """Renders chat messages through a tokenizer's template and tokenizes the result."""

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer
        eos = tokenizer.eos_token
        self.eos_text = eos if isinstance(eos, str) else ""

    def render(self, messages: Sequence[dict], add_generation_prompt: bool) -> str:
        return self.tokenizer.apply_chat_template(list(messages), tokenize=False,
                                                  add_generation_prompt=add_generation_prompt)

    def encode(self, text: str) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def prompt_ids(self, messages: Sequence[dict]) -> list[int]:
        """Ids of ``messages`` followed by an open assistant turn."""
        return self.encode(self.render(messages, add_generation_prompt=True))

    def env_turn_ids(self, messages: Sequence[dict], action: str, observation: str, stopped: bool) -> list[int]:
        """Ids the template puts after the model's sampled action and before its next turn.

        Args:
            messages: the chat up to (not including) the action.
            action: the action text as the env received it.
            observation: the env's answer.
            stopped: whether the sampled ids already end with the end-of-turn token.
        """
        before = self.render(messages, add_generation_prompt=True)
        after = self.render(list(messages) + [{"role": "assistant", "content": action},
                                              {"role": "user", "content": observation}],
                            add_generation_prompt=True)
        head = before + action
        if not after.startswith(head):
            raise ValueError("the chat template does not render episodes as a growing prefix (it rewrites "
                             "earlier turns), so the 'concat' layout cannot keep training tokens equal to "
                             "generation tokens; use layout='window'")
        rest = after[len(head):]
        if stopped and self.eos_text and rest.startswith(self.eos_text):
            rest = rest[len(self.eos_text):]
        return self.encode(rest)


def window_prompt_ids(encoder: ChatEncoder, system_prompt: str, observations: Sequence[str],
                      actions: Sequence[str], window: int | None, history_in_observation: bool = False,
                      max_action_chars: int | None = MAX_ACTION_CHARS) -> list[int]:
    """The ``window`` layout's prompt for the next turn (past actions cut as
    :func:`agentgym.prompts.cut_action` does)."""
    return encoder.prompt_ids(episode_to_messages(system_prompt, observations, actions, window=window,
                                                  history_in_observation=history_in_observation,
                                                  max_action_chars=max_action_chars))


def check_layout(layout: str, history_in_observation: bool) -> None:
    """Refuse ``concat`` for observations that carry their own history, with the fix in the message."""
    if layout == "concat" and history_in_observation:
        raise ValueError("the env's observations carry the task and the last steps (observation="
                         "'history' or 'history+admissible'), which the concat layout would repeat in every turn; "
                         "use layout='window' (each prompt is the system prompt and the latest observation)")
