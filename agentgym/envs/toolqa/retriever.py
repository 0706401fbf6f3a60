"""BM25 search over a passage corpus, on the ``bm25s`` library (sparse scores, no Python loops per doc)."""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

_WORD = re.compile(r"(?u)\b\w\w+\b")


@dataclass(frozen=True)
class Doc:
    """One passage of a corpus."""

    id: str
    title: str
    text: str

    @property
    def contents(self) -> str:
        return f"{self.title}\n{self.text}" if self.title else self.text


@dataclass(frozen=True)
class Hit:
    doc: Doc
    score: float


class BM25Retriever:
    """Okapi BM25 (Lucene variant, k1=1.5, b=0.75) over title + text, English stopwords removed.

    >>> r = BM25Retriever([Doc("a", "Velun River", "The Velun flows north."), Doc("b", "Tesk", "A city.")])
    >>> [h.doc.id for h in r.search("where does the Velun flow", top_k=1)]
    ['a']
    """

    def __init__(self, docs: Sequence[Doc], k1: float = 1.5, b: float = 0.75):
        import bm25s
        from bm25s.stopwords import STOPWORDS_EN
        from bm25s.tokenization import Tokenized

        if not docs:
            raise ValueError("BM25Retriever needs at least one document")
        logging.getLogger("bm25s").setLevel(logging.WARNING)
        self.docs = list(docs)
        self._by_id = {d.id: d for d in self.docs}
        if len(self._by_id) != len(self.docs):
            raise ValueError("document ids must be unique")
        self._stopwords = frozenset(STOPWORDS_EN)
        # Our own tokenization (bm25s's default rule: lowercase words of 2+ word characters, English
        # stopwords dropped) because bm25s's Tokenizer costs milliseconds per query on a big vocabulary.
        self._vocab: dict[str, int] = {}
        corpus_ids = [[self._vocab.setdefault(w, len(self._vocab)) for w in self._words(d.contents)]
                      for d in self.docs]
        self._bm25 = bm25s.BM25(k1=k1, b=b)
        self._bm25.index(Tokenized(ids=corpus_ids, vocab=self._vocab), show_progress=False)
        index = self._bm25.scores
        self._data, self._indices, self._indptr = index["data"], index["indices"], index["indptr"]

    def __len__(self) -> int:
        return len(self.docs)

    def get(self, doc_id: str) -> Doc | None:
        return self._by_id.get(doc_id)

    def _words(self, text: str) -> list[str]:
        return [w for w in _WORD.findall(text.lower()) if w not in self._stopwords]

    def _query_ids(self, query: str) -> list[int]:
        return [self._vocab[w] for w in self._words(query) if w in self._vocab]

    def _scores(self, token_ids: list[int]) -> np.ndarray:
        """BM25 score of every doc: the sum of the query tokens' precomputed per-doc scores.

        Reads bm25s's sparse index directly; within one token's postings the doc indices are unique,
        so a fancy-indexed add is exact and several times faster than bm25s's ``np.add.at``.
        """
        scores = np.zeros(len(self.docs), dtype=self._data.dtype)
        for t in token_ids:
            start, end = self._indptr[t], self._indptr[t + 1]
            scores[self._indices[start:end]] += self._data[start:end]
        return scores

    def search(self, query: str, top_k: int = 3) -> list[Hit]:
        """The ``top_k`` best passages with a positive score (fewer when few match)."""
        ids = self._query_ids(query)
        if not ids or top_k <= 0:
            return []
        scores = self._scores(ids)
        k = min(top_k, len(scores))
        top = np.argpartition(-scores, k - 1)[:k]
        top = top[np.argsort(-scores[top], kind="stable")]
        return [Hit(self.docs[i], float(scores[i])) for i in top if scores[i] > 0]
