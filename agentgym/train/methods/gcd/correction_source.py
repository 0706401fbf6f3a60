"""Which "Common mistakes" list goes into later prompts: the one a model wrote, or one counted
offline from the critiques (``--gcd.correction-source``, SPEC §4.4).

- ``model``: the model's list (the actor's own, or the external judge's), whatever it reads like;
  a reply without a list falls back to counting every critique's phrase offline.
- ``offline``: the most frequent critique phrases (:func:`~agentgym.train.methods.gcd.correction.summarize_mistakes`);
  no model is asked.
- ``auto`` (default): the model's list when its readability
  (:meth:`~agentgym.train.methods.gcd.readability.Vocabulary.list_score`) reaches ``min_readability``;
  otherwise the offline count of the critiques that name a mistake in readable text. A small
  model's critiques are garbled as often as its summary, and it opens many a critique of a bad
  step with the praise its cold start taught for good ones ("The action solved the task.", or a
  jumble of its words), which as a mistake to avoid would steer the agent away from solving; both
  are left out (:func:`is_praise`). When no
  critique is left, the list is empty and nothing is injected.

>>> critiques = ["The action was invalid. Nothing changed.", "the actoin solveim runrk. <x>",
...              "The action was invalid. Again.", "The action solved the task. It was bad."]
>>> choice = choose_mistakes(critiques, ["- zq plok", "vrr"], "self", mode="auto")
>>> choice.mistakes, choice.source, choice.readability, choice.dropped
(['the action was invalid'], 'offline', 0.0, 2)
>>> choose_mistakes(critiques, ["Write valid actions."], "self", mode="auto").mistakes
['Write valid actions.']
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from agentgym.train.methods.gcd.correction import mistake_phrase, summarize_mistakes, without_mistakes
from agentgym.train.methods.gcd.english_words import FUNCTION_WORDS
from agentgym.train.methods.gcd.judge import rule_critique
from agentgym.train.methods.gcd.labels import GOOD, REASON_SOLVED
from agentgym.train.methods.gcd.readability import Vocabulary, words

CORRECTION_SOURCES = ("auto", "model", "offline")
"""Values of ``--gcd.correction-source``."""


@dataclass
class MistakesChoice:
    """A refresh's list and how it was chosen."""

    mistakes: list[str]
    source: str
    """``self`` or ``external`` (a model wrote it) or ``offline`` (counted from the critiques)"""
    readability: float | None
    """the model's list's readability (0 when its reply held no list); None when no model was asked"""
    dropped: int = 0
    """critiques left out of the offline count as unreadable or praise (``auto`` only)"""
    fallback: str | None = None
    """``auto``: why the model's list was not used (None when it was, or in the other modes)"""


PRAISE = tuple(mistake_phrase(rule_critique("", "", GOOD, reason)) for reason in (REASON_SOLVED, None))
"""First sentences the cold start's critiques of good steps open with: no mistake to avoid."""

_PRAISE_WORDS = frozenset(w for p in PRAISE for w in words(p)) - FUNCTION_WORDS


def is_praise(phrase: str) -> bool:
    """Whether ``phrase`` is the praise of a good step, garbled or not: all its content words
    (those not in :data:`~agentgym.train.methods.gcd.english_words.FUNCTION_WORDS`) come from
    :data:`PRAISE`, and it negates nothing.

    >>> [is_praise(p) for p in ["the action solved the task", "the was solved the task",
    ...                         "the action did not solve the task", "the action was invalid"]]
    [True, True, False, False]
    """
    ws = words(phrase)
    content = {w for w in ws if w not in FUNCTION_WORDS}
    negated = any(w in ("not", "no", "never", "nothing", "cannot") or w.endswith("n't") for w in ws)
    return bool(content) and content <= _PRAISE_WORDS and not negated


def names_a_mistake(critique: str, vocab: Vocabulary, min_readability: float) -> bool:
    """Whether ``critique``'s phrase (:func:`~agentgym.train.methods.gcd.correction.mistake_phrase`) reads
    as text and is not the praise of a good step.

    >>> vocab = Vocabulary()
    >>> [names_a_mistake(c, vocab, 0.85) for c in ["Looped back to the hall.", "The action solved the task.",
    ...                                              "Thettt taskept."]]
    [True, False, False]
    """
    phrase = mistake_phrase(critique)
    return not is_praise(phrase) and vocab.item_score(phrase) >= min_readability


def env_text(episodes) -> list[str]:
    """The env's own text in ``episodes``, the vocabulary a readable list draws on: each system
    prompt (without its mistakes section), task and first observation. Later observations are left
    out: they echo the model's actions back ("No passages match 'kulsep'")."""
    out: list[str] = []
    for ep in episodes:
        out += [without_mistakes(ep.system_prompt), ep.instruction, *ep.observations[:1]]
    return out


def choose_mistakes(critiques: Sequence[str], model_list: Sequence[str] | None, writer: str | None, *,
                    mode: str = "auto", env_texts: Sequence[str] = (), max_items: int = 5,
                    min_readability: float = 0.85) -> MistakesChoice:
    """The list a refresh installs.

    Args:
        critiques: the critiques gathered since the last refresh.
        model_list: the model's parsed list (``[]``: its reply held none); None when no model was
            asked (``mode="offline"``).
        writer: who wrote ``model_list``: ``"self"`` or ``"external"``.
        mode: ``auto``, ``model`` or ``offline`` (see the module).
        env_texts: the env's own text (:func:`env_text`), words a readable list may use.
        max_items: most mistakes in the list.
        min_readability: ``auto``: the least readability a list, or a critique's phrase, needs.
    """
    if mode not in CORRECTION_SOURCES:
        raise ValueError(f"mode must be one of {CORRECTION_SOURCES}, got {mode!r}")
    if mode == "offline" or model_list is None:
        return MistakesChoice(summarize_mistakes(critiques, max_items), "offline", None)
    model_list = list(model_list)
    vocab = Vocabulary(env_texts)
    score = vocab.list_score(model_list)
    if model_list and (mode == "model" or score >= min_readability):
        return MistakesChoice(model_list, str(writer), score)
    if mode == "model":  # the reply holds no list: count every critique, as this mode always has
        return MistakesChoice(summarize_mistakes(critiques, max_items), "offline", score)
    readable = [c for c in critiques if names_a_mistake(c, vocab, min_readability)]
    why = "holds no list" if not model_list else f"is not readable text (readability {score:.2f} < {min_readability:g})"
    return MistakesChoice(summarize_mistakes(readable, max_items), "offline", score,
                          dropped=len(critiques) - len(readable), fallback=why)
