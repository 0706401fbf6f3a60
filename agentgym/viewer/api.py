"""The JSON the viewer's pages ask for: one function per endpoint, each on query parameters.

    /api/sources                          the directories given, by index
    /api/source?src=I                     one source: its episode files; a run's metric names, a board's table
    /api/curve?src=I&key=NAME             one metric of a run, [step, value] pairs (and held-out success per split)
    /api/episodes?src=I&file=F&...        one page of episode rows, filtered (see :func:`filter_rows`), and
                                          the file's lines that are not episodes (:func:`skipped`)
    /api/group?src=I&file=F&group=G       every episode of one group, whole, for side-by-side reading
    /api/episode?src=I&file=F&id=N        one episode, whole
    /api/find?src=I&file=F&task=T         the first episode of task T in a file (to compare a task across steps)

A page asks for what it shows: the episodes page gets one page of rows (``limit``, at most
:data:`MAX_PAGE`), never a whole run, so a run of thousands of episodes stays quick.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from agentgym.viewer.episode_files import MAX_NOTES
from agentgym.viewer.sources import BoardSource, Row, RunSource, Source, SourceError

PAGE = 50
"""Rows per page unless asked."""
MAX_PAGE = 500
"""Most rows one request returns."""
MAX_GROUP = 64
"""Most episodes of a group shown side by side."""
MAX_CHOICES = 1000
"""Most distinct groups or tasks listed for a filter's choices."""


def _int(params: Mapping[str, str], key: str, default: int | None = None, least: int = 0) -> int:
    value = params.get(key)
    if value in (None, ""):
        if default is None:
            raise SourceError(f"missing parameter {key!r}")
        return default
    try:
        number = int(value)
    except ValueError:
        raise SourceError(f"parameter {key!r} must be an integer, got {value!r}") from None
    if number < least:
        raise SourceError(f"parameter {key!r} must be >= {least}, got {number}")
    return number


def _float(params: Mapping[str, str], key: str) -> float | None:
    value = params.get(key)
    if value in (None, ""):
        return None
    try:
        return float(value)
    except ValueError:
        raise SourceError(f"parameter {key!r} must be a number, got {value!r}") from None


def source_of(sources: Sequence[Source], params: Mapping[str, str]) -> Source:
    i = _int(params, "src")
    if i >= len(sources):
        raise SourceError(f"no source {i} (there are {len(sources)})")
    return sources[i]


def filter_rows(rows: Sequence[Row], params: Mapping[str, str]) -> list[Row]:
    """The rows that pass every filter given: ``success`` (``1`` / ``0``), ``group`` (exact),
    ``task`` (a part of the task id, any case), ``rmin`` / ``rmax`` (return bounds, inclusive),
    ``agent``, ``env``, ``split`` (exact); ``sort`` ``return`` or ``-return`` orders them."""
    success, group, task = params.get("success", ""), params.get("group", ""), params.get("task", "").lower()
    rmin, rmax = _float(params, "rmin"), _float(params, "rmax")
    exact = [(Row._fields.index(k), params[k]) for k in ("agent", "env", "split") if params.get(k)]
    out = []
    for r in rows:
        if success in ("0", "1") and r.success != (success == "1"):
            continue
        if group and r.group != group:
            continue
        if task and task not in r.task_id.lower():
            continue
        if rmin is not None and (r.ret is None or r.ret < rmin):
            continue
        if rmax is not None and (r.ret is None or r.ret > rmax):
            continue
        if any(r[k] != v for k, v in exact):
            continue
        out.append(r)
    if params.get("sort") in ("return", "-return"):
        out.sort(key=lambda r: float("-inf") if r.ret is None else r.ret, reverse=params["sort"] == "-return")
    return out


def sources_list(sources: Sequence[Source], params: Mapping[str, str]) -> dict:
    return {"sources": [{"index": i, "kind": s.kind, "name": s.name, "path": str(s.path)}
                        for i, s in enumerate(sources)]}


def source(sources: Sequence[Source], params: Mapping[str, str]) -> dict:
    s = source_of(sources, params)
    out = s.describe()
    if isinstance(s, RunSource):
        out["eval_curve"] = s.eval_curve()
    return out


def curve(sources: Sequence[Source], params: Mapping[str, str]) -> dict:
    s = source_of(sources, params)
    if not isinstance(s, RunSource):
        raise SourceError(f"{s.name} is a board: it has no learning curves")
    key = params.get("key", "")
    return {"key": key, "points": s.curve(key)}


def _files(s: Source, params: Mapping[str, str]) -> tuple[list[str], bool]:
    """The files a request reads: the one named, or a board's blocks that pass its filters (then
    True: they were just listed)."""
    if params.get("file"):
        return [params["file"]], False
    if isinstance(s, BoardSource):
        return [f["file"] for f in s.files()
                if all(not params.get(k) or f[k] == params[k] for k in ("agent", "env", "split"))], True
    raise SourceError("missing parameter 'file' (a run's episodes are read one step at a time)")


def episodes(sources: Sequence[Source], params: Mapping[str, str]) -> dict:
    s = source_of(sources, params)
    offset, limit = _int(params, "offset", 0), min(_int(params, "limit", PAGE, least=1), MAX_PAGE)
    files, listed = _files(s, params)
    rows = [r for f in files for r in s.rows(f, listed)]
    matched = filter_rows(rows, params)
    return {"total": len(matched), "all": len(rows), "offset": offset, "limit": limit,
            "rows": [r.as_dict() for r in matched[offset:offset + limit]],
            "groups": list(dict.fromkeys(r.group for r in rows))[:MAX_CHOICES], "skipped": skipped(s, files, listed)}


def skipped(s: Source, files: Sequence[str], listed: bool = False) -> dict:
    """The lines of ``files`` that are not episodes, counted and (the first of them) named with their file."""
    out: dict = {"count": 0, "lines": []}
    for f in files:
        notes = s.skipped(f, listed)
        out["count"] += notes["count"]
        out["lines"] += [{"file": f, **n} for n in notes["lines"]][:max(0, MAX_NOTES - len(out["lines"]))]
    return out


def group(sources: Sequence[Source], params: Mapping[str, str]) -> dict:
    s = source_of(sources, params)
    file, key = params.get("file", ""), params.get("group", "")
    rows = [r for r in s.rows(file) if r.group == key]
    return {"file": file, "group": key, "total": len(rows),
            "episodes": [{"row": r.as_dict(), "episode": s.episode(file, r.id)} for r in rows[:MAX_GROUP]]}


def episode(sources: Sequence[Source], params: Mapping[str, str]) -> dict:
    s = source_of(sources, params)
    file, index = params.get("file", ""), _int(params, "id")
    ep = s.episode(file, index)
    return {"source": s.name, "kind": s.kind, "file": file, "row": s.rows(file)[index].as_dict(), "episode": ep}


def find(sources: Sequence[Source], params: Mapping[str, str]) -> dict:
    s = source_of(sources, params)
    task = params.get("task", "")
    hit = next((r.id for r in s.rows(params.get("file", "")) if r.task_id == task), None)
    return {"id": hit}


ENDPOINTS: dict[str, Any] = {"sources": sources_list, "source": source, "curve": curve, "episodes": episodes,
                             "group": group, "episode": episode, "find": find}
