"""What ``agentgym view`` reads: a training run's directory or a leaderboard's, as one shape.

A **run** (``metrics.jsonl``, ``episodes/step_<N>.jsonl``, ``episodes/eval_step_<N>_<split>.jsonl``:
:mod:`agentgym.train.run.episode_log`) has one episode file per step and per evaluation. A
**board** (``blocks/`` and ``episodes/<agent>__<env>__<split>.jsonl``: :mod:`agentgym.leaderboard.store`)
has one per agent on an env split. Either way each line of an episode file becomes an episode in
one shape (:func:`run_episode`, :func:`board_episode`: task, turns with observation, reply, reward
terms, advantage and signals, return, success) and a :class:`Row` (the few fields a table shows
and filters on). A file is read in pages (:mod:`agentgym.viewer.episode_files`): its rows are
kept, its episodes read back from disk one at a time. A line that is not an episode
(:class:`~agentgym.viewer.episode_files.MalformedLine`: not JSON, a number out of range, turns
that are not a list) is skipped and noted with its line number and why, for the page to say.
Nothing here writes to the directory.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

from agentgym.leaderboard.store import Block
from agentgym.train.run.episode_log import EPISODES_DIR, file_step
from agentgym.viewer import episode_files
from agentgym.viewer.episode_files import FileIndex, MalformedLine, RowCache

TEXT_LIMIT = 100_000
"""Longest text sent to a page (a longer one is cut, with a note saying how long it was)."""
ID_LIMIT = 1000
"""Longest task id, group or other label a row holds (rows stay small: a page filters thousands)."""


class SourceError(ValueError):
    """A directory that is neither a run nor a board, or a file or episode it does not have."""


def _text(value: Any, limit: int = TEXT_LIMIT) -> str:
    text = "" if value is None else str(value)
    if len(text) > limit:
        return f"{text[:limit]}… [cut for display: {len(text)} chars in all]"
    return text


def number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _objects(record: dict, key: str, what: str) -> list[dict]:
    """``record[key]``, a list of JSON objects (absent or null: none), or :class:`MalformedLine`."""
    value = record.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise MalformedLine(f"{key!r} is {episode_files.short(value)}, not a list of {what}s")
    for k, item in enumerate(value, 1):
        if not isinstance(item, dict):
            raise MalformedLine(f"{what} {k} of {key!r} is {episode_files.short(item)}, not a JSON object")
    return value


def run_episode(record: dict) -> dict:
    """A run's saved episode (``episode_log.episode_record``) in the viewer's shape; a record whose
    turns are not a list of objects is a :class:`MalformedLine`."""
    turns = []
    for t in _objects(record, "turns", "turn"):
        turns.append({"observation": _text(t.get("observation")), "reply": _text(t.get("reply")),
                      "reward": number(t.get("reward")), "terms": _terms(t.get("terms")),
                      "action_valid": t.get("action_valid"), "advantage": number(t.get("advantage")),
                      "signals": t.get("signals") if isinstance(t.get("signals"), dict) else {},
                      "notes": {k: _text(t[k]) for k in ("parse_error", "chosen_action", "error") if t.get(k)}})
    meta = {k: record.get(k) for k in ("step", "split", "trained", "version", "lag", "seed", "tag", "group_key",
                                       "terminated", "truncated", "cut_by_length", "error")}
    return {"task_id": _text(record.get("task_id", ""), ID_LIMIT), "group": _text(record.get("group", ""), ID_LIMIT),
            "success": bool(record.get("success")), "return": number(record.get("return")),
            "system_prompt": _text(record.get("system_prompt")), "instruction": _text(record.get("instruction")),
            "turns": turns, "final_observation": _text(record.get("final_observation")),
            "advantage": number(record.get("advantage")), "episode_terms": _terms(record.get("episode_terms")),
            "signals": record.get("signals") if isinstance(record.get("signals"), dict) else {}, "meta": meta}


def board_episode(record: dict) -> dict:
    """A leaderboard episode (``leaderboard.runner``'s record) in the viewer's shape: turn t's
    observation is the one the agent answered (the first observation, then each step's); a record
    whose transcript is not a list of objects is a :class:`MalformedLine`."""
    steps = _objects(record, "transcript", "step")
    seen = [record.get("first_observation")] + [s.get("observation") for s in steps]
    turns = [{"observation": _text(seen[t]), "reply": _text(s.get("action")), "reward": number(s.get("reward")),
              "terms": _terms(s.get("terms")), "action_valid": s.get("valid"), "advantage": None, "signals": {},
              "notes": {k: _text(s[k]) for k in ("parse_error", "chosen_action") if s.get(k)}}
             for t, s in enumerate(steps)]
    meta = {k: record.get(k) for k in ("agent", "env", "split", "repeat", "seed", "task_type", "outcome", "turns",
                                       "max_turns", "generated_tokens", "invalid_actions", "error")}
    task = _text(record.get("task_id", ""), ID_LIMIT)
    return {"task_id": task, "group": task,
            "success": bool(record.get("success")), "return": number(record.get("prs_return")),
            "system_prompt": "", "instruction": "", "turns": turns,
            "final_observation": _text(steps[-1].get("observation")) if steps else "",
            "advantage": None, "episode_terms": _terms(record.get("terms")), "signals": {}, "meta": meta}


def _terms(value: Any) -> dict[str, float | None]:
    return {str(k): number(v) for k, v in value.items()} if isinstance(value, dict) else {}


ROW_KEYS = ("file", "id", "task_id", "group", "success", "return", "turns", "advantage", "trained", "tag",
            "outcome", "agent", "env", "split", "error", "reply")
REPLY_LIMIT = 100
"""Characters of an episode's first reply a table row shows (on one line), as a completions table does."""


class Row(NamedTuple):
    """What a table shows of an episode, and what its filters read (``ret``: its return); a tuple,
    so the rows of thousands of episodes stay small."""

    file: str
    id: int
    task_id: str
    group: str
    success: bool
    ret: float | None
    turns: int
    advantage: float | None
    trained: Any
    tag: Any
    outcome: Any
    agent: Any
    env: Any
    split: Any
    error: bool
    reply: str

    def as_dict(self) -> dict:
        """The row as a page reads it."""
        return dict(zip(ROW_KEYS, self))


def _label(value: Any, pool: dict) -> Any:
    """A row's label: a short scalar as it is (equal strings shared through ``pool``), anything else cut."""
    if isinstance(value, str):
        value = value[:ID_LIMIT]
        return pool.setdefault(value, value)
    return value if value is None or isinstance(value, (bool, int, float)) else episode_files.short(value)


def row(episode: dict, file: str, index: int, pool: dict | None = None) -> Row:
    """What a table shows of an episode, and what its filters read."""
    pool = {} if pool is None else pool
    meta = episode["meta"]
    return Row(file, index, _label(episode["task_id"], pool), _label(episode["group"], pool), episode["success"],
               episode["return"], len(episode["turns"]), episode["advantage"],
               *(_label(meta.get(k), pool) for k in ("trained", "tag", "outcome", "agent", "env", "split")),
               bool(meta.get("error")), first_reply(episode))


def first_reply(episode: dict) -> str:
    """The start of the episode's first reply, on one line (``REPLY_LIMIT`` characters, then "...")."""
    turns = episode["turns"]
    text = " ".join(str(turns[0].get("reply") or "").split()) if turns else ""
    return text if len(text) <= REPLY_LIMIT else text[:REPLY_LIMIT] + "..."


class Source:
    """One directory given to ``agentgym view``: its files and their episodes, read in pages.

    An episode file is scanned when a page first asks for it (:func:`~agentgym.viewer.episode_files.index_file`):
    its rows are kept in ``cache`` (shared by the sources of one viewer) and one episode is read
    back from disk when asked for. Safe across the server's threads."""

    kind = ""

    def __init__(self, path: str | os.PathLike, name: str, cache: RowCache | None = None):
        self.path, self.name = Path(path), name
        self._root = self.path.resolve()
        self._cache = cache if cache is not None else RowCache()
        self._lock = threading.Lock()  # one scan of a file at a time; readers of a scanned file never wait
        self._summaries: dict[str, tuple[tuple[int, int], dict]] = {}

    def files(self) -> list[dict]:
        """Its episode files, in order: ``{"file": key, ...}`` with what the key stands for."""
        return self._scan()[0]

    def _scan(self) -> tuple[list[dict], list[dict]]:
        """Its episode files, and the files it leaves out: ``{"file": path in the directory, "why": ...}``."""
        raise NotImplementedError

    def _outside(self, path: Path, link: bool) -> str | None:
        """Why the file at ``path`` is not read, when it leads out of this directory (``link``: it is a
        link, or lies in a folder that may be one), else None. A link out of a run could put any
        file of the machine on a page, or into a --static site someone else reads."""
        if not link:
            return None
        try:
            inside = path.resolve().is_relative_to(self._root)
        except (OSError, RuntimeError):  # a loop of links
            inside = False
        return None if inside else f"a link to a file outside the {self.kind}"

    def _path(self, file: str) -> Path:
        raise NotImplementedError

    def _episode(self, record: dict) -> dict:
        raise NotImplementedError

    def _index(self, file: str, listed: bool = False) -> FileIndex:
        """``file``'s index, scanned when it is not kept or the file changed. ``listed``: the caller
        took ``file`` from :meth:`files` just now, so the directory is not listed again (a board
        lists its blocks by reading each)."""
        if not listed and file not in {f["file"] for f in self.files()}:
            raise SourceError(f"{self.name} has no episode file {file!r}")
        path, key = self._path(file), (str(self.path), file)
        hit = self._cache.get(key, episode_files.stamp(path))
        if hit is not None:
            return hit
        with self._lock:
            hit = self._cache.get(key, episode_files.stamp(path))  # scanned by another request while this one waited
            if hit is not None:
                return hit
            pool: dict = {}
            index = episode_files.index_file(path, lambda record, i: row(self._episode(record), file, i, pool))
            self._cache.put(key, index)
            self._summaries[file] = (index.stamp, _summary(index.rows))
        return index

    def rows(self, file: str, listed: bool = False) -> list[Row]:
        return self._index(file, listed).rows

    def skipped(self, file: str, listed: bool = False) -> dict:
        """The lines of ``file`` that are not episodes: ``{"count": N, "lines": [{"line", "why"}, ...]}``."""
        return self._index(file, listed).skipped

    def summary(self, file: str, listed: bool = False) -> dict:
        """Episodes, successes, returns and outcomes of ``file``, kept for every file read (a few numbers
        each), so a board's table and a run's held-out curve do not scan a file again."""
        hit = self._summaries.get(file)
        if hit is not None and (listed or file in {f["file"] for f in self.files()}) \
                and hit[0] == episode_files.stamp(self._path(file)):
            return hit[1]
        self._index(file, listed)
        return self._summaries[file][1]

    def episode(self, file: str, index: int) -> dict:
        found = self._index(file)
        if not 0 <= index < len(found.rows):
            raise SourceError(f"{self.name} {file} has no episode {index}")
        try:
            return self._episode(episode_files.read_record(self._path(file), found, index))
        except MalformedLine:
            raise SourceError(f"{self.name} {file} changed while it was read: load the page again") from None

    def episodes(self, file: str, listed: bool = False) -> Iterator[dict]:
        """Every episode of ``file`` in order, read one at a time."""
        found = self._index(file, listed)
        with open(self._path(file), "rb") as f:
            for offset, length in zip(found.offsets, found.lengths):
                f.seek(offset)
                try:
                    yield self._episode(episode_files.parse_line(f.read(length)))
                except MalformedLine:
                    raise SourceError(f"{self.name} {file} changed while it was read: read it again") from None

    def describe(self) -> dict:
        """What the source page shows first."""
        files, left_out = self._scan()
        return {"kind": self.kind, "name": self.name, "path": str(self.path), "files": files, "left_out": left_out}


def _summary(rows: list[Row]) -> dict:
    returns = [r.ret for r in rows if r.ret is not None]
    outcomes: dict[str, int] = {}
    for r in rows:
        outcomes[str(r.outcome)] = outcomes.get(str(r.outcome), 0) + 1
    return {"episodes": len(rows), "successes": sum(r.success for r in rows), "return_sum": sum(returns),
            "returns": len(returns), "outcomes": outcomes}


class RunSource(Source):
    """A training run's directory."""

    kind = "run"

    def _scan(self) -> tuple[list[dict], list[dict]]:
        folder = self.path / EPISODES_DIR
        out, left_out = [], []
        if folder.is_dir():
            linked = self._outside(folder, folder.is_symlink()) is not None
            with os.scandir(folder) as entries:
                for entry in entries:
                    step = file_step(entry.name)
                    if step is None:
                        continue
                    why = self._outside(Path(entry.path), linked or entry.is_symlink())
                    if why:
                        left_out.append({"file": f"{EPISODES_DIR}/{entry.name}", "why": why})
                        continue
                    if not entry.is_file():
                        continue
                    evaluation = entry.name.startswith("eval_")
                    split = entry.name[len(f"eval_step_{step}_"):-len(".jsonl")] if evaluation else "train"
                    out.append({"file": entry.name[:-len(".jsonl")], "step": step, "split": split, "eval": evaluation,
                                "bytes": entry.stat().st_size})
        metrics = self.path / "metrics.jsonl"
        if self._outside(metrics, metrics.is_symlink()):
            left_out.append({"file": "metrics.jsonl", "why": self._outside(metrics, True)})
        return sorted(out, key=lambda f: (f["eval"], f["split"], f["step"])), left_out

    def _path(self, file: str) -> Path:
        return self.path / EPISODES_DIR / f"{file}.jsonl"

    def _episode(self, record: dict) -> dict:
        return run_episode(record)

    def metrics(self) -> Iterator[dict]:
        """The rows of ``metrics.jsonl``, one at a time (a partial, broken or too long line skipped)."""
        path = self.path / "metrics.jsonl"
        if path.is_file() and not self._outside(path, path.is_symlink()):
            yield from episode_files.records(path)

    def describe(self) -> dict:
        out = super().describe()
        keys: dict[str, None] = {}
        for r in self.metrics():
            keys.update(dict.fromkeys(k for k, v in r.items() if k != "step" and number(v) is not None))
        out["metrics"] = list(keys)
        return out

    def curve(self, key: str) -> list[list[float]]:
        """``[step, value]`` of one metric over the run (its numeric values only)."""
        return [[r["step"], r[key]] for r in self.metrics()
                if number(r.get(key)) is not None and number(r.get("step")) is not None]

    def eval_curve(self) -> dict[str, list[list[float]]]:
        """Held-out success per evaluated split, ``[step, rate]``, from the evaluation files."""
        out: dict[str, list[list[float]]] = {}
        for f in self.files():
            if f["eval"]:
                done = self.summary(f["file"], listed=True)
                if done["episodes"]:
                    out.setdefault(f["split"], []).append([f["step"], done["successes"] / done["episodes"]])
        return out


class BoardSource(Source):
    """A leaderboard run directory."""

    kind = "board"

    def _scan(self) -> tuple[list[dict], list[dict]]:
        out, left_out = [], []
        folder = self.path / "blocks"
        linked = {name: self._outside(self.path / name, (self.path / name).is_symlink()) is not None
                  for name in ("blocks", EPISODES_DIR)}
        for p in sorted(folder.iterdir()) if folder.is_dir() else []:
            if p.suffix != ".json":
                continue
            why = self._outside(p, linked["blocks"] or p.is_symlink())
            if why:
                left_out.append({"file": f"blocks/{p.name}", "why": why})
                continue
            try:
                data = json.loads(p.read_text(encoding="utf-8"))
                block = Block(agent=str(data["agent"]), env=str(data["env"]), split=str(data["split"]))
            except (ValueError, KeyError, TypeError, OSError):
                continue
            episodes = self.path / EPISODES_DIR / f"{block.slug}.jsonl"
            why = self._outside(episodes, linked[EPISODES_DIR] or episodes.is_symlink())
            if why:
                left_out.append({"file": f"{EPISODES_DIR}/{episodes.name}", "why": why})
            elif episodes.is_file():
                out.append({"file": block.slug, "agent": block.agent, "env": block.env, "split": block.split,
                            "bytes": episodes.stat().st_size})
        return out, left_out

    def _path(self, file: str) -> Path:
        return self.path / EPISODES_DIR / f"{file}.jsonl"

    def _episode(self, record: dict) -> dict:
        return board_episode(record)

    def table(self) -> list[dict]:
        """Per agent, env and split: episodes, success rate, mean return, outcomes."""
        out = []
        for f in self.files():
            done = self.summary(f["file"], listed=True)
            n = done["episodes"]
            out.append({**{k: f[k] for k in ("file", "agent", "env", "split")}, "episodes": n,
                        "success": done["successes"] / n if n else None,
                        "return": done["return_sum"] / done["returns"] if done["returns"] else None,
                        "outcomes": done["outcomes"]})
        return out

    def describe(self) -> dict:
        out = super().describe()
        out["table"] = self.table()
        return out


def open_source(path: str | os.PathLike, name: str | None = None, cache: RowCache | None = None) -> Source:
    """The run or board at ``path``; a :class:`SourceError` naming what it lacks otherwise."""
    p = Path(path)
    name = name or p.resolve().name or str(p)
    if not p.is_dir():
        raise SourceError(f"{path} is not a directory")
    if (p / "blocks").is_dir():
        return BoardSource(p, name, cache)
    if (p / "metrics.jsonl").is_file() or (p / EPISODES_DIR).is_dir() or (p / "checkpoints").is_dir():
        return RunSource(p, name, cache)
    raise SourceError(f"{path} is neither a training run (metrics.jsonl, episodes/) nor a leaderboard directory "
                      f"(blocks/, episodes/)")


def open_sources(paths: list[str]) -> list[Source]:
    """Every directory as a source, each with a distinct name (its folder's, numbered when two clash)."""
    cache = RowCache()
    sources = [open_source(p, cache=cache) for p in paths]
    seen: dict[str, int] = {}
    for s in sources:
        n = seen[s.name] = seen.get(s.name, 0) + 1
        if n > 1:
            s.name = f"{s.name} ({n})"
    return sources
