"""SQuAD-style answer normalization, exact match and token F1.

Every short-answer metric in agentgym (EM, F1, length-aware BLEU) scores the normalized strings, so
"The Eiffel Tower." and "eiffel tower" are the same answer.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Iterable

# Answers are cut to this many characters (or four times the longest reference, if more) before
# any metric or judge sees them: far past any length a metric rewards, so no score changes, while a
# megabyte-long answer costs no more to score, or to remember in a cache, than a page.
MAX_SCORED_CHARS = 2_000
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT_TABLE = str.maketrans("", "", string.punctuation)


def normalize_answer(text: str) -> str:
    """Lowercase, drop punctuation and the articles a/an/the, squeeze white space.

    >>> normalize_answer("The  Eiffel Tower!")
    'eiffel tower'
    >>> normalize_answer("2,750,500")
    '2750500'
    """
    text = text.lower().translate(_PUNCT_TABLE)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def gold_list(golds: Iterable[str], name: str = "golds") -> list[str]:
    """The gold aliases as a list. A bare string is refused: iterated, it would be a list of its
    characters, and every answer longer than one letter would score 0.

    >>> gold_list("Paris", "references")
    Traceback (most recent call last):
    ...
    TypeError: references must be a list of gold answers, not one string: pass ['Paris']
    """
    if isinstance(golds, (str, bytes)):
        shown = golds if len(golds) <= 60 else golds[:60] + "..."
        raise TypeError(f"{name} must be a list of gold answers, not one string: pass [{shown!r}]")
    return list(golds)


def clip_for_scoring(answer: str, references: Iterable[str] = ()) -> str:
    """``answer`` cut to what is scored: ``MAX_SCORED_CHARS`` or 4x the longest reference.

    >>> len(clip_for_scoring("word " * 10_000, ["Paris"]))
    2000
    """
    limit = max(MAX_SCORED_CHARS, 4 * max((len(r) for r in references), default=0))
    return answer[:limit]


def exact_match(prediction: str, golds: Iterable[str]) -> float:
    """1.0 if the normalized prediction equals any normalized gold alias, else 0.0."""
    pred = normalize_answer(prediction)
    return float(any(pred == normalize_answer(g) for g in gold_list(golds)))


def token_f1(prediction: str, golds: Iterable[str]) -> float:
    """Best bag-of-tokens F1 of the prediction against the gold aliases.

    >>> round(token_f1("paris france", ["Paris"]), 3)
    0.667
    """
    pred_tokens = normalize_answer(prediction).split()
    best = 0.0
    for gold in gold_list(golds):
        gold_tokens = normalize_answer(gold).split()
        if not pred_tokens or not gold_tokens:
            best = max(best, float(pred_tokens == gold_tokens))
            continue
        common = sum((Counter(pred_tokens) & Counter(gold_tokens)).values())
        if common == 0:
            continue
        precision = common / len(pred_tokens)
        recall = common / len(gold_tokens)
        best = max(best, 2 * precision * recall / (precision + recall))
    return best
