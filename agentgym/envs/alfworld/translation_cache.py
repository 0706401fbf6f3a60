"""Game translations kept on disk, so that each game file is translated once per machine.

An entry is the game's translation (:mod:`agentgym.envs.alfworld.translation`): a line of JSON and
the two SAS texts it gives the lengths of, zlib-compressed, under
``$AGENTGYM_CACHE/alfworld/translations`` (or ``~/.cache/agentgym/alfworld/translations``),
named by :func:`cache_key`: a SHA-256 of what the translation is made from (the game file's PDDL
domain, grammar and PDDL problem, which fix the game; not its walkthrough or ``solvable`` flag,
which ``alfworld-generate --verify`` writes after playing it), the textworld, alfworld and
fast-downward versions and the entry format. A changed game or engine version is a new key, so a
stale entry is never read.

An entry is trusted only if this user wrote it: it carries an HMAC-SHA256, under a secret only this
user can read (32 random bytes, made on first use, mode 0600, in the user's state folder, never in
the cache folder: :func:`~agentgym.envs.cache_signing.secret_path`), of the
game's key and the compressed entry. Play takes the game's goal and rules from the entry (the SAS
text goes to fast-downward, whose parser ends the process on malformed input), so an entry that does
not verify (corrupt, truncated, written by another user or machine, copied in from elsewhere, made
for another game) is never decompressed or parsed: it is a miss, translated again and rewritten.
A verified entry is still checked as it is used (every expression it would evaluate must occur in
the game file's own grammar). Each user's entries have names of their own (``KEY.UID.json.z``), so
users sharing a folder do not overwrite each other's. A secret that is not this user's own private
regular file means no cache (translations are not kept; one warning), as does a folder that cannot
be written. The signing is :mod:`agentgym.envs.cache_signing`, shared with ScienceWorld's
reset cache.

Writers write a temporary file in the same folder and rename it into place, so a reader sees a
whole entry or none, and concurrent writers of one entry (same bytes) do not disturb each other.
"""

from __future__ import annotations

import hashlib
import json
import os
import zlib
from functools import lru_cache

from agentgym.envs.alfworld.cache_folder import cache_root
from agentgym.envs.cache_signing import SignedEntries

FORMAT = 2
"""Bump when what :func:`agentgym.envs.alfworld.translation.translate` returns changes."""


@lru_cache(maxsize=1)
def engine_versions() -> str:
    from importlib.metadata import PackageNotFoundError, version

    parts = []
    for dist in ("textworld", "alfworld", "fast-downward-textworld"):
        try:
            parts.append(f"{dist}={version(dist)}")
        except PackageNotFoundError:
            parts.append(f"{dist}=?")
    return ";".join(parts)


GAME_FIELDS = ("pddl_domain", "grammar", "pddl_problem")
"""The fields of a ``game.tw-pddl`` file a translation is made from."""


def cache_key(game_data: dict) -> str:
    """The entry name of a game (a ``game.tw-pddl`` file's content) under the installed engines."""
    h = hashlib.sha256()
    h.update(f"agentgym-alfworld-translation/{FORMAT}/{engine_versions()}".encode())
    for field in GAME_FIELDS:
        value = game_data[field].encode("utf-8")
        h.update(b"\0%d\0" % len(value))
        h.update(value)
    return h.hexdigest()


def default_cache_dir() -> str:
    return os.path.join(cache_root(), "translations")


class TranslationCache:
    """Translations on disk under ``root`` (default :func:`default_cache_dir`), with hit/miss counts."""

    def __init__(self, root: str | None = None):
        self.root = root or default_cache_dir()
        self.hits = self.misses = self.rejected = 0
        self._entries = SignedEntries(self.root, f"agentgym-alfworld-translation/{FORMAT}")

    def path(self, key: str) -> str:
        return self._entries.path(key)

    def secret(self) -> bytes | None:
        """This user's secret for the folder (:meth:`SignedEntries.secret`); None means no cache."""
        return self._entries.secret()

    def get(self, game_data: dict) -> dict | None:
        """The kept translation of this game file, or None (absent, unverified or unreadable: a
        miss). The caller checks the translation against the game as it uses it, and calls
        :meth:`reject` if it does not fit."""
        key = cache_key(game_data)
        try:
            blob = self._entries.read(key)
            if blob is None:
                self.misses += 1
                return None
            translation = _unpack(zlib.decompress(blob), key)
        except Exception:  # corrupt, foreign or poisoned: translate again and overwrite it
            self.misses += 1
            self.rejected += 1
            return None
        self.hits += 1
        return translation

    def reject(self) -> None:
        """Count the last hit as a miss: its translation did not fit the game (it gets rewritten)."""
        self.hits -= 1
        self.misses += 1
        self.rejected += 1

    def put(self, game_data: dict, translation: dict) -> bool:
        """Keep a game's translation; False when the folder cannot be written (nothing is raised)."""
        key = cache_key(game_data)
        if self.secret() is None:
            return False
        return self._entries.write(key, zlib.compress(_pack(translation, key), 6))


# An entry: one line of JSON (format, key, the translation less its two SAS texts, their lengths),
# then the SAS texts as they are; JSON-escaping 300 kB of SAS text would double the time to read it.
def _pack(translation: dict, key: str) -> bytes:
    task = translation["task"]
    sas, replan = task["sas"].encode("utf-8"), task["sas_replan"].encode("utf-8")
    rest = {**translation, "task": {k: v for k, v in task.items() if k not in ("sas", "sas_replan")}}
    header = {"format": FORMAT, "key": key, "sas_bytes": len(sas), "sas_replan_bytes": len(replan),
              "translation": rest}
    return json.dumps(header, separators=(",", ":")).encode("utf-8") + b"\n" + sas + replan


def _unpack(data: bytes, key: str) -> dict:
    line_end = data.index(b"\n")
    header = json.loads(data[:line_end])
    if header.get("format") != FORMAT or header.get("key") != key:
        raise ValueError("an entry of another key or format")
    n_sas, n_replan = int(header["sas_bytes"]), int(header["sas_replan_bytes"])
    body = data[line_end + 1:]
    if len(body) != n_sas + n_replan:
        raise ValueError("a truncated entry")
    translation = header["translation"]
    translation["task"]["sas"] = body[:n_sas].decode("utf-8")
    translation["task"]["sas_replan"] = body[n_sas:].decode("utf-8")
    return translation
