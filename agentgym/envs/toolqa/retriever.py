"""BM25 search over a passage corpus, on the ``bm25s`` library (sparse scores, no Python loops per doc)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Sequence

import numpy as np


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
        from bm25s.tokenization import Tokenizer

        if not docs:
            raise ValueError("BM25Retriever needs at least one document")
        logging.getLogger("bm25s").setLevel(logging.WARNING)
        self.docs = list(docs)
        self._by_id = {d.id: d for d in self.docs}
        if len(self._by_id) != len(self.docs):
            raise ValueError("document ids must be unique")
        self._tokenizer = Tokenizer(stopwords="en")
        corpus_ids = self._tokenizer.tokenize([d.contents for d in self.docs], update_vocab=True,
                                              show_progress=False, return_as="ids")
        self._bm25 = bm25s.BM25(k1=k1, b=b)
        self._bm25.index(corpus_ids, show_progress=False)
        self._vocab_size = len(self._tokenizer.get_vocab_dict())

    def __len__(self) -> int:
        return len(self.docs)

    def get(self, doc_id: str) -> Doc | None:
        return self._by_id.get(doc_id)

    def _query_ids(self, query: str) -> list[int]:
        words = self._tokenizer.tokenize([query], update_vocab=False, show_progress=False, return_as="string")[0]
        vocab = self._tokenizer.get_vocab_dict()
        return [vocab[w] for w in words if w in vocab]

    def search(self, query: str, top_k: int = 3) -> list[Hit]:
        """The ``top_k`` best passages with a positive score (fewer when few match)."""
        ids = self._query_ids(query)
        if not ids or top_k <= 0:
            return []
        scores = self._bm25.get_scores(ids)
        k = min(top_k, len(scores))
        top = np.argpartition(-scores, k - 1)[:k]
        top = top[np.argsort(-scores[top], kind="stable")]
        return [Hit(self.docs[i], float(scores[i])) for i in top if scores[i] > 0]
