"""Reading a long-form answer against reference facts without a model: which facts it asserts,
and how much of it the reference supports. The pieces of
:class:`~agentgym.rewards.judges.ReferenceCoverageJudge`.

Both are deliberately simple, deterministic word-level checks (docs/rewards.md says what they can
and cannot tell apart):

- :func:`asserted_facts`: a key fact counts only where the answer states it, not where it denies
  it. A mention is denied when a negation reaches it (:func:`_denied_positions`: "it is not a
  chemist", "not born in 1944, in Gasho or in Tesk", "born in Gasho rather than Lisiawirk"), when
  its clause calls something false ("... 1944, which is false"), or when a later sentence that
  states no fact calls what came before false or just says no ("All of the above is untrue.",
  "No."). A fact denied anywhere does not count, even where it is also stated.
- :func:`support`: the share of the answer's distinct content words that the reference, the
  question or the key facts contain, after a small allowance for honest rewording. Pasted passages
  and lists of candidate answers are mostly words the reference does not support.

>>> asserted_facts("Ana Vo founded it in 1901. It is not in Tesk.", ["Ana Vo", "1901", "Tesk"])
[True, True, False]
>>> asserted_facts("It is not in Tesk, and not from 1901.", ["Tesk", "1901"])
[False, False]
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from agentgym.rewards.qa_metrics import normalize_answer

# Sentence ends: . ! ? ; : or a line break, but not the point inside a number such as 3.5.
_SENTENCE_END = re.compile(r"(?<!\d)[.!?;:](?!\d)|\n+")
# Contrast opens a new clause: "not a physicist but a chemist" asserts "chemist".
_CONTRAST = re.compile(r"\b(?:but|however|although|though|whereas|yet|while)\b")
# A comma, but not the one inside a number such as 1,190.
_COMMA = re.compile(r"(?<!\d),|,(?!\d)")
NEGATIONS = frozenset({
    "not", "no", "nope", "never", "neither", "nor", "none", "nothing", "nobody", "nowhere", "without",
    "cannot", "isnt", "wasnt", "arent", "werent", "doesnt", "didnt", "dont", "hasnt", "hadnt", "havent",
    "cant", "wont", "wouldnt", "couldnt", "aint", "rather", "instead", "except", "deny", "denies", "denied",
})
LOCAL_NEGATIONS = frozenset({"rather", "instead", "except"})
FALSITY = frozenset({"false", "untrue", "incorrect", "wrong", "inaccurate", "mistaken", "lie", "lies", "myth",
                     "fake", "fabricated", "bogus"})
_TRUTH = frozenset({"true", "case", "correct", "accurate"})
# Function words carry no claim; everything else an answer says is a content word.
STOPWORDS = frozenset("""
a an the this that these those it its he him his she her hers they them their theirs we us our
i me my you your who whom whose which what when where why how there here is are was were be been being
am has have had having do does did done will would shall should can could may might must of in on at
by for with from to into onto upon about as than then so and or if because since also too very just
only still even both each all any some such same one own over under after before during while until
up down out off again further once more most much many few other another per via
""".split())


def _sentences(answer: str) -> list[list[list[list[str]]]]:
    """The answer as sentences of clauses of comma-separated segments of normalized words."""
    out = []
    for sentence in _SENTENCE_END.split(answer):
        clauses = []
        for clause in _CONTRAST.split(sentence.lower()):
            segments = [normalize_answer(part).split() for part in _COMMA.split(clause)]
            segments = [words for words in segments if words]
            if segments:
                clauses.append(segments)
        if clauses:
            out.append(clauses)
    return out


def _denied_positions(segments: list[list[str]]) -> set[int]:
    """Word positions of a clause that a negation reaches.

    A negation reaches the rest of its clause ("not born in 1944, in Gasho or in Tesk"), except an
    aside that a comma opens (", not a bank,") and a "rather than" / "instead of" / "except", which
    reach the rest of their comma segment only.
    """
    denied, start = set(), 0
    clause_end = sum(len(words) for words in segments)
    for index, words in enumerate(segments):
        end = start + len(words)
        for i, word in enumerate(words):
            if word in NEGATIONS:
                local = word in LOCAL_NEGATIONS or (i == 0 and index > 0)
                denied.update(range(start + i + 1, end if local else clause_end))
        start = end
    return denied


def _mentions(clause: str, fact: str) -> list[int]:
    """Word offsets in ``clause`` where the normalized ``fact`` starts (whole words only)."""
    words, target = clause.split(), fact.split()
    n = len(target)
    return [i for i in range(len(words) - n + 1) if words[i:i + n] == target]


def _calls_false(words: list[str]) -> bool:
    """The words call something false: "false", "wrong"..., or a negated "true" ("none of it is true")."""
    if FALSITY & set(words):
        return True
    return any(w in _TRUTH and NEGATIONS & set(words[max(0, i - 4):i]) for i, w in enumerate(words))


def _bare_denial(words: list[str]) -> bool:
    """A short sentence that only says no: "No.", "Not really.", "Nope"."""
    return 0 < len(words) <= 3 and words[0] in NEGATIONS


def asserted_facts(answer: str, facts: Sequence[str]) -> list[bool]:
    """For each key fact, whether the answer asserts it (mentions it, and denies it nowhere)."""
    targets = [normalize_answer(f) for f in facts]
    stated = [False] * len(targets)
    denied = [False] * len(targets)
    for sentence in _sentences(answer):
        found_here = False
        for segments in sentence:
            words = [w for segment in segments for w in segment]
            false_clause = _calls_false(words)
            reached = _denied_positions(segments)
            clause = " ".join(words)
            for k, target in enumerate(targets):
                for at in _mentions(clause, target) if target else []:
                    found_here = True
                    if false_clause or at in reached:
                        denied[k] = True
                    else:
                        stated[k] = True
        words = [w for segments in sentence for segment in segments for w in segment]
        if not found_here and (_calls_false(words) or _bare_denial(words)):
            # A sentence that states no fact but says "that is false" or "no" denies what came before.
            denied = [d or s for d, s in zip(denied, stated)]
    return [s and not d for s, d in zip(stated, denied)]


def content_words(text: str) -> set[str]:
    """Distinct normalized words of ``text`` that are not function words."""
    return {w for w in normalize_answer(text).split() if w not in STOPWORDS}


def support(answer: str, reference: str, question: str = "", facts: Sequence[str] = (),
            allowance: float = 0.5) -> float:
    """Share of the answer's content words found in the reference, question or facts, in [0, 1].

    ``allowance`` times the reference's own number of content words may be unsupported for free
    (rewording: "firm" for "company", "employed by" for "works for"); beyond that every
    unsupported word lowers the share.
    """
    said = content_words(answer)
    if not said:
        return 1.0
    known = content_words(reference) | content_words(question) | content_words(" ".join(facts))
    supported = len(said & known)
    free = allowance * max(len(content_words(reference) | content_words(" ".join(facts))), 1)
    return min(1.0, (supported + free) / len(said))
