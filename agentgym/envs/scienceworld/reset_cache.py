"""ScienceWorld gold paths, kept so that a variation's gold path is generated once.

With the JVM's identity hashes fixed (the env's default ``deterministic=True``) a variation's gold
path is a function of (task, variation, simplifications), and the world a load builds is the same
with or without it: ``load(..., generateGoldPath=True)`` builds the world, plays the whole gold path
on it and builds it again, several times the cost of a plain load (seconds for the genetics tasks).
So an expert reset of a variation seen before loads it plainly and takes the kept gold path.

The valid actions right after a load are not kept, though they too are always the same: listing
them changes how the engine names some objects later in the episode (the paint cups of
``use-thermometer``), so a reset that skipped the call would play on differently.

:class:`ResetCache` keeps gold paths in memory (the most recent :data:`MEMORY_ENTRIES` variations)
and on disk under ``$AGENTGYM_CACHE/scienceworld/resets`` (or ``~/.cache/agentgym/scienceworld/resets``),
one zlib-compressed JSON file per variation, named by a SHA-256 of the scienceworld version and the
variation. The expert plays what an entry holds, so an entry is used only if this user wrote it for
that variation (:mod:`agentgym.envs.cache_signing`: an HMAC-SHA256 of the key and the entry under a
per-user secret kept 0600 in the user's state folder, never in the cache folder). One that does not verify (corrupt, written by another user
or machine, copied in, written by hand) is never decompressed: it is a miss, and the gold path is
generated again and rewritten. A verified entry inflates to at most :data:`MAX_ENTRY_BYTES` (a
90-step gold path's entry is 2 kB), and its JSON is checked field by field. Writes go to a
temporary file renamed into place.
"""

from __future__ import annotations

import collections
import hashlib
import json
import os
import zlib
from functools import lru_cache

from agentgym.envs.cache_signing import SignedEntries, decompress_bounded

FORMAT = 2
MEMORY_ENTRIES = 256
MAX_ENTRY_BYTES = 4 << 20
"""The most an entry may hold, compressed or inflated: past it, it is a miss."""
FIELDS = ("gold",)
"""What an entry holds: ``gold``, the gold path."""


@lru_cache(maxsize=1)
def scienceworld_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("scienceworld")
    except PackageNotFoundError:
        return "?"


def default_cache_dir() -> str:
    root = os.path.expanduser(os.environ.get("AGENTGYM_CACHE") or "~/.cache/agentgym")
    return os.path.join(root, "scienceworld", "resets")


class ResetCache:
    """Gold paths per (task, variation, simplifications)."""

    def __init__(self, root: str | None = None):
        self.root = root or default_cache_dir()
        self._memory: collections.OrderedDict[str, dict] = collections.OrderedDict()
        self.hits = self.misses = 0
        self.rejected = 0
        """Entries on disk that were there but not used (unverified, too large or malformed)."""
        self._entries = SignedEntries(self.root, f"agentgym-scienceworld-reset/{FORMAT}")

    def _key(self, task: str, variation: int, simplifications: str) -> tuple[str, dict]:
        ident = {"format": FORMAT, "scienceworld": scienceworld_version(), "task": task,
                 "variation": int(variation), "simplifications": simplifications}
        return hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest(), ident

    def get(self, task: str, variation: int, simplifications: str, field: str) -> list[str] | None:
        """A kept value (a list of strings), or None."""
        key, ident = self._key(task, variation, simplifications)
        entry = self._memory.get(key)
        if entry is None:
            entry = self._read(key, ident)
            self._remember(key, entry)
        else:
            self._memory.move_to_end(key)
        value = entry.get(field)
        if value is None:
            self.misses += 1
            return None
        self.hits += 1
        return list(value)

    def put(self, task: str, variation: int, simplifications: str, field: str, value: list[str]) -> None:
        if field not in FIELDS:
            raise ValueError(f"unknown reset cache field {field!r}; expected one of {FIELDS}")
        key, ident = self._key(task, variation, simplifications)
        entry = dict(self._memory[key] if key in self._memory else self._read(key, ident))
        entry[field] = [str(v) for v in value]
        self._remember(key, entry)
        self._write(key, {"ident": ident, **entry})

    def _remember(self, key: str, entry: dict) -> None:
        self._memory[key] = entry
        self._memory.move_to_end(key)
        while len(self._memory) > MEMORY_ENTRIES:
            self._memory.popitem(last=False)

    def path(self, key: str) -> str:
        return self._entries.path(key)

    def _read(self, key: str, ident: dict) -> dict:
        try:
            blob = self._entries.read(key, max_bytes=MAX_ENTRY_BYTES)
            if blob is None:
                return {}
            data = json.loads(decompress_bounded(blob, MAX_ENTRY_BYTES))
            if data.get("ident") != ident:
                raise ValueError("an entry of another variation")
            return {field: data[field] for field in FIELDS
                    if isinstance(data.get(field), list) and all(isinstance(v, str) for v in data[field])}
        except Exception:  # unverified, too large, corrupt: nothing kept (generated again, rewritten)
            self.rejected += 1
            return {}

    def _write(self, key: str, data: dict) -> None:
        # a folder that cannot be written only means nothing is kept on disk
        self._entries.write(key, zlib.compress(json.dumps(data, separators=(",", ":")).encode("utf-8"), 6))
