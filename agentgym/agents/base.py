"""The one interface every policy shares: a batch of prompts in, a batch of completions out.

A prompt is either a chat history (a list of ``{"role", "content"}`` messages, as made by
:func:`agentgym.episode_to_messages`) or, for policies that own a tokenizer, the token ids of a
prompt that is already rendered. Trainers pass ids so that the tokens a model is trained on are
exactly the tokens it was sampled from; custom agents and evaluation pass messages.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from dataclasses import dataclass, field

from agentgym.settings import SettingError, check_on_init

Message = dict
ChatHistory = Sequence[Message]
Prompt = ChatHistory | Sequence[int]


@dataclass
class SamplingConfig:
    """How to sample a completion. Shared by every policy; the trainers' rollout settings hold one
    (``--max-new-tokens``, ``--temperature``, ``--top-p``, ``--top-k``)."""

    max_new_tokens: int = 256
    """most tokens per model turn"""
    temperature: float = 1.0
    """sampling temperature (0: greedy, so a group's episodes tie; a trainer also applies it to the
    training logprobs)"""
    top_p: float = 1.0
    """nucleus sampling mass (1: off)"""
    top_k: int = 0
    """sample from the k most likely tokens only (0: off)"""

    def __post_init__(self) -> None:
        check_on_init(self)

    def check(self) -> None:
        """A :class:`~agentgym.settings.SettingError` for a value no policy can sample with."""
        if not _is_int(self.max_new_tokens) or self.max_new_tokens < 1:
            raise SettingError("max_new_tokens", f"must be an integer >= 1, got {self.max_new_tokens!r}")
        if not (isinstance(self.temperature, numbers.Real) and math.isfinite(self.temperature)
                and self.temperature >= 0):
            raise SettingError("temperature", f"must be a finite number >= 0, got {self.temperature!r}")
        if not (isinstance(self.top_p, numbers.Real) and 0 < self.top_p <= 1):
            raise SettingError("top_p", f"must be in (0, 1], got {self.top_p!r}")
        if not _is_int(self.top_k) or self.top_k < 0:
            raise SettingError("top_k", f"must be an integer >= 0, got {self.top_k!r}")


def _is_int(value) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


@dataclass
class Completion:
    """One sampled completion."""

    text: str
    """The completion as text, special tokens removed: what the env receives as the action."""
    token_ids: list[int] = field(default_factory=list)
    """Sampled token ids, the end-of-turn token included when the model emitted it. Empty when the
    backend does not report ids (some OpenAI-compatible servers)."""
    logprobs: list[float] = field(default_factory=list)
    """Log-probability of each sampled token under the sampling distribution (temperature applied);
    empty when the backend does not report them."""
    prompt_ids: list[int] | None = None
    """The prompt's token ids as the model saw them, when known."""
    finish_reason: str = "stop"
    """``stop`` (end-of-turn token) or ``length`` (hit ``max_new_tokens``)."""
    allowed_token_ids: list[list[int]] | None = None
    """Per sampled token, the ids the policy could sample there (sorted), when ``generate`` was
    given the replies this prompt may produce (``allowed``); None for a free completion. The
    ``logprobs`` are then under that mask, and a trainer masks its logits alike."""
    candidate_ids: list[list[int]] | None = None
    """The token ids of every reply the completion was chosen among, when ``generate`` was given
    replies to score (``scored``: :mod:`agentgym.agents.scoring`); this completion's ``token_ids``
    are one of them and its ``logprobs`` sum to its log-probability under the softmax over the
    candidates' scores. None otherwise."""
    candidate_scores: list[float] | None = None
    """With ``candidate_ids``: each candidate's score ``S_j`` (its summed token log-probability at the
    sampling temperature) under the weights that chose, so an update at those weights needs not
    score them again (:func:`agentgym.train.optim.update.scored_normalizers`). None otherwise."""


class Policy:
    """Base class of agentgym policies. Subclasses implement :meth:`generate`."""

    sampling: SamplingConfig

    def generate(self, prompts: Sequence[Prompt], sampling: SamplingConfig | None = None,
                 allowed: Sequence[Sequence[str] | None] | None = None,
                 scored: Sequence[Sequence[str] | None] | None = None) -> list[Completion]:
        """Sample one completion per prompt.

        ``allowed[i]`` (when given) is None or the replies prompt ``i`` may produce (an env's
        ``info["allowed_replies"]``): the completion is then one of them, each as the model writes
        it (its tokens, then the end-of-turn token), sampled token by token within them.
        ``scored[i]`` (an env's ``info["scored_replies"]``): the completion is one of them too,
        chosen whole by the softmax over each reply's summed token log-probabilities
        (:mod:`agentgym.agents.scoring`). A policy that can do neither refuses a non-None entry
        (:func:`refuse_allowed`). Callers pass ``allowed`` and ``scored`` only when one is given, so
        a policy that takes neither keyword still serves every other env."""
        raise NotImplementedError

    def act(self, messages: ChatHistory) -> str:
        """The next action for one chat history: a convenience for custom agents."""
        return self.generate([messages])[0].text

    def __call__(self, prompts: Sequence[Prompt], sampling: SamplingConfig | None = None,
                 allowed: Sequence[Sequence[str] | None] | None = None,
                 scored: Sequence[Sequence[str] | None] | None = None) -> list[Completion]:
        return self.generate(prompts, sampling, **reply_lists(allowed, scored))


def reply_lists(allowed: Sequence[Sequence[str] | None] | None = None,
                scored: Sequence[Sequence[str] | None] | None = None) -> dict:
    """The keywords of :meth:`Policy.generate` that constrain something: ``allowed`` and ``scored``
    when any of their entries is a list.

    >>> reply_lists([None, ["1", "2"]], [None, None])
    {'allowed': [None, ['1', '2']]}
    """
    return {name: value for name, value in (("allowed", allowed), ("scored", scored))
            if value is not None and any(v is not None for v in value)}


def check_allowed(prompts: Sequence[Prompt], allowed: Sequence[Sequence[str] | None] | None
                  ) -> list[list[str] | None] | None:
    """``allowed`` as a list of lists, one entry per prompt; None when it constrains nothing.

    >>> check_allowed([[1], [2]], [None, ("1", "2")])
    [None, ['1', '2']]
    >>> check_allowed([[1]], [None]) is None
    True
    """
    if allowed is None:
        return None
    allowed = [None if a is None else [str(r) for r in a] for a in allowed]
    if len(allowed) != len(prompts):
        raise ValueError(f"allowed has {len(allowed)} entries for {len(prompts)} prompts")
    if any(a is not None and not a for a in allowed):
        raise ValueError("an entry of allowed is empty: give None (any reply) or at least one reply")
    return allowed if any(a is not None for a in allowed) else None


def refuse_allowed(policy: Policy, allowed: Sequence[Sequence[str] | None] | None,
                   scored: Sequence[Sequence[str] | None] | None = None) -> None:
    """A ValueError when ``allowed`` or ``scored`` constrains a reply that ``policy`` cannot constrain."""
    if allowed is not None and any(a is not None for a in allowed):
        raise ValueError(f"{type(policy).__name__} cannot constrain its replies to a list (allowed=, an env's "
                         "constrained_choice=True); sample with HFPolicy (a trainer's --generator hf) or make "
                         "the env without constrained_choice")
    if scored is not None and any(a is not None for a in scored):
        raise ValueError(f"{type(policy).__name__} cannot score a list of replies (scored=, an env's "
                         "scored_actions=True); score with HFPolicy (a trainer's --generator hf) or make "
                         "the env without scored_actions")


def is_token_prompt(prompt: Prompt) -> bool:
    """True for a prompt given as token ids, False for a chat history."""
    if len(prompt) == 0:
        raise ValueError("empty prompt")
    first = prompt[0]
    if isinstance(first, dict):
        return False
    if isinstance(first, int) or hasattr(first, "__index__"):
        return True
    raise TypeError(f"a prompt is a list of chat messages or of token ids, got items of type {type(first).__name__}")
