"""Whether a "Common mistakes" list is readable text, before it goes into every later prompt
(SPEC §4.4).

A small actor writes its critiques and its mistakes summary in garbled text at first ("the action
solveim the environment did the runrk here"), and such a list, once injected, sits in every
training and evaluation prompt. The test here is cheap, deterministic and needs no model:

- A *word* is a run of letters (an apostrophe may join two runs: ``don't``, ``agent's``); digits
  and punctuation are not words and count neither way.
- A word is *real* when it, or its stem without one common English prefix (``un-``, ``re-``...)
  and/or suffix (``-s``, ``-ed``, ``-ing``, ``-ly``, ``-ness``...), is in the :class:`Vocabulary`:
  about 2,000 common English words (:mod:`~agentgym.train.methods.gcd.english_words`), the words of the
  project's own judge and summary instructions and critique templates, and the env's own text
  (system prompts, tasks, first observations). The critiques themselves are not a source: at
  small scale they are the garbled text.
- An item's readability is the share of its words that are real and do not repeat the word just
  before them ("the the the"); an item of fewer than :data:`MIN_ITEM_WORDS` words scores 0 (it is
  not an instruction). A list's readability is the same share over all its items' words (0 for
  an empty list): a capable model's list may use a few words the vocabulary lacks, pooled they
  weigh little, while a small model's garble misses on most lines.

It does not catch word salad made of real words ("the was action the"); it catches the made-up
words and stutters a small model writes.

>>> vocab = Vocabulary(["Put a clean mug in the coffeemachine."])
>>> vocab.item_score("Check that the mug is clean before putting it in the coffeemachine.")
1.0
>>> round(vocab.item_score("the action solveim the environment did the runrk here"), 3)
0.778
>>> vocab.list_score(["Do not repeat the action.", "the the the"]), vocab.list_score([])
(0.75, 0.0)
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from agentgym.train.methods.gcd.correction import MISTAKES_HEADER, SUMMARY_INSTRUCTIONS
from agentgym.train.methods.gcd.english_words import COMMON_WORDS
from agentgym.train.methods.gcd.judge import JUDGE_INSTRUCTIONS, rule_critique

MIN_ITEM_WORDS = 2
"""Fewest words of a readable item: a mistake to avoid is a phrase, not a lone word."""

_WORD = re.compile(r"[a-z]+(?:'[a-z]+)?")


def _project_text() -> list[str]:
    # the instructions the model is given and the critique templates its cold start teaches

    critiques = [rule_critique("", "", "bad", r) for r in ("invalid", "revisit", None)]
    critiques += [rule_critique("", "", "good", r) for r in ("solved", None)]
    return [MISTAKES_HEADER, SUMMARY_INSTRUCTIONS, JUDGE_INSTRUCTIONS, *critiques]


def words(text: str) -> list[str]:
    """The words of ``text``, lowercased, in order.

    >>> words("Don't open drawer 3 -- it's EMPTY!")
    ["don't", 'open', 'drawer', "it's", 'empty']
    """
    return _WORD.findall(str(text).lower())


_SUFFIXES = (  # (suffix, what may have stood in its place): stopped -> stop, shelves -> shelf
    ("ies", ("y",)), ("ied", ("y",)), ("ier", ("y",)), ("iest", ("y",)), ("ily", ("y",)), ("ves", ("f", "fe")),
    ("es", ("", "e")), ("s", ("",)), ("ed", ("", "e")), ("ing", ("", "e")), ("ly", ("", "le")),
    ("er", ("", "e")), ("est", ("", "e")), ("ness", ("",)), ("ful", ("",)), ("less", ("",)),
    ("ment", ("",)), ("able", ("", "e")), ("ible", ("", "e")), ("ation", ("e", "")), ("ion", ("", "e")),
    ("ity", ("", "e")), ("al", ("",)), ("ize", ("",)), ("ise", ("",)),
)
_PREFIXES = ("un", "re", "non", "pre", "dis", "mis", "in", "im", "over", "under", "sub")
_DOUBLED = ("ed", "ing", "er", "est", "able")


def _stems(word: str) -> Iterable[str]:
    """``word``, and what it may be without one common prefix and/or one common suffix (a stem of
    two letters or more)."""
    if "'" in word:  # agent's, door's: the possessive of a real word is real
        yield word
        head, _, tail = word.partition("'")
        if tail == "s":
            yield head
        return
    bases = [word] + [word[len(p):] for p in _PREFIXES if word.startswith(p) and len(word) - len(p) >= 3]
    for base in bases:
        yield base
        for suffix, endings in _SUFFIXES:
            if base.endswith(suffix) and len(base) - len(suffix) >= 2:
                stem = base[:-len(suffix)]
                yield from (stem + e for e in endings)
                if suffix in _DOUBLED and len(stem) >= 4 and stem[-1] == stem[-2]:
                    yield stem[:-1]  # stopped, putting, bigger


class Vocabulary:
    """The words a readable mistakes list may use: :data:`COMMON_WORDS`, the project's own
    instructions and critique templates, and the words (two letters or more) of ``texts``.

    Args:
        texts: the env's own text, e.g. system prompts, tasks and first observations. Text a
            model wrote (its actions echoed back, its critiques) does not belong here.
    """

    def __init__(self, texts: Iterable[str] = ()):
        self.words: set[str] = set(COMMON_WORDS)
        self.add(_project_text())
        self.add(texts)

    def add(self, texts: Iterable[str]) -> None:
        """Take in the words of more reference text."""
        for text in texts:
            self.words.update(w for w in words(text) if len(w) >= 2)

    def is_real(self, word: str) -> bool:
        """Whether ``word`` (lowercase) or one of its stems is in the vocabulary."""
        return any(s in self.words for s in _stems(word))

    def _counts(self, item: str) -> tuple[int, int]:
        """(readable words, words) of one item."""
        ws = words(item)
        if len(ws) < MIN_ITEM_WORDS:
            return 0, len(ws)
        return sum(self.is_real(w) and (i == 0 or w != ws[i - 1]) for i, w in enumerate(ws)), len(ws)

    def item_score(self, item: str) -> float:
        """Share of the item's words that are real and not a repeat of the word before; 0 for an
        item of fewer than :data:`MIN_ITEM_WORDS` words."""
        ok, n = self._counts(item)
        return ok / n if n >= MIN_ITEM_WORDS else 0.0

    def list_score(self, items: Sequence[str]) -> float:
        """Readability of a list: the share of readable words over all its items (0 for a list
        without words)."""
        counts = [self._counts(item) for item in items]
        total = sum(n for _, n in counts)
        return sum(ok for ok, _ in counts) / total if total else 0.0
