"""``agentgym view --static OUT_DIR``: the same pages as files, to open from disk or share.

    OUT_DIR/index.html, app.js, app.css    the viewer's own page, script and stylesheet
    OUT_DIR/data/index.js                  the sources
    OUT_DIR/data/s<I>/source.js            source I: its files (and a run's metric names, a board's table)
    OUT_DIR/data/s<I>/metrics.js           a run's metrics.jsonl rows (numbers only)
    OUT_DIR/data/s<I>/f<K>.js              episode file K: its rows, its episodes and the lines it skipped

Data files are scripts that hand their JSON to the page (a browser does not let a page opened from
disk fetch a file beside it, but it runs a script beside it), each loaded when a page first needs
it: opening one step's episodes reads that step's file, not the run. Filters and paging run in the
page, on the same rules as the server's (:func:`agentgym.viewer.api.filter_rows`).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from agentgym.viewer.api import skipped as skipped_lines
from agentgym.viewer.api import source as describe
from agentgym.viewer.server import asset, to_json
from agentgym.viewer.sources import RunSource, Source, number

# a page opened from disk takes its policy from a meta tag: only its own scripts and styles run
STATIC_CSP = ('<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; script-src \'self\'; '
              'style-src \'self\'; img-src \'self\' data:; base-uri \'none\'; form-action \'none\'">')


def _script(path: Path, key: str, data) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    body = b'window.AGV_DATA["' + key.encode() + b'"] = ' + to_json(data) + b";\n"
    path.write_bytes(body)
    return len(body)


class Written(NamedTuple):
    """What :func:`write_static` wrote: its bytes, and the lines of the episode files it skipped."""

    bytes: int
    skipped_lines: int


def write_static(sources: Sequence[Source], out: str | os.PathLike) -> Written:
    """Write the pages of ``sources`` under ``out``."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    page = asset("index.html").decode()
    page = page.replace("<!--csp-->", STATIC_CSP).replace("<!--data-->", '<script src="data/index.js"></script>')
    total = skipped = 0
    for name, body in (("index.html", page.encode()), ("app.js", asset("app.js")), ("app.css", asset("app.css"))):
        (out / name).write_bytes(body)
        total += len(body)
    listing = {"sources": [{"index": i, "kind": s.kind, "name": s.name, "path": str(s.path)}
                           for i, s in enumerate(sources)]}
    (out / "data").mkdir(exist_ok=True)
    head = b"window.AGV_DATA = window.AGV_DATA || {};\n"
    (out / "data" / "index.js").write_bytes(head + b'window.AGV_DATA["sources"] = ' + to_json(listing) + b";\n")
    for i, s in enumerate(sources):
        info = describe(sources, {"src": str(i)})
        total += _script(out / "data" / f"s{i}" / "source.js", f"s{i}/source", info)
        if isinstance(s, RunSource):
            rows = [{k: v for k, v in r.items() if k == "step" or number(v) is not None} for r in s.metrics()]
            total += _script(out / "data" / f"s{i}" / "metrics.js", f"s{i}/metrics", rows)
        for k, f in enumerate(info["files"]):
            notes = skipped_lines(s, [f["file"]])
            skipped += notes["count"]
            total += _episodes_script(out / "data" / f"s{i}" / f"f{k}.js", f"s{i}/f{k}", s, f["file"], notes)
    return Written(total, skipped)


def _episodes_script(path: Path, key: str, s: Source, file: str, notes: dict) -> int:
    """An episode file's data script, written one episode at a time (a file is never held whole)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        f.write(b'window.AGV_DATA["' + key.encode() + b'"] = {"rows":' + to_json([r.as_dict() for r in s.rows(file)])
                + b',"skipped":' + to_json(notes) + b',"episodes":[')
        for n, episode in enumerate(s.episodes(file)):
            f.write((b"," if n else b"") + to_json(episode))
        f.write(b"]};\n")
        return f.tell()
