"""Where a command writes: its output path checked before any work, and a full disk told in one line.

A command that plays episodes or trains for minutes and only then finds it cannot write its result
has wasted them, and its traceback says little. So each command that takes an output (``--out``,
``--output``, ``--output-dir``) calls :func:`check_output_dir` or :func:`check_output_file` first:
a small probe file is written and removed in the folder (or, when it does not exist yet, in the
nearest folder above it, where it will be made), which finds a path under a regular file, a
folder the user may not write, a read-only mount and a disk that is already full.
A disk that fills up later, during the run, is recognised by :func:`disk_full` and told by
:func:`disk_full_message`. Both raise or return one line that names the flag and says what to do.
"""

from __future__ import annotations

import errno
import os

_FULL = (errno.ENOSPC, errno.EDQUOT)
# how libraries that wrap the OS error (safetensors, torch.save) still spell it
_FULL_TEXT = ("No space left on device", "Disk quota exceeded", "os error 28", "os error 122")


class OutputPathError(ValueError):
    """An output path the command cannot write; the message is one line naming the flag."""


def _problem(folder: str, advice: str) -> str | None:
    """Why files cannot be written in ``folder`` and what to do (``advice``, or for a full disk to
    free some), or None when they can. A folder that does not exist yet is not made: the probe goes
    to the nearest one that does, where the command will make it."""
    existing = os.path.abspath(folder)
    while not os.path.exists(existing) and os.path.dirname(existing) != existing:
        existing = os.path.dirname(existing)
    if not os.path.isdir(existing):
        return f"{existing!r} is a file, not a folder: {advice}"
    try:
        probe = os.path.join(existing, f".agentgym-write-check-{os.getpid()}")
        try:
            with open(probe, "wb") as f:
                f.write(b"\n")  # a full disk refuses the first byte; an empty file may still be made
        finally:
            if os.path.exists(probe):
                os.remove(probe)
    except OSError as e:
        if e.errno in _FULL:
            advice = "free some space, or give a path on another disk"
        return f"{e.strerror or e}: {advice}"
    return None


def check_output_dir(path: str | os.PathLike, flag: str) -> None:
    """Check that the folder ``path`` can be made (when missing) and written, or raise
    :class:`OutputPathError` naming ``flag``.

    >>> check_output_dir("/proc/x", "--out")
    Traceback (most recent call last):
    ...
    agentgym.output_paths.OutputPathError: --out '/proc/x' cannot be written: No such file or directory: give a folder you can write to
    """
    path = os.fspath(path)
    problem = _problem(path, "give a folder you can write to")
    if problem:
        raise OutputPathError(f"{flag} {path!r} cannot be written: {problem}")


def check_output_file(path: str | os.PathLike, flag: str) -> None:
    """:func:`check_output_dir` for the folder of the file ``path``; a ``path`` that is a folder is
    refused too. The file itself is not made here (a run that fails leaves no empty result)."""
    path = os.fspath(path)
    if os.path.isdir(path):
        raise OutputPathError(f"{flag} {path!r} is a folder: give a file path")
    problem = _problem(os.path.dirname(path) or ".", "give a path you can write to")
    if problem:
        raise OutputPathError(f"{flag} {path!r} cannot be written: {problem}")


def disk_full(error: BaseException | None) -> bool:
    """Whether ``error`` (or an error it was raised from) is a full disk or an exhausted quota."""
    seen = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        if isinstance(error, OSError) and error.errno in _FULL:
            return True
        if any(text in str(error) for text in _FULL_TEXT):
            return True
        error = error.__cause__ or error.__context__
    return False


def disk_full_message(flag: str, path: str | os.PathLike, then: str = "run the command again") -> str:
    """One line for a disk that filled up while the command wrote under ``path``."""
    return f"the disk of {flag} {os.fspath(path)!r} is full (No space left on device): free some space, then {then}"
