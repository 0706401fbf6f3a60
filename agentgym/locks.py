"""One writer per output directory: an exclusive lock file naming the process that holds it.

A leaderboard run directory (``--out``) and a trainer's ``--output-dir`` are written by one process
at a time: two boards on one directory would play the same episodes twice, two trainers would
overwrite each other's checkpoints. :func:`lock_dir` takes ``DIR/.agentgym.lock``, which holds the
holder's pid, host, command line and start time; a second process gets
:class:`DirectoryInUse`, whose one-line message names the first.

The lock itself is an advisory ``flock`` on that file, which the kernel drops when its process
exits however it exits (SIGKILL, a crash, a power cut on reboot). A lock file left behind by a
dead process is therefore stale by construction: the next process takes it over and says whose it
was. Where the file system does not support ``flock``, the pid in the file decides instead (a
live pid on this host holds the directory; anything else is stale).

A lock belongs to a process: taking it again in the process that holds it succeeds (the
directory is released when every taker has released it, or when the process exits), so a library
caller may run one trainer after another on one directory.
"""

from __future__ import annotations

import atexit
import errno
import fcntl
import json
import os
import socket
import sys
import threading
import time
from collections.abc import Callable

LOCK_NAME = ".agentgym.lock"

_held: dict[str, list] = {}  # real path of the lock file -> [file object, takers]
_guard = threading.Lock()


class DirectoryInUse(RuntimeError):
    """Another process holds the directory's lock."""


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid runs on this host."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # it exists, it is just not ours
    return True


def _holder_text(info: dict) -> str:
    if not info.get("pid"):
        return "another process (its lock file names none)"
    text = f"pid {info['pid']}"
    if info.get("host") and info["host"] != socket.gethostname():
        text += f" on {info['host']}"
    if info.get("command"):
        text += f" ({info['command']})"
    if info.get("since"):
        text += f", since {info['since']}"
    return text


def _read(f) -> dict:
    f.seek(0)
    try:
        info = json.loads(f.read() or "{}")
    except ValueError:
        return {}
    return info if isinstance(info, dict) else {}


def _stale_by_pid(info: dict) -> bool:
    """Without ``flock``: is the lock file's holder gone?"""
    pid = info.get("pid")
    if not isinstance(pid, int) or pid == os.getpid():
        return True
    return info.get("host") == socket.gethostname() and not pid_alive(pid)


class DirLock:
    """The held lock of one directory (see :func:`lock_dir`); ``release()`` or use as a context manager."""

    def __init__(self, path: str, previous: dict | None):
        self.path = path
        self.previous = previous
        """The stale holder this lock was taken over from (its lock file's content), else None."""
        self._released = False

    def release(self) -> None:
        if self._released:
            return
        self._released = True
        with _guard:
            entry = _held.get(self.path)
            if entry is None:
                return
            entry[1] -= 1
            if entry[1] == 0:
                _drop(self.path)

    def __enter__(self) -> DirLock:
        return self

    def __exit__(self, *exc) -> None:
        self.release()


def _drop(path: str) -> None:
    f, _ = _held.pop(path)
    try:
        os.unlink(path)  # before unlocking, so nobody locks a file that is about to vanish
    except OSError:
        pass
    f.close()


def _try_flock(f) -> bool | None:
    """True: locked; False: another process holds it; None: this file system has no flock."""
    try:
        fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except OSError as e:
        if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            return False
        if e.errno in (errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL):
            return None
        raise


def lock_dir(directory: str, log: Callable[[str], None] | None = None) -> DirLock:
    """Take ``directory``'s lock (creating the directory), or raise :class:`DirectoryInUse`.

    ``log`` (default: stderr) hears when a stale lock of a process that is gone is taken over."""
    os.makedirs(directory, exist_ok=True)
    path = os.path.realpath(os.path.join(directory, LOCK_NAME))
    with _guard:
        if path in _held:
            _held[path][1] += 1
            return DirLock(path, None)
        while True:
            f = open(path, "a+", encoding="utf-8")
            got = _try_flock(f)
            info = _read(f)
            if got is False or (got is None and not _stale_by_pid(info)):
                f.close()
                raise DirectoryInUse(f"{directory} is in use by {_holder_text(info)}: wait for it to end, "
                                     f"or use another directory (the lock is {path})")
            try:  # the holder we waited on may have deleted the file: lock the one at the path now
                same = os.path.samestat(os.fstat(f.fileno()), os.stat(path))
            except FileNotFoundError:
                same = False
            if same:
                break
            f.close()
        previous = info if info.get("pid") and info.get("pid") != os.getpid() else None
        f.seek(0)
        f.truncate()
        f.write(json.dumps({"pid": os.getpid(), "host": socket.gethostname(),
                            "command": " ".join(sys.argv)[:300],
                            "since": time.strftime("%Y-%m-%d %H:%M:%S")}) + "\n")
        f.flush()
        _held[path] = [f, 1]
    if previous is not None:
        (log or (lambda m: print(m, file=sys.stderr)))(
            f"note: took over the lock of {directory} from {_holder_text(previous)}, which is gone")
    return DirLock(path, previous)


def _release_all() -> None:
    with _guard:
        for path in list(_held):
            _drop(path)


atexit.register(_release_all)
# A forked child (a vector env worker) must not keep its parent's directories locked after the parent is gone.
os.register_at_fork(after_in_child=_held.clear)
