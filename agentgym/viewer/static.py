"""``agentgym view --static OUT_DIR``: the same pages as files, to open from disk or share.

    OUT_DIR/agentgym-view.json             what marks the folder as a site this command wrote
    OUT_DIR/index.html, app.js, app.css    the viewer's own page, script and stylesheet
    OUT_DIR/data/index.js                  the sources
    OUT_DIR/data/s<I>/source.js            source I: its files (and a run's metric names, a board's table)
    OUT_DIR/data/s<I>/metrics.js           a run's metrics.jsonl rows (numbers only)
    OUT_DIR/data/s<I>/f<K>.js              episode file K: its rows, its episodes and the lines it skipped

Data files are scripts that hand their JSON to the page (a browser does not let a page opened from
disk fetch a file beside it, but it runs a script beside it), each loaded when a page first needs
it: opening one step's episodes reads that step's file, not the run. Filters and paging run in the
page, on the same rules as the server's (:func:`agentgym.viewer.api.filter_rows`).

A site is meant to be shared, so it names each source by its folder's name, never by its path on
this machine. It is written only into a new or empty folder or an earlier site
(:func:`check_site_folder`); an earlier site's own files are removed first (a file of the user's
beside them is kept), and every file is made anew, never written through a link.
"""

from __future__ import annotations

import json
import os
import shutil
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
SITE_FILE = "agentgym-view.json"
"""The file that marks a folder as a site ``--static`` wrote (and may write again)."""
SITE_NAMES = (SITE_FILE, "index.html", "app.js", "app.css", "data")
"""What a site holds at its top; all of it is removed before a site is written again."""


class SiteFolderError(ValueError):
    """An ``OUT_DIR`` that ``--static`` must not write into; the message is one line naming the flag."""


def is_site(folder: str | os.PathLike) -> bool:
    """Whether ``folder`` holds a site that ``--static`` wrote: its mark, or (a site written before
    sites were marked) nothing but a site's files, with the viewer's page."""
    folder = Path(folder)
    marker, page = folder / SITE_FILE, folder / "index.html"
    try:
        if marker.is_file() and not marker.is_symlink():
            return json.loads(marker.read_text(encoding="utf-8")).get("written_by") == "agentgym view --static"
        if set(os.listdir(folder)) <= set(SITE_NAMES) and page.is_file() and not page.is_symlink():
            text = page.read_text(encoding="utf-8", errors="replace")[:10_000]
            return "<title>agentgym view</title>" in text and 'src="data/index.js"' in text
    except (OSError, ValueError, AttributeError):
        pass
    return False


def check_site_folder(out: str | os.PathLike) -> None:
    """Refuse (:class:`SiteFolderError`) an ``out`` that is a file, or a folder that is neither empty
    nor an earlier site: a user's own ``index.html`` or ``data/`` there would be written over."""
    if not os.path.lexists(out):
        return
    if not os.path.isdir(out):
        raise SiteFolderError(f"--static {os.fspath(out)!r} is not a folder: give a new or empty folder, "
                              "or a site this command wrote before")
    if os.listdir(out) and not is_site(out):
        raise SiteFolderError(f"--static {os.fspath(out)!r} is not empty and is not a site this command wrote (it "
                              f"has no {SITE_FILE}): give a new or empty folder")


def _clear(out: Path) -> None:
    """Remove what an earlier site wrote at the top of ``out``, links as links (never what they lead to)."""
    for name in SITE_NAMES:
        path = out / name
        if path.is_symlink() or path.is_file():
            path.unlink()
        elif path.is_dir():
            shutil.rmtree(path)
        elif path.exists():
            path.unlink()


def _write(path: Path, body: bytes) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "xb") as f:  # made anew: an earlier file was removed, and no link is followed
        f.write(body)
    return len(body)


def _script(path: Path, key: str, data) -> int:
    return _write(path, b'window.AGV_DATA["' + key.encode() + b'"] = ' + to_json(data) + b";\n")


class Written(NamedTuple):
    """What :func:`write_static` wrote: its bytes, the lines of the episode files it skipped, and
    the files it left out (links that lead out of a source)."""

    bytes: int
    skipped_lines: int
    left_out: int


def write_static(sources: Sequence[Source], out: str | os.PathLike) -> Written:
    """Write the pages of ``sources`` under ``out`` (checked by :func:`check_site_folder` first)."""
    check_site_folder(out)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    _clear(out)
    # the mark first: a site cut short (a full disk, Ctrl-C) is still one this command may write again
    total = _write(out / SITE_FILE, json.dumps({"written_by": "agentgym view --static",
                                                "sources": [s.name for s in sources]}).encode() + b"\n")
    page = asset("index.html").decode()
    page = page.replace("<!--csp-->", STATIC_CSP).replace("<!--data-->", '<script src="data/index.js"></script>')
    for name, body in (("index.html", page.encode()), ("app.js", asset("app.js")), ("app.css", asset("app.css"))):
        total += _write(out / name, body)
    listing = {"sources": [{"index": i, "kind": s.kind, "name": s.name, "path": s.name}
                           for i, s in enumerate(sources)]}
    head = b"window.AGV_DATA = window.AGV_DATA || {};\n"
    total += _write(out / "data" / "index.js", head + b'window.AGV_DATA["sources"] = ' + to_json(listing) + b";\n")
    skipped = left_out = 0
    for i, s in enumerate(sources):
        info = {**describe(sources, {"src": str(i)}), "path": s.name}
        left_out += len(info["left_out"])
        total += _script(out / "data" / f"s{i}" / "source.js", f"s{i}/source", info)
        if isinstance(s, RunSource):
            rows = [{k: v for k, v in r.items() if k == "step" or number(v) is not None} for r in s.metrics()]
            total += _script(out / "data" / f"s{i}" / "metrics.js", f"s{i}/metrics", rows)
        for k, f in enumerate(info["files"]):
            notes = skipped_lines(s, [f["file"]], listed=True)
            skipped += notes["count"]
            total += _episodes_script(out / "data" / f"s{i}" / f"f{k}.js", f"s{i}/f{k}", s, f["file"], notes)
    return Written(total, skipped, left_out)


def _episodes_script(path: Path, key: str, s: Source, file: str, notes: dict) -> int:
    """An episode file's data script, written one episode at a time (a file is never held whole)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "xb") as f:
        rows = [r.as_dict() for r in s.rows(file, listed=True)]
        f.write(b'window.AGV_DATA["' + key.encode() + b'"] = {"rows":' + to_json(rows)
                + b',"skipped":' + to_json(notes) + b',"episodes":[')
        for n, episode in enumerate(s.episodes(file, listed=True)):
            f.write((b"," if n else b"") + to_json(episode))
        f.write(b"]};\n")
        return f.tell()
