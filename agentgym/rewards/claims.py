"""What a long-form answer claims beyond the reference, and whether it states its facts in sentences.
The pieces of :class:`~agentgym.rewards.judges.ReferenceCoverageJudge` that keep a right answer
with something false added from scoring as the right answer alone.

Word-level and deterministic, like :mod:`agentgym.rewards.fact_check`:

- :func:`conflicting_specifics`: numbers (years, page counts...) and names (capitalized words
  inside a sentence) that neither the reference, the question nor the key facts contain. The
  reference is all the judge knows, so "published in 1972" beside a reference that says 1953, "by
  Bo Li" for Ana Vo, or "won the Nobel Prize" is a claim it can only count against the answer.
- :func:`unsupported_excess`: content words the reference does not support, beyond an
  allowance: a sentence that states key facts may reword them ("firm" for "company", "employed
  by" for "works for": one word, plus one per fact it states); sentences that state no key fact
  share one free word in all. Words about answering and hedges (:data:`FREE_WORDS`: "here is what
  I found", "probably") are always free. The rest is new content, a claim the reference cannot
  back.
- :func:`stated_in_sentences`: whether a key fact is stated inside a sentence (a function word
  such as "is", "in", "by" in its sentence, and a word that is not itself a key fact next to it)
  or only in a keyword list ("chemist, 1944, Lisiawirk", "Founded: 1901").

>>> ref = "Zuces Works is an aerospace company headquartered in Tesk. It was founded in 1901 by Ana Vo."
>>> conflicting_specifics("Founded in 1902 by Ana Vo, it won the Nobel Prize.", ref)
['1902', 'Nobel Prize']
>>> stated_in_sentences("Zuces Works is based in Tesk. Founder: Ana Vo.", ["Tesk", "Ana Vo"])
[True, False]
"""

from __future__ import annotations

import re
import string
from collections.abc import Sequence

from agentgym.rewards.fact_check import STOPWORDS, content_words
from agentgym.rewards.qa_metrics import normalize_answer

# Sentence pieces: . ! ? ; : or a line break, but not the point inside a number such as 3.5.
_PIECE_END = re.compile(r"(?<!\d)[.!?;:](?!\d)|\n+")
_NUMBER = re.compile(r"(?<![A-Za-z0-9])\d+(?:[.,]\d+)*(?![A-Za-z0-9])")
# words (letters, inner apostrophes and hyphens), numbers, and single punctuation marks
_TOKEN = re.compile(r"[^\W\d_]+(?:['\u2019-][^\W\d_]+)*|\d+|[^\w\s]")
_PUNCT_TABLE = str.maketrans("", "", string.punctuation + "\u2019")


FREE_WORDS = frozenset("""
sure here found find search searched searching knowledge base according source sources information
answer summary result results document documents passage passages retrieved based brief overview
details following hope helps think believe probably likely possibly perhaps maybe around roughly
approximately apparently seems
""".split())
"""Words about answering (a preface, "according to the search results") and hedges: they say
nothing about the entity, so they never count as unsupported claims."""


def _pieces(text: str) -> list[str]:
    return [p for p in _PIECE_END.split(text) if p.strip()]


def _words(piece: str) -> list[str]:
    """Lowercase words without punctuation, articles kept (unlike ``normalize_answer``)."""
    return piece.lower().translate(_PUNCT_TABLE).split()


def _number(text: str) -> str:
    return text.replace(",", "")


def _known_words(*texts: str) -> set[str]:
    return {w for t in texts for w in normalize_answer(t).split()}


def _same_word(word: str, known: str) -> bool:
    """Equal, or sharing a prefix long enough to be the same word inflected ("headquarters" and
    "headquartered", "employs" and "employer", "pages" and "page"), never less than 4 letters."""
    if word == known:
        return True
    shortest = min(len(word), len(known))
    need = max(4, shortest - 2)
    return shortest >= need and word[:need] == known[:need]


def is_supported(word: str, known: set[str]) -> bool:
    """Whether ``word`` (normalized) is one of ``known`` or an inflection of one."""
    return word in known or any(_same_word(word, k) for k in known)


def conflicting_specifics(answer: str, reference: str, question: str = "", facts: Sequence[str] = ()) -> list[str]:
    """Numbers and names in ``answer`` that the reference, question and facts do not contain, each
    once, in order. A name is a run of capitalized words inside a sentence (a sentence's first word
    counts only when the next one is capitalized too: "Nobel Prize winners ..."); a run with any
    word the reference lacks is one conflict."""
    known_text = " ".join([reference, question, *facts])
    known_numbers = {_number(n) for n in _NUMBER.findall(known_text)}
    known = _known_words(known_text)
    out: list[str] = []
    for n in _NUMBER.findall(answer):
        if _number(n) not in known_numbers and n not in out:
            out.append(n)
    for piece in _pieces(answer):
        tokens = _TOKEN.findall(piece)
        run: list[str] = []
        for j, tok in enumerate(tokens + [""]):
            capital = tok[:1].isalpha() and tok[:1].isupper() and tok.lower() not in STOPWORDS
            if capital and j == 0:
                nxt = tokens[1] if len(tokens) > 1 else ""
                capital = nxt[:1].isalpha() and nxt[:1].isupper()
            if capital:
                run.append(tok)
                continue
            if run and any(normalize_answer(w) not in known for w in run):
                name = " ".join(run)
                if name not in out:
                    out.append(name)
            run = []
    return out


def _fact_spans(words: list[str], targets: list[list[str]]) -> list[tuple[int, int, int]]:
    """(fact index, start, end) of every mention of a fact in ``words``."""
    spans = []
    for k, target in enumerate(targets):
        n = len(target)
        if n:
            spans += [(k, i, i + n) for i in range(len(words) - n + 1) if words[i:i + n] == target]
    return spans


def stated_in_sentences(answer: str, facts: Sequence[str]) -> list[bool]:
    """For each key fact, whether some mention of it sits in a sentence rather than a keyword list:
    its sentence piece has a function word outside every fact mention, and a word next to the
    mention is not part of another fact."""
    targets = [normalize_answer(f).split() for f in facts]
    stated = [False] * len(targets)
    for piece in _pieces(answer):
        words = _words(piece)
        spans = _fact_spans(words, targets)
        if not spans:
            continue
        in_fact = set()
        for _, start, end in spans:
            in_fact.update(range(start, end))
        if not any(w in STOPWORDS for i, w in enumerate(words) if i not in in_fact):
            continue  # no "is", "in", "by"...: a list, not a sentence
        for k, start, end in spans:
            if (start > 0 and start - 1 not in in_fact) or (end < len(words) and end not in in_fact):
                stated[k] = True
    return stated


def unsupported_excess(answer: str, reference: str, question: str = "", facts: Sequence[str] = (),
                       ignore: Sequence[str] = ()) -> tuple[int, list[str]]:
    """Content words of ``answer`` the reference, question and facts do not support (inflections
    allowed), beyond the allowance: per sentence piece that mentions key facts, one word plus one
    per fact; over all pieces that mention none, one word. ``ignore``: words already counted
    elsewhere (the conflicting numbers and names). Returns (excess count, the unsupported words)."""
    known = _known_words(reference, question, *facts)
    skipped = {w for item in ignore for w in normalize_answer(item).split()}
    targets = [normalize_answer(f).split() for f in facts]
    excess, factless, unsupported = 0, set(), []
    for piece in _pieces(answer):
        words = content_words(piece) - skipped - FREE_WORDS
        new = sorted(w for w in words if not is_supported(w, known))
        unsupported += [w for w in new if w not in unsupported]
        mentioned = {k for k, _, _ in _fact_spans(_words(piece), targets)}
        if mentioned:
            excess += max(0, len(new) - 1 - len(mentioned))
        else:
            factless.update(new)
    return excess + max(0, len(factless) - 1), unsupported
