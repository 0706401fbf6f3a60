"""``agentgym view --static OUT``: where it may write, what it writes over, and what it leaves out."""

import json
import os
import threading
import urllib.error
import urllib.request

import pytest
from viewer_data import run_episode, write_run

from agentgym.cli import main as cli_main
from agentgym.viewer import api
from agentgym.viewer.server import make_server
from agentgym.viewer.sources import SourceError, open_sources


def _static(argv, capsys):
    """Run ``agentgym view ... --static``: its exit status and the one line it printed to stderr."""
    try:
        code = cli_main(["view", *argv])
    except SystemExit as e:
        code = e.code
    return code, capsys.readouterr().err


def _run(root, task="a"):
    return write_run(root, {1: [run_episode(task, 0, True, 1.0)]})


def test_a_folder_that_is_not_empty_and_not_a_site_is_refused_and_left_as_it_was(tmp_path, capsys):
    run = _run(tmp_path / "run")
    checkout = tmp_path / "checkout"  # a project: its own index.html and data/
    (checkout / "data").mkdir(parents=True)
    (checkout / "index.html").write_text("my page")
    (checkout / "data" / "index.js").write_text("mine")
    code, err = _static([str(run), "--static", str(checkout)], capsys)
    assert code == 2
    assert err.startswith(f"agentgym view: error: --static {str(checkout)!r} is not empty and is not a site")
    assert err.count("\n") == 1 and "new or empty folder" in err
    assert (checkout / "index.html").read_text() == "my page" and (checkout / "data" / "index.js").read_text() == "mine"
    assert sorted(os.listdir(checkout)) == ["data", "index.html"]
    (tmp_path / "file").write_text("")
    code, err = _static([str(run), "--static", str(tmp_path / "file")], capsys)
    assert code == 2 and "is not a folder" in err and err.count("\n") == 1


def test_an_earlier_site_is_written_again_whatever_it_holds(tmp_path, capsys):
    out = tmp_path / "site"
    assert _static([str(_run(tmp_path / "a")), str(_run(tmp_path / "b")), "--static", str(out)], capsys)[0] == 0
    assert (out / "data" / "s1").is_dir()
    # what a user may have done to it since: names the site uses taken by other kinds of files,
    # a link out of the folder where a page was, a file of their own beside it
    (tmp_path / "elsewhere.html").write_text("not the site's")
    (out / "index.html").unlink()
    (out / "index.html").symlink_to(tmp_path / "elsewhere.html")
    (out / "app.js").unlink()
    (out / "app.js").mkdir()
    (out / "data" / "s0" / "source.js").unlink()
    (out / "data" / "s0" / "source.js").mkdir()
    (out / "notes.txt").write_text("mine")
    code, err = _static([str(_run(tmp_path / "c", task="c")), "--static", str(out)], capsys)
    assert code == 0, err
    assert (tmp_path / "elsewhere.html").read_text() == "not the site's"
    assert not (out / "index.html").is_symlink() and "Content-Security-Policy" in (out / "index.html").read_text()
    assert (out / "app.js").is_file() and (out / "notes.txt").read_text() == "mine"
    assert not (out / "data" / "s1").exists()  # the earlier second source's pages are gone
    assert '"task_id":"c"' in (out / "data" / "s0" / "f0.js").read_text()


def test_a_site_written_before_sites_were_marked_is_written_again(tmp_path, capsys):
    out = tmp_path / "site"
    assert _static([str(_run(tmp_path / "a")), "--static", str(out)], capsys)[0] == 0
    (out / "agentgym-view.json").unlink()  # as the command wrote sites before
    assert _static([str(_run(tmp_path / "b", task="b")), "--static", str(out)], capsys)[0] == 0
    assert '"task_id":"b"' in (out / "data" / "s0" / "f0.js").read_text() and (out / "agentgym-view.json").is_file()
    (out / "agentgym-view.json").unlink()
    (out / "mine.txt").write_text("")  # with a file of someone's own it is no longer only a site
    code, err = _static([str(_run(tmp_path / "c")), "--static", str(out)], capsys)
    assert code == 2 and "is not empty" in err


def test_the_site_holds_no_local_path(tmp_path, capsys):
    out = tmp_path / "site"
    run = _run(tmp_path / "home" / "me" / "runs" / "grpo")
    assert _static([str(run), "--static", str(out)], capsys)[0] == 0
    for root, _, names in os.walk(out):
        for name in names:
            text = open(os.path.join(root, name), encoding="utf-8").read()
            assert str(tmp_path) not in text and "/home/me" not in text, name
    listing = json.loads((out / "data" / "index.js").read_text().split(" = ", 2)[-1].rstrip(";\n"))
    assert listing["sources"][0]["path"] == "grpo"


def test_episode_files_linked_from_outside_the_run_are_left_out(tmp_path, capsys):
    secret = tmp_path / "elsewhere" / "step_2.jsonl"
    secret.parent.mkdir()
    secret.write_text(json.dumps(run_episode("private", 0, True, 1.0)) + "\n")
    run = _run(tmp_path / "run")
    (run / "episodes" / "step_2.jsonl").symlink_to(secret)
    (run / "kept").mkdir()
    (run / "kept" / "step_3.jsonl").write_text(json.dumps(run_episode("inside", 0, True, 1.0)) + "\n")
    (run / "episodes" / "step_3.jsonl").symlink_to(run / "kept" / "step_3.jsonl")  # a link inside the run: read

    sources = open_sources([str(run)])
    info = api.source(sources, {"src": "0"})
    assert [f["file"] for f in info["files"]] == ["step_1", "step_3"]
    assert info["left_out"] == [{"file": "episodes/step_2.jsonl", "why": "a link to a file outside the run"}]
    with pytest.raises(SourceError, match="no episode file 'step_2'"):
        api.episodes(sources, {"src": "0", "file": "step_2"})

    out = tmp_path / "site"
    assert _static([str(run), "--static", str(out)], capsys)[0] == 0
    site = "".join(open(os.path.join(r, n)).read() for r, _, names in os.walk(out) for n in names)
    assert "private" not in site and "inside" in site


def test_the_server_does_not_serve_a_linked_file_from_outside_the_run(tmp_path):
    secret = tmp_path / "secret.jsonl"
    secret.write_text(json.dumps(run_episode("private", 0, True, 1.0)) + "\n")
    run = _run(tmp_path / "run")
    (run / "episodes" / "step_2.jsonl").symlink_to(secret)
    server = make_server(open_sources([str(run)]))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(base + "/api/episodes?src=0&file=step_2", timeout=10)
        assert e.value.code == 404 and b"no episode file" in e.value.read()
    finally:
        server.shutdown()
        server.server_close()
