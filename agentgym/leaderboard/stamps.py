"""What every leaderboard row is stamped with, so a reader can tell which numbers are comparable.

A row's numbers are valid only for the code, engines, task list and agent settings that made them:
the agentgym version and git commit, the engine versions (scienceworld releases change
trajectories), a hash of the task list, the env's ``max_turns`` and keyword arguments, and the
agent's own stamps (sampling, layout and window, chat template hash, checkpoint path and hash).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from functools import lru_cache
from importlib import metadata
from typing import Any

ENGINES = ("textworld", "alfworld", "scienceworld")
# Engine versions our published numbers were made with (pyproject.toml pins the same ones).
VALIDATED_ENGINES = {"textworld": "1.7.0", "alfworld": "0.4.2", "scienceworld": "1.2.3"}
# The engines each env family's tasks play on (leaderboard.tasks.family); ToolQA and a user's env play on none.
FAMILY_ENGINES = {"alfworld": ("alfworld", "textworld"), "scienceworld": ("scienceworld",)}


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def engine_versions() -> dict[str, str | None]:
    out = {}
    for name in ENGINES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


@lru_cache(maxsize=1)
def git_commit() -> str | None:
    """The commit of the agentgym source tree, with ``-dirty`` when it has uncommitted changes."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    try:
        head = subprocess.run(["git", "-C", root, "rev-parse", "HEAD"], capture_output=True, text=True,
                              timeout=10).stdout.strip()
        if not head:
            return None
        dirty = subprocess.run(["git", "-C", root, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return head + ("-dirty" if dirty else "")


def code_stamps() -> dict[str, Any]:
    import agentgym

    engines = engine_versions()
    off_pin = {k: v for k, v in engines.items() if v is not None and v != VALIDATED_ENGINES[k]}
    return {"agentgym_version": agentgym.__version__, "git_commit": git_commit(), "engines": engines,
            "engines_off_pin": off_pin}


def chat_template_hash(tokenizer) -> str | None:
    template = getattr(tokenizer, "chat_template", None)
    if isinstance(template, dict):
        template = json.dumps(template, sort_keys=True)
    return sha256_text(template)[:16] if template else None


@lru_cache(maxsize=16)
def checkpoint_hash(path: str) -> str:
    """SHA-256 over every file of a checkpoint directory (names and contents, sorted), short form.

    Reads the weights in full: a few seconds per GB, once per run."""
    digest = hashlib.sha256()
    for dirpath, dirnames, filenames in os.walk(path):
        dirnames.sort()
        for name in sorted(filenames):
            full = os.path.join(dirpath, name)
            digest.update(os.path.relpath(full, path).encode())
            with open(full, "rb") as f:
                for block in iter(lambda: f.read(1 << 20), b""):
                    digest.update(block)
    return digest.hexdigest()[:16]
