"""What ``agentgym view`` reads: a training run's directory or a leaderboard's, as one shape.

A **run** (``metrics.jsonl``, ``episodes/step_<N>.jsonl``, ``episodes/eval_step_<N>_<split>.jsonl``:
:mod:`agentgym.train.run.episode_log`) has one episode file per step and per evaluation. A
**board** (``blocks/`` and ``episodes/<agent>__<env>__<split>.jsonl``: :mod:`agentgym.leaderboard.store`)
has one per agent on an env split. Either way an episode file is read once (again only when it
changes on disk), each line becomes an :func:`episode` in one shape (task, turns with observation,
reply, reward terms, advantage and signals, return, success) and a :func:`row` (the few fields a
table shows and filters on), and nothing here writes to the directory. A line that is not an
episode (:class:`MalformedLine`: not JSON, a number out of range, turns that are not a list) is
skipped and noted with its line number and why, for the page to say.
"""

from __future__ import annotations

import json
import math
import os
from collections import OrderedDict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from agentgym.leaderboard.store import Block
from agentgym.train.run.episode_log import EPISODES_DIR, file_step

TEXT_LIMIT = 100_000
"""Longest text sent to a page (a longer one is cut, with a note saying how long it was)."""
CACHED_FILES = 16
"""Episode files kept parsed in memory per source (the least recently read goes first)."""


class SourceError(ValueError):
    """A directory that is neither a run nor a board, or a file or episode it does not have."""


def _text(value: Any) -> str:
    text = "" if value is None else str(value)
    if len(text) > TEXT_LIMIT:
        return f"{text[:TEXT_LIMIT]}… [cut for display: {len(text)} chars in all]"
    return text


def number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


class MalformedLine(ValueError):
    """A line of an episode file that is not an episode; the message says why, in a few words."""


MAX_NOTES = 20
"""Malformed lines of a file named one by one on its page (the rest are counted)."""


def _short(value: Any) -> str:
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
        raise MalformedLine(f"not a JSON object (a JSON {type(record).__name__}: {_short(record)})")
    return record


def _objects(record: dict, key: str, what: str) -> list[dict]:
    """``record[key]``, a list of JSON objects (absent or null: none), or :class:`MalformedLine`."""
    value = record.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise MalformedLine(f"{key!r} is {_short(value)}, not a list of {what}s")
    for k, item in enumerate(value, 1):
        if not isinstance(item, dict):
            raise MalformedLine(f"{what} {k} of {key!r} is {_short(item)}, not a JSON object")
    return value


def whole_lines(path: str | os.PathLike) -> Iterator[tuple[int, bytes]]:
    """``(line number, line)`` of each whole line of a file: a last line with no newline yet (a
    file being written) is left for the next read."""
    with open(path, "rb") as f:
        for n, line in enumerate(f, 1):
            if not line.endswith(b"\n"):
                return
            yield n, line


def read_lines(path: str | os.PathLike) -> list[dict]:
    """The whole JSON object lines of a JSONL file (a line cut short, or not an object, is skipped)."""
    out = []
    for _, line in whole_lines(path):
        try:
            out.append(parse_line(line))
        except MalformedLine:
            continue
    return out


def _note(skipped: dict, line: int, why: str) -> None:
    skipped["count"] += 1
    if len(skipped["lines"]) < MAX_NOTES:
        skipped["lines"].append({"line": line, "why": why})


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
    return {"task_id": str(record.get("task_id", "")), "group": str(record.get("group", "")),
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
    return {"task_id": str(record.get("task_id", "")), "group": str(record.get("task_id", "")),
            "success": bool(record.get("success")), "return": number(record.get("prs_return")),
            "system_prompt": "", "instruction": "", "turns": turns,
            "final_observation": _text(steps[-1].get("observation")) if steps else "",
            "advantage": None, "episode_terms": _terms(record.get("terms")), "signals": {}, "meta": meta}


def _terms(value: Any) -> dict[str, float | None]:
    return {str(k): number(v) for k, v in value.items()} if isinstance(value, dict) else {}


def row(episode: dict, file: str, index: int) -> dict:
    """What a table shows of an episode, and what its filters read."""
    meta = episode["meta"]
    return {"file": file, "id": index, "task_id": episode["task_id"], "group": episode["group"],
            "success": episode["success"], "return": episode["return"], "turns": len(episode["turns"]),
            "advantage": episode["advantage"], "trained": meta.get("trained"), "tag": meta.get("tag"),
            "outcome": meta.get("outcome"), "agent": meta.get("agent"), "env": meta.get("env"),
            "split": meta.get("split"), "error": bool(meta.get("error"))}


class Source:
    """One directory given to ``agentgym view``: its files and their episodes, read lazily."""

    kind = ""

    def __init__(self, path: str | os.PathLike, name: str):
        self.path, self.name = Path(path), name
        self._cache: OrderedDict[str, tuple[tuple[int, int], list[dict], list[dict], dict]] = OrderedDict()

    def files(self) -> list[dict]:
        """Its episode files, in order: ``{"file": key, ...}`` with what the key stands for."""
        raise NotImplementedError

    def _path(self, file: str) -> Path:
        raise NotImplementedError

    def _episode(self, record: dict) -> dict:
        raise NotImplementedError

    def _load(self, file: str) -> tuple[list[dict], list[dict], dict]:
        if file not in {f["file"] for f in self.files()}:
            raise SourceError(f"{self.name} has no episode file {file!r}")
        path = self._path(file)
        st = path.stat()
        stamp = (st.st_mtime_ns, st.st_size)
        hit = self._cache.get(file)
        if hit is not None and hit[0] == stamp:
            self._cache.move_to_end(file)
            return hit[1:]
        episodes: list[dict] = []
        skipped: dict = {"count": 0, "lines": []}
        for n, line in whole_lines(path):
            try:
                episodes.append(self._episode(parse_line(line)))
            except MalformedLine as e:
                _note(skipped, n, str(e))
        rows = [row(ep, file, i) for i, ep in enumerate(episodes)]
        self._cache[file] = (stamp, episodes, rows, skipped)
        while len(self._cache) > CACHED_FILES:
            self._cache.popitem(last=False)
        return episodes, rows, skipped

    def rows(self, file: str) -> list[dict]:
        return self._load(file)[1]

    def skipped(self, file: str) -> dict:
        """The lines of ``file`` that are not episodes: ``{"count": N, "lines": [{"line", "why"}, ...]}``."""
        return self._load(file)[2]

    def episode(self, file: str, index: int) -> dict:
        episodes = self._load(file)[0]
        if not 0 <= index < len(episodes):
            raise SourceError(f"{self.name} {file} has no episode {index}")
        return episodes[index]

    def describe(self) -> dict:
        """What the source page shows first."""
        return {"kind": self.kind, "name": self.name, "path": str(self.path), "files": self.files()}


class RunSource(Source):
    """A training run's directory."""

    kind = "run"

    def files(self) -> list[dict]:
        folder = self.path / EPISODES_DIR
        out = []
        if folder.is_dir():
            for p in folder.iterdir():
                step = file_step(p.name)
                if step is None or not p.is_file():
                    continue
                evaluation = p.name.startswith("eval_")
                split = p.name[len(f"eval_step_{step}_"):-len(".jsonl")] if evaluation else "train"
                out.append({"file": p.name[:-len(".jsonl")], "step": step, "split": split, "eval": evaluation,
                            "bytes": p.stat().st_size})
        return sorted(out, key=lambda f: (f["eval"], f["split"], f["step"]))

    def _path(self, file: str) -> Path:
        return self.path / EPISODES_DIR / f"{file}.jsonl"

    def _episode(self, record: dict) -> dict:
        return run_episode(record)

    def metrics(self) -> list[dict]:
        """The rows of ``metrics.jsonl`` (a partial or broken line skipped)."""
        path = self.path / "metrics.jsonl"
        return read_lines(path) if path.is_file() else []

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
                rows = self.rows(f["file"])
                if rows:
                    out.setdefault(f["split"], []).append([f["step"], sum(r["success"] for r in rows) / len(rows)])
        return out


class BoardSource(Source):
    """A leaderboard run directory."""

    kind = "board"

    def _blocks(self) -> dict[str, dict]:
        out = {}
        folder = self.path / "blocks"
        for p in sorted(folder.iterdir()) if folder.is_dir() else []:
            if p.suffix != ".json":
                continue
            try:
                data = json.loads(p.read_text(encoding="utf-8"))
                block = Block(agent=str(data["agent"]), env=str(data["env"]), split=str(data["split"]))
            except (ValueError, KeyError, TypeError, OSError):
                continue
            if (self.path / EPISODES_DIR / f"{block.slug}.jsonl").is_file():
                out[block.slug] = {"agent": block.agent, "env": block.env, "split": block.split}
        return out

    def files(self) -> list[dict]:
        return [{"file": slug, **who, "bytes": (self.path / EPISODES_DIR / f"{slug}.jsonl").stat().st_size}
                for slug, who in self._blocks().items()]

    def _path(self, file: str) -> Path:
        return self.path / EPISODES_DIR / f"{file}.jsonl"

    def _episode(self, record: dict) -> dict:
        return board_episode(record)

    def table(self) -> list[dict]:
        """Per agent, env and split: episodes, success rate, mean return, outcomes."""
        out = []
        for f in self.files():
            rows = self.rows(f["file"])
            returns = [r["return"] for r in rows if r["return"] is not None]
            outcomes: dict[str, int] = {}
            for r in rows:
                outcomes[str(r["outcome"])] = outcomes.get(str(r["outcome"]), 0) + 1
            out.append({**{k: f[k] for k in ("file", "agent", "env", "split")}, "episodes": len(rows),
                        "success": sum(r["success"] for r in rows) / len(rows) if rows else None,
                        "return": sum(returns) / len(returns) if returns else None, "outcomes": outcomes})
        return out

    def describe(self) -> dict:
        out = super().describe()
        out["table"] = self.table()
        return out


def open_source(path: str | os.PathLike, name: str | None = None) -> Source:
    """The run or board at ``path``; a :class:`SourceError` naming what it lacks otherwise."""
    p = Path(path)
    name = name or p.resolve().name or str(p)
    if not p.is_dir():
        raise SourceError(f"{path} is not a directory")
    if (p / "blocks").is_dir():
        return BoardSource(p, name)
    if (p / "metrics.jsonl").is_file() or (p / EPISODES_DIR).is_dir() or (p / "checkpoints").is_dir():
        return RunSource(p, name)
    raise SourceError(f"{path} is neither a training run (metrics.jsonl, episodes/) nor a leaderboard directory "
                      f"(blocks/, episodes/)")


def open_sources(paths: list[str]) -> list[Source]:
    """Every directory as a source, each with a distinct name (its folder's, numbered when two clash)."""
    sources = [open_source(p) for p in paths]
    seen: dict[str, int] = {}
    for s in sources:
        n = seen[s.name] = seen.get(s.name, 0) + 1
        if n > 1:
            s.name = f"{s.name} ({n})"
    return sources
