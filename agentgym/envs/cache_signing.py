"""Cache entries on disk that only this user's own writes can fill: each one is signed.

The engines' caches (ALFWorld translations, ScienceWorld gold paths) hold what a game is played
from, so an entry read back must be one this user wrote for that key. :class:`SignedEntries` keeps a
cache folder's entries as ``ROOT/KEY[:2]/KEY.UID<suffix>`` (each user's under names of their own, so
users sharing a folder do not overwrite each other's), each an HMAC-SHA256 followed by the entry's
bytes. The HMAC is of the entry's purpose (which cache and format), its key and its bytes, under a
secret only this user can read: 32 random bytes made on first use, mode 0600, kept in the user's own
state folder (:func:`secret_path`: ``$XDG_STATE_HOME/agentgym/cache-secret-UID``, by default under
``~/.local/state``), never in a cache folder, so a cache folder copied from someone else brings no
secret its entries verify under.

An entry that does not verify (corrupt, truncated, written by another user or machine, copied in
from elsewhere, made for another key) is refused before anything looks inside it: the caller never
decompresses or parses it, counts a miss and writes the entry again. So is one that is not a regular
file or is larger than its cache allows (nothing is read from it). A secret that is not this user's
own private, readable regular file of 32 bytes (a folder, a FIFO, a link, a file others can read)
or that cannot be made means no cache (nothing is kept or read, each entry is made anew), with one
warning that names it; so does a cache folder that cannot be written.
:func:`decompress_bounded` inflates a verified entry within a size cap.

Writers write a temporary file in the same folder and rename it into place, so a reader sees a whole
entry or none, and concurrent writers of one entry do not disturb each other.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import stat
import tempfile
import warnings
import zlib

SECRET_BYTES = 32
MAC_BYTES = 32  # HMAC-SHA256
MAX_ENTRY_FILE_BYTES = 64 << 20
"""The most an entry's file may hold unless its cache says otherwise: a larger one is not read."""


class UnverifiedEntry(ValueError):
    """An entry on disk that this user's secret does not sign for its key (or too large to read)."""


def user_id() -> int:
    return os.getuid() if hasattr(os, "getuid") else 0


def secret_path() -> str:
    """Where this user's cache secret lives: the user's state folder, outside every cache folder."""
    state = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return os.path.join(state, "agentgym", f"cache-secret-{user_id()}")


class SignedEntries:
    """The signed entries of one cache folder. ``purpose`` names the cache and its entry format
    (e.g. ``"agentgym-scienceworld-reset/2"``): an entry signed for one purpose never verifies for
    another."""

    def __init__(self, root: str, purpose: str, suffix: str = ".json.z"):
        self.root, self.purpose, self.suffix = root, purpose, suffix
        self._secret: bytes | None = None
        self._secret_tried = False

    def path(self, key: str) -> str:
        return os.path.join(self.root, key[:2], f"{key}.{user_id()}{self.suffix}")

    def secret(self) -> bytes | None:
        """This user's secret (:func:`secret_path`), made on first use; None when it cannot be made or
        is not this user's private regular file (then nothing is kept or read)."""
        if not self._secret_tried:
            self._secret_tried = True
            self._secret = load_secret(secret_path())
        return self._secret

    def _mac(self, key: str, blob: bytes) -> bytes:
        return hmac.new(self.secret(), f"{self.purpose}/{key}\0".encode() + blob, hashlib.sha256).digest()

    def read(self, key: str, max_bytes: int = MAX_ENTRY_FILE_BYTES) -> bytes | None:
        """The entry's bytes as written, or None if there is none. Raises :class:`UnverifiedEntry`
        for an entry that is there but does not verify (or that there is no secret to verify with),
        that is not a regular file (a FIFO, a device) or whose file holds over ``max_bytes`` (then
        nothing is read from it)."""
        try:
            fd = os.open(self.path(key), os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        except OSError:
            return None
        with os.fdopen(fd, "rb") as f:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise UnverifiedEntry("an entry that is not a regular file")
            if info.st_size > MAC_BYTES + max_bytes:
                raise UnverifiedEntry(f"an entry over {max_bytes} bytes")
            if self.secret() is None:
                raise UnverifiedEntry("no secret to verify entries with")
            data = f.read(MAC_BYTES + max_bytes + 1)
        if len(data) > MAC_BYTES + max_bytes:
            raise UnverifiedEntry(f"an entry over {max_bytes} bytes")
        mac, blob = data[:MAC_BYTES], data[MAC_BYTES:]
        if len(mac) != MAC_BYTES or not hmac.compare_digest(mac, self._mac(key, blob)):
            raise UnverifiedEntry("an entry this user did not write for this key")
        return blob

    def write(self, key: str, blob: bytes) -> bool:
        """Keep an entry; False when there is no secret or the folder cannot be written (nothing is
        raised)."""
        if self.secret() is None:
            return False
        final, tmp = self.path(key), None
        try:
            os.makedirs(os.path.dirname(final), exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=self.suffix, dir=os.path.dirname(final))
            with os.fdopen(fd, "wb") as f:
                f.write(self._mac(key, blob) + blob)
            os.chmod(tmp, 0o644)  # mkstemp makes it private; an entry holds no secret
            os.replace(tmp, final)
            return True
        except OSError:
            if tmp is not None:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass
            return False


def load_secret(path: str) -> bytes | None:
    """The secret in ``path``, made there first if absent (a private temporary file linked into
    place, so concurrent first users agree on one); None, with one warning, if it cannot be made or
    is not this user's private, readable regular file of :data:`SECRET_BYTES` bytes."""
    if not os.path.lexists(path):
        tmp = None
        try:
            os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".tmp-secret-", dir=os.path.dirname(path))  # mode 0600
            with os.fdopen(fd, "wb") as f:
                f.write(os.urandom(SECRET_BYTES))
            os.link(tmp, path)  # fails if another process made it first: that one is used
        except OSError:
            pass
        finally:
            if tmp is not None:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass
    try:  # never blocks (a FIFO), never follows a link, never opens a folder as a file
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError as e:
        return _no_secret(path, f"cannot be made or opened ({e.strerror})")
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return _no_secret(path, "is not a regular file")
        if hasattr(os, "getuid") and info.st_uid != user_id():
            return _no_secret(path, "belongs to another user")
        if info.st_mode & 0o077:
            return _no_secret(path, "can be read or written by other users")
        secret = os.read(fd, SECRET_BYTES + 1)
    except OSError as e:
        return _no_secret(path, f"cannot be read ({e.strerror})")
    finally:
        os.close(fd)
    return secret if len(secret) == SECRET_BYTES else _no_secret(path, f"does not hold {SECRET_BYTES} bytes")


_WARNED: set[str] = set()


def _no_secret(path: str, why: str) -> None:
    if path not in _WARNED:
        _WARNED.add(path)
        warnings.warn(f"agentgym's cache secret {path} {why}: the engine caches keep and read nothing (each game "
                      f"is translated, each reset replayed, anew); remove it and agentgym makes a new one",
                      RuntimeWarning, stacklevel=3)
    return None


def decompress_bounded(blob: bytes, max_bytes: int) -> bytes:
    """``zlib.decompress(blob)`` holding at most ``max_bytes`` (+1) of output: a stream that would
    expand past it, is truncated or has bytes after its end raises ``ValueError``."""
    inflater = zlib.decompressobj()
    out = inflater.decompress(blob, max_bytes + 1)
    if len(out) > max_bytes:
        raise ValueError(f"an entry that expands past {max_bytes} bytes")
    if not inflater.eof or inflater.unconsumed_tail or inflater.unused_data:
        raise ValueError("a truncated or padded zlib stream")
    return out
