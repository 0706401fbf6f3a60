"""A run directory: one JSONL file of episodes and one JSON file of stamps per board block.

    DIR/episodes/<agent>__<env>__<split>.jsonl   one finished episode per line
    DIR/blocks/<agent>__<env>__<split>.json      the block: agent, env, split, tasks, stamps
    DIR/summary.json, DIR/leaderboard.md, DIR/leaderboard.png

A block is one agent on one env split. Episodes are appended (and flushed to disk) as they
finish, so a killed run loses at most the episodes in flight: at restart the partial last line
a kill may leave is cut off, finished episodes (by ``task_id`` and repeat) are skipped, and the
rest are played. ``merge`` unions the blocks of several directories.

File names keep letters, digits, ``.``, ``+`` and ``-`` of each part and turn every other run of
characters into ``_`` (``a/b`` -> ``a_b``), so two names can map to one file (``expert`` and
``expert_``; ``Expert`` and ``expert`` on a file system that ignores case). Such names are refused
(:class:`~agentgym.leaderboard.errors.BoardError`), in one run, against the blocks a directory
already holds, and in ``merge``: one agent's episodes are never filed under another's name.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

from agentgym.leaderboard.errors import BoardError

_UNSAFE = re.compile(r"[^A-Za-z0-9_.+-]+")
NAMING = ("file names keep letters, digits, '.', '+' and '-', turn other characters into '_' "
          "and ignore case; name the agents apart with NAME=AGENT")


def file_part(name: str) -> str:
    """One part of a block's file name."""
    return _UNSAFE.sub("_", name).strip("_") or "_"


def episode_key(task_id: str, repeat: int) -> str:
    return f"{task_id}#{repeat}"


@dataclass
class Block:
    """One agent on one env split: the unit the board plays, stores and summarizes."""

    agent: str
    env: str
    split: str
    tasks: list[dict] = field(default_factory=list)
    """``{"task_id", "task_type", "options"}`` per task, in board order."""
    repeats: int = 1
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    stamps: dict[str, Any] = field(default_factory=dict)

    @property
    def slug(self) -> str:
        return "__".join(file_part(part) for part in (self.agent, self.env, self.split))

    @property
    def identity(self) -> tuple[str, str, str]:
        return self.agent, self.env, self.split

    def keys(self) -> list[str]:
        return [episode_key(t["task_id"], r) for r in range(self.repeats) for t in self.tasks]


def clash(a: Block, b: Block) -> str:
    """Why two blocks cannot share one directory (their files would be one)."""
    def who(block: Block) -> str:
        return f"agent {block.agent!r} on {block.env} {block.split}"

    return f"{who(a)} and {who(b)} share the file name {a.slug!r} ({NAMING})"


def check_distinct_files(blocks) -> None:
    """Refuse blocks that would write one file (see the module docstring)."""
    seen: dict[str, Block] = {}
    for block in blocks:
        other = seen.setdefault(block.slug.casefold(), block)
        if other.identity != block.identity:
            raise BoardError(clash(other, block))


class RunDir:
    """Reads and writes one run directory."""

    def __init__(self, path: str):
        self.path = os.path.abspath(path)
        os.makedirs(os.path.join(self.path, "episodes"), exist_ok=True)
        os.makedirs(os.path.join(self.path, "blocks"), exist_ok=True)

    def episodes_file(self, block: Block) -> str:
        return os.path.join(self.path, "episodes", block.slug + ".jsonl")

    def block_file(self, block: Block) -> str:
        return os.path.join(self.path, "blocks", block.slug + ".json")

    def check_owner(self, block: Block) -> None:
        """Refuse a block whose files already hold another block's (a name that maps to the same file)."""
        path = self.block_file(block)
        if not os.path.exists(path):
            return
        with open(path, encoding="utf-8") as f:
            old = json.load(f)
        if (old.get("agent"), old.get("env"), old.get("split")) != block.identity:
            raise BoardError(f"{path} holds agent {old.get('agent')!r} on {old.get('env')} {old.get('split')}, "
                             f"not agent {block.agent!r} on {block.env} {block.split}: {NAMING}")

    def write_block(self, block: Block) -> None:
        self.check_owner(block)
        _write_json(self.block_file(block), asdict(block))

    def blocks(self) -> list[Block]:
        folder = os.path.join(self.path, "blocks")
        out = []
        for name in sorted(os.listdir(folder)):
            if name.endswith(".json"):
                with open(os.path.join(folder, name), encoding="utf-8") as f:
                    out.append(Block(**json.load(f)))
        return out

    def episodes(self, block: Block) -> dict[str, dict]:
        """The finished episodes of a block by key (a key stored twice keeps its first record)."""
        out: dict[str, dict] = {}
        for record in read_jsonl(self.episodes_file(block)):
            out.setdefault(episode_key(record["task_id"], record["repeat"]), record)
        return out

    def open_for_append(self, block: Block):
        path = self.episodes_file(block)
        _cut_partial_line(path)
        return open(path, "a", encoding="utf-8")


def append_record(f, record: dict) -> None:
    """Write one episode and push it to disk, so a SIGKILL a moment later keeps it."""
    f.write(json.dumps(record, ensure_ascii=False) + "\n")
    f.flush()
    os.fsync(f.fileno())


def read_jsonl(path: str) -> Iterator[dict]:
    if not os.path.exists(path):
        return
    with open(path, encoding="utf-8") as f:
        for line in f:
            if not line.endswith("\n"):
                break  # a line cut short by a kill: not a finished episode
            try:
                yield json.loads(line)
            except ValueError:
                continue


def _cut_partial_line(path: str) -> None:
    if not os.path.exists(path):
        return
    with open(path, "rb+") as f:
        data = f.read()
        if data and not data.endswith(b"\n"):
            f.truncate(data.rfind(b"\n") + 1)


def _write_json(path: str, data: Any) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=1, ensure_ascii=False, default=str)
    os.replace(tmp, path)


def _played_with(stamps: dict) -> dict:
    """The stamps that say how episodes were played (not which tasks a run happened to pick)."""
    return {k: v for k, v in stamps.items() if k not in ("task_list_hash", "merged_stamps", "earlier_stamps")}


def merge(sources: list[str], out: str) -> RunDir:
    """Union the blocks of several run directories into ``out``.

    Blocks with the same agent, env and split are one block: their tasks are unioned (first
    occurrence order) and their episodes too (an episode played in two runs keeps the first). A
    block played with other stamps (another commit, engine or sampling) is kept under
    ``stamps["merged_stamps"]`` so the merged row says it mixes them."""
    target = RunDir(out)
    merged: dict[str, tuple[Block, dict[str, dict]]] = {}
    for src in sources:
        run = RunDir(src)
        for block in run.blocks():
            episodes = run.episodes(block)
            key = block.slug.casefold()
            if key not in merged:
                merged[key] = (block, dict(episodes))
                continue
            have, have_eps = merged[key]
            if have.identity != block.identity:
                raise BoardError(clash(have, block))
            if _played_with(block.stamps) != _played_with(have.stamps):
                # Rows merged from different code, engines or agent settings say so.
                others = have.stamps.setdefault("merged_stamps", [])
                if block.stamps not in others:
                    others.append(block.stamps)
            known = {t["task_id"] for t in have.tasks}
            have.tasks += [t for t in block.tasks if t["task_id"] not in known]
            have.repeats = max(have.repeats, block.repeats)
            for key, record in episodes.items():
                have_eps.setdefault(key, record)
    for block, _ in merged.values():
        target.check_owner(block)
    for block, episodes in merged.values():
        target.write_block(block)
        path = target.episodes_file(block)
        with open(path, "w", encoding="utf-8") as f:
            for record in episodes.values():
                f.write(json.dumps(record, ensure_ascii=False) + "\n")
    return target
