"""ToolQA datasets: the built-in generated one, and loaders for real QA data and corpora.

Real data formats (the Search-R1 / FlashRAG layout):
- QA file, JSONL or Parquet: one row per question with ``question`` (str) and ``golden_answers``
  (list of str, or a str); ``id`` optional.
- Corpus, JSONL: one passage per line with ``id`` and ``contents``; a first line of ``contents``
  wrapped in double quotes is the passage title, as FlashRAG writes it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from agentgym.envs.toolqa.questions import PlanStep, Question, generate_questions, split_questions
from agentgym.envs.toolqa.retriever import BM25Retriever, Doc
from agentgym.envs.toolqa.world import default_world


class ToolQADataError(ValueError):
    """A QA or corpus file is missing or malformed; the message names the file and line."""


@dataclass
class ToolQADataset:
    name: str
    splits: dict[str, list[Question]]
    retriever: BM25Retriever

    def questions(self, split: str) -> list[Question]:
        if split not in self.splits:
            raise ValueError(f"unknown split {split!r} for dataset {self.name}; available: {sorted(self.splits)}")
        return self.splits[split]


@lru_cache(maxsize=2)
def builtin_dataset(seed: int = 0) -> ToolQADataset:
    """The generated world, its questions and a BM25 index of its passages (built once per process)."""
    world = default_world(seed)
    splits = split_questions(generate_questions(world, seed), seed)
    retriever = BM25Retriever([Doc(p.id, p.title, p.text) for p in world.passages])
    return ToolQADataset(f"builtin-{seed}", splits, retriever)


def _read_rows(path: Path) -> Iterator[tuple[int, object]]:
    """(line number, parsed row) for a JSONL or Parquet file."""
    if not path.is_file():
        raise ToolQADataError(f"{path}: no such file")
    if path.suffix == ".parquet":
        try:
            import pyarrow.parquet as pq
        except ImportError:
            raise ToolQADataError(f"{path}: reading Parquet needs pyarrow (pip install pyarrow)") from None
        try:
            table = pq.read_table(path)
        except Exception as e:
            raise ToolQADataError(f"{path}: not a readable Parquet file ({e})") from None
        for i, row in enumerate(table.to_pylist(), start=1):
            yield i, row
        return
    with path.open(encoding="utf-8", errors="replace") as f:
        for i, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                yield i, json.loads(line)
            except ValueError as e:
                raise ToolQADataError(f"{path}, line {i}: not valid JSON ({e})") from None


def load_qa_file(path: str | Path, split: str = "test") -> list[Question]:
    """Questions from a Search-R1 / FlashRAG QA file (JSONL or Parquet)."""
    path = Path(path)
    out = []
    for line, row in _read_rows(path):
        if not isinstance(row, dict):
            raise ToolQADataError(f"{path}, line {line}: expected an object with 'question' and "
                                  f"'golden_answers', got {type(row).__name__}")
        question, answers = row.get("question"), row.get("golden_answers")
        if isinstance(answers, str):
            answers = [answers]
        if hasattr(answers, "tolist"):
            answers = answers.tolist()
        if not isinstance(question, str) or not question.strip():
            raise ToolQADataError(f"{path}, line {line}: expected 'question' to be a non-empty string")
        if not isinstance(answers, list) or not answers or not all(isinstance(a, str) for a in answers):
            raise ToolQADataError(f"{path}, line {line}: expected 'golden_answers' to be a non-empty list "
                                  f"of strings, got {answers!r:.80}")
        qid = str(row.get("id", f"{path.stem}-{line}"))
        plan = [PlanStep("search", question), PlanStep("answer", answers[0])]
        source = str(row.get("data_source") or path.stem.split(".")[0])
        out.append(Question(qid, question.strip(), answers, "open_domain", plan, split=split, source=source))
    if not out:
        raise ToolQADataError(f"{path}: no questions in the file")
    return out


def load_corpus(path: str | Path) -> list[Doc]:
    """Passages from a corpus JSONL with ``id`` and ``contents``."""
    path = Path(path)
    docs = []
    for line, row in _read_rows(path):
        if not isinstance(row, dict) or "contents" not in row or not isinstance(row["contents"], str):
            raise ToolQADataError(f"{path}, line {line}: expected an object with 'id' and 'contents' (str)")
        doc_id = str(row.get("id", line - 1))
        contents = row["contents"]
        title, _, text = contents.partition("\n")
        if text and len(title) > 1 and title.startswith('"') and title.endswith('"'):
            docs.append(Doc(doc_id, title[1:-1], text))
        else:
            docs.append(Doc(doc_id, str(row.get("title", "")), contents))
    if not docs:
        raise ToolQADataError(f"{path}: no passages in the corpus")
    return docs


def load_dataset(dataset: str | Path | Mapping[str, str | Path], corpus: str | Path) -> ToolQADataset:
    """A dataset from real files: ``dataset`` is one QA file (used for every split asked for) or a
    mapping of split name to QA file."""
    if corpus is None:
        raise ToolQADataError("dataset= needs corpus= too: the JSONL corpus the questions are answered from")
    files = dict(dataset) if isinstance(dataset, Mapping) else {"train": dataset, "valid": dataset,
                                                                 "test": dataset}
    loaded: dict[Path, list[Question]] = {}
    splits = {}
    for split, path in files.items():
        path = Path(path)
        if path not in loaded:
            loaded[path] = load_qa_file(path, split)
        splits[split] = loaded[path]
    docs = load_corpus(corpus)
    try:
        retriever = BM25Retriever(docs)
    except ValueError as e:
        raise ToolQADataError(f"{corpus}: {e}") from None
    return ToolQADataset(str(corpus), splits, retriever)
