"""Length-aware BLEU: sentence BLEU for short answers that neither rewards nor ruins verbosity blindly.

Plain sentence BLEU is a poor short-answer reward: a one-word answer has no 4-grams, so BLEU-4 is 0
even when it is exactly right, and BLEU's brevity penalty punishes short answers but nothing
punishes padding. Our definition (SPEC §4.1), after SQuAD normalization of both sides:

1. Effective n-gram order ``n = min(4, len(hyp), len(ref))``, so a one-word answer is scored on
   unigrams and a two-word one on unigrams and bigrams.
2. Sentence BLEU of order ``n`` from sacrebleu's own scorer (geometric mean of clipped n-gram
   precisions times BLEU's brevity penalty ``exp(1 - len(ref) / len(hyp))`` when the answer is
   shorter than the reference). Higher orders are add-one smoothed so a near-miss word order is
   not a hard 0; unigrams are never smoothed, so a wrong answer scores exactly 0.
3. A verbosity penalty ``exp(1 - len(hyp) / (lam * len(ref)))`` when ``len(hyp) > lam * len(ref)``
   (``lam = 2``): up to twice the reference length is free, beyond it the score decays. These two
   lengths are words as written (split on white space, before normalization), so padding with what
   normalization drops (``the the the``, a run of lone dots) costs score like any other padding.
4. The score against several gold aliases is the best one. An exact match after normalization
   scores 1.0, times the verbosity penalty.

The answer is cut to :data:`~agentgym.rewards.qa_metrics.MAX_SCORED_CHARS` characters (or four
times the longest alias) before scoring; the verbosity penalty has long driven the score to 0 by then.

Worked examples (these are tests too):

>>> length_aware_bleu("Paris", ["paris"])                      # exact match after normalization
1.0
>>> length_aware_bleu("London", ["Paris"])                     # a wrong word
0.0
>>> round(length_aware_bleu("Obama", ["Barack Obama"]), 4)     # n=1, precision 1, brevity exp(1-2)
0.3679
>>> round(length_aware_bleu("it is paris", ["Paris"]), 4)      # n=1, precision 1/3, verbosity exp(1-3/2)
0.2022
>>> round(length_aware_bleu("Paris France", ["Paris"]), 4)     # precision 1/2, within 2x: no penalty
0.5
>>> round(length_aware_bleu("the the the the Paris", ["Paris"]), 4)  # exact match, 5 written words
0.2231
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from functools import lru_cache

from sacrebleu.metrics.bleu import BLEU
from sacrebleu.metrics.helpers import extract_all_word_ngrams

from agentgym.rewards.qa_metrics import clip_for_scoring, gold_list, normalize_answer

DEFAULT_LAMBDA = 2.0


@lru_cache(maxsize=4096)
def _reference_ngrams(text: str, order: int):
    # Only references are cached: a task's gold aliases are scored again and again, answers once
    # each, and caching answers let long ones grow the process without bound.
    return extract_all_word_ngrams(text, 1, order)


def _verbosity(written_hyp: int, written_ref: int, lam: float) -> float:
    if written_hyp <= lam * written_ref:
        return 1.0
    return math.exp(1.0 - written_hyp / (lam * written_ref))


def _bleu_tokens(hyp: str, ref: str, n_hyp: int, n_ref: int) -> float:
    order = min(4, n_hyp, n_ref)
    hyp_counts, _ = extract_all_word_ngrams(hyp, 1, order)
    ref_counts, _ = _reference_ngrams(ref, order)
    correct = [0] * order
    total = [0] * order
    for gram, count in hyp_counts.items():
        k = len(gram) - 1
        total[k] += count
        if gram in ref_counts:
            correct[k] += min(count, ref_counts[gram])
    if correct[0] == 0:
        return 0.0
    for k in range(1, order):
        correct[k] += 1
        total[k] += 1
    return BLEU.compute_bleu(correct, total, n_hyp, n_ref, smooth_method="none",
                             max_ngram_order=order).score / 100.0


def length_aware_bleu(hypothesis: str, references: Iterable[str], lam: float = DEFAULT_LAMBDA) -> float:
    """Best length-aware BLEU of ``hypothesis`` over ``references`` (gold aliases), in [0, 1]."""
    if lam <= 0:
        raise ValueError(f"lam must be positive, got {lam}")
    references = gold_list(references, "references")
    clipped = clip_for_scoring(hypothesis, references)
    hyp = normalize_answer(clipped)
    n_hyp = len(hyp.split())
    if n_hyp == 0:
        return 0.0
    written_hyp = len(clipped.split())
    best = 0.0
    for reference in references:
        ref = normalize_answer(reference)
        n_ref = len(ref.split())
        if not n_ref:
            continue
        verbosity = _verbosity(written_hyp, len(reference.split()), lam)
        match = 1.0 if hyp == ref else _bleu_tokens(hyp, ref, n_hyp, n_ref)
        best = max(best, match * verbosity)
    return min(best, 1.0)
