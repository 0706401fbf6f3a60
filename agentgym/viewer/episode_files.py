"""An episode file (JSONL) read in pages: where each episode's line starts, its row, and the lines
that are not episodes, without holding the episodes.

A file is scanned once (again only when it changes on disk): each line is parsed, turned into its
row (the few fields a table shows and filters on) and dropped; what stays is the row and the
line's offset and length, so one episode is read back from disk when a page asks for it. A line
longer than :data:`LINE_LIMIT` is not read at all: it is skipped, like a line that is not an
episode (:class:`MalformedLine`), and both are noted with their line number and why. Rows are kept
for the files read last, :data:`CACHED_ROWS` rows in all (:class:`RowCache`), so the server's
memory is bounded by that and by the page it is serving, not by the size of the run.
"""

from __future__ import annotations

import json
import math
import os
import threading
from array import array
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass, field
from typing import Any

LINE_LIMIT = 16_000_000
"""Longest line read, in bytes (an episode's texts are cut to 8,000 characters when a trainer saves
it, so a real line is far shorter); a longer line is skipped and noted."""
CACHED_ROWS = 20_000
"""Rows kept in memory across the files read last (a row is about 300 bytes and up to 100 characters
of the first reply: 6 to 8 MB in all); a file whose rows were let go is scanned again when asked
for (40 ms for 512 episodes, 870 KB)."""
MAX_NOTES = 20
"""Malformed lines of a file named one by one (the rest are counted)."""
_CHUNK = 2**20


class MalformedLine(ValueError):
    """A line of an episode file that is not an episode; the message says why, in a few words."""


def short(value: Any) -> str:
    """``value`` in at most about 40 characters, for a note."""
    text = json.dumps(value) if isinstance(value, (list, dict, str)) else repr(value)
    return text if len(text) <= 40 else text[:40] + "…"


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise MalformedLine(f"the number {text[:40]} is out of range (no float is that large)")
    return value


def _int(text: str) -> int:
    if len(text.lstrip("-")) > 308:
        raise MalformedLine(f"the number {text[:40]}… is out of range ({len(text)} digits)")
    return int(text)


def parse_line(line: bytes) -> dict:
    """One JSONL line as a JSON object, or :class:`MalformedLine` saying why it is not one. NaN and
    Infinity (Python's json writes them) become null: a page's JSON has neither."""
    try:
        record = json.loads(line, parse_constant=lambda _: None, parse_float=_float, parse_int=_int)
    except MalformedLine:
        raise
    except json.JSONDecodeError as e:
        raise MalformedLine(f"not JSON ({e.msg} at column {e.colno})") from None
    except UnicodeDecodeError:
        raise MalformedLine("not JSON (not UTF-8 text)") from None
    except (ValueError, RecursionError) as e:
        raise MalformedLine(f"not JSON the viewer can read ({str(e)[:80] or 'nested too deep'})") from None
    if not isinstance(record, dict):
        raise MalformedLine(f"not a JSON object (a JSON {type(record).__name__}: {short(record)})")
    return record


def scan_lines(f, limit: int = LINE_LIMIT) -> Iterator[tuple[int, int, int, bytes | None]]:
    """``(line number, offset, length, line)`` of each whole line of the binary file ``f``; ``line``
    is None for a line longer than ``limit`` bytes, which is passed over a chunk at a time, never
    held. A last line with no newline yet (a file being written) is left for the next read."""
    number = offset = 0
    while True:
        line: bytes | None = f.readline(_CHUNK)
        if not line:
            return
        length = len(line)
        if not line.endswith(b"\n"):  # a line longer than a chunk, or the unfinished last one
            parts: list[bytes] | None = [line]
            while True:
                part = f.readline(_CHUNK)
                if not part:
                    return
                length += len(part)
                if parts is not None:
                    parts.append(part)
                    if length > limit:
                        parts = None
                if part.endswith(b"\n"):
                    break
            line = b"".join(parts) if parts is not None else None
        number += 1
        yield number, offset, length, line
        offset += length


def records(path: str | os.PathLike, limit: int = LINE_LIMIT) -> Iterator[dict]:
    """The JSON objects of a JSONL file, one at a time (a line that is not one, or too long, skipped)."""
    with open(path, "rb") as f:
        for _, _, _, line in scan_lines(f, limit):
            if line is not None:
                try:
                    yield parse_line(line)
                except MalformedLine:
                    continue


def note(skipped: dict, line: int, why: str) -> None:
    """Count a skipped line in ``skipped`` (``{"count": N, "lines": [...]}``), naming the first ones."""
    skipped["count"] += 1
    if len(skipped["lines"]) < MAX_NOTES:
        skipped["lines"].append({"line": line, "why": why})


def stamp(path: str | os.PathLike) -> tuple[int, int]:
    """What changes when a file is written: its modification time and size."""
    st = os.stat(path)
    return st.st_mtime_ns, st.st_size


@dataclass
class FileIndex:
    """One episode file as scanned: episode ``i``'s row, and its line's offset and length."""

    stamp: tuple[int, int]
    rows: list = field(default_factory=list)
    offsets: array = field(default_factory=lambda: array("q"))
    lengths: array = field(default_factory=lambda: array("q"))
    skipped: dict = field(default_factory=lambda: {"count": 0, "lines": []})


def index_file(path: str | os.PathLike, to_row: Callable[[dict, int], Any], limit: int = LINE_LIMIT) -> FileIndex:
    """Scan ``path``: ``to_row(record, i)`` gives episode ``i``'s row (or :class:`MalformedLine`)."""
    with open(path, "rb") as f:
        st = os.fstat(f.fileno())  # as it was when the scan began: a file written meanwhile is scanned again
        index = FileIndex((st.st_mtime_ns, st.st_size))
        for number, offset, length, line in scan_lines(f, limit):
            if line is None:
                note(index.skipped, number, f"{length / 1e6:.1f} MB long, over the {limit / 1e6:g} MB a line may be")
                continue
            try:
                index.rows.append(to_row(parse_line(line), len(index.rows)))
            except MalformedLine as e:
                note(index.skipped, number, str(e))
                continue
            index.offsets.append(offset)
            index.lengths.append(length)
    return index


def read_record(path: str | os.PathLike, index: FileIndex, i: int) -> dict:
    """Episode ``i``'s line, parsed (:class:`MalformedLine` when the file changed under the index)."""
    with open(path, "rb") as f:
        f.seek(index.offsets[i])
        return parse_line(f.read(index.lengths[i]))


class RowCache:
    """The indexes of the files read last, at most ``max_rows`` rows in all (the file read last is
    kept whatever its size); shared by the sources of one viewer, safe across threads."""

    def __init__(self, max_rows: int = CACHED_ROWS):
        self.max_rows = max_rows
        self._items: OrderedDict[Hashable, FileIndex] = OrderedDict()
        self._rows = 0
        self._lock = threading.Lock()

    def get(self, key: Hashable, current: tuple[int, int]) -> FileIndex | None:
        """The index kept under ``key`` if it was made of the file as it is now (``current`` stamp)."""
        with self._lock:
            hit = self._items.get(key)
            if hit is None or hit.stamp != current:
                return None
            self._items.move_to_end(key)
            return hit

    def put(self, key: Hashable, index: FileIndex) -> None:
        with self._lock:
            old = self._items.pop(key, None)
            self._rows -= len(old.rows) if old is not None else 0
            self._items[key] = index
            self._rows += len(index.rows)
            while self._rows > self.max_rows and len(self._items) > 1:
                _, dropped = self._items.popitem(last=False)
                self._rows -= len(dropped.rows)
