"""What ``agentgym view`` reads from a run or a board: malformed and too long lines are skipped and told,
and a file is read in pages, so the memory kept does not grow with the run."""

import json
import threading
import tracemalloc
import urllib.request

from viewer_data import run_episode, write_run

from agentgym.cli import main as cli_main
from agentgym.viewer import api
from agentgym.viewer.episode_files import LINE_LIMIT, RowCache
from agentgym.viewer.server import make_server
from agentgym.viewer.sources import open_source, open_sources

BAD_LINES = ['{"task_id": "five turns", "turns": 5}', '{"task_id": "huge", "return": 1e999, "turns": []}',
             '[1, 2]', '{"task_id": "cut', '{"task_id": "odd turn", "turns": [3]}']


def _run_with_bad_lines(root):
    """A run whose step 1 holds two good episodes with every kind of bad line between them."""
    run = write_run(root, {1: [run_episode("good-a", 0, True, 1.0)]})
    with open(run / "episodes" / "step_1.jsonl", "a") as f:
        f.write("\n".join(BAD_LINES) + "\n" + json.dumps(run_episode("good-b", 1, False, 0.0)) + "\n")
    return run


def test_malformed_lines_are_skipped_and_each_is_named_with_its_line_and_why(tmp_path):
    sources = open_sources([str(_run_with_bad_lines(tmp_path / "run"))])
    page = api.episodes(sources, {"src": "0", "file": "step_1"})
    assert [r["task_id"] for r in page["rows"]] == ["good-a", "good-b"] and page["all"] == 2
    notes = {n["line"]: n["why"] for n in page["skipped"]["lines"]}
    assert page["skipped"]["count"] == 5 and sorted(notes) == [2, 3, 4, 5, 6]
    assert "'turns'" in notes[2] and "list" in notes[2]
    assert "1e999" in notes[3]
    assert "not a JSON object" in notes[4]
    assert "not JSON" in notes[5]
    assert "turn 1" in notes[6]
    assert api.episode(sources, {"src": "0", "file": "step_1", "id": "1"})["episode"]["task_id"] == "good-b"


def test_a_board_episode_with_a_malformed_transcript_is_skipped(tmp_path):
    root = tmp_path / "board"
    (root / "blocks").mkdir(parents=True)
    (root / "episodes").mkdir()
    (root / "blocks" / "a__E__test.json").write_text(json.dumps({"agent": "a", "env": "E", "split": "test"}))
    good = {"agent": "a", "env": "E", "split": "test", "task_id": "t", "success": True, "prs_return": 1.0,
            "first_observation": "Q?", "transcript": [{"action": "x", "observation": "ok", "reward": 1.0}]}
    lines = [json.dumps(good), json.dumps({**good, "transcript": 5}), json.dumps({**good, "prs_return": "1e999"})[:-1]
             + ', "turns": 1e999}']
    (root / "episodes" / "a__E__test.jsonl").write_text("\n".join(lines) + "\n")
    sources = open_sources([str(root)])
    info = api.source(sources, {"src": "0"})
    assert info["table"][0]["episodes"] == 1
    page = api.episodes(sources, {"src": "0"})
    assert page["all"] == 1 and page["skipped"]["count"] == 2
    assert "'transcript'" in page["skipped"]["lines"][0]["why"]


def test_the_server_answers_every_page_of_a_file_with_malformed_lines(tmp_path):
    server = make_server(open_sources([str(_run_with_bad_lines(tmp_path / "run"))]))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        for path in ("/api/source?src=0", "/api/episodes?src=0&file=step_1", "/api/group?src=0&file=step_1&group=1",
                     "/api/episode?src=0&file=step_1&id=1", "/api/find?src=0&file=step_1&task=good-b"):
            body = json.load(urllib.request.urlopen(base + path, timeout=30))
            assert "error" not in body, path
        page = json.load(urllib.request.urlopen(base + "/api/episodes?src=0&file=step_1", timeout=30))
        assert page["skipped"]["count"] == 5
    finally:
        server.shutdown()
        server.server_close()


def test_static_pages_of_a_file_with_malformed_lines_are_written_and_name_them(tmp_path, capsys):
    out = tmp_path / "site"
    assert cli_main(["view", str(_run_with_bad_lines(tmp_path / "run")), "--static", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "skipped 5 malformed lines" in printed
    data = json.loads((out / "data" / "s0" / "f0.js").read_text().split(" = ", 1)[1].rstrip(";\n"))
    assert [r["task_id"] for r in data["rows"]] == ["good-a", "good-b"] and len(data["episodes"]) == 2
    assert data["skipped"]["count"] == 5 and data["skipped"]["lines"][0]["line"] == 2


def _traced(fn):
    """What ``fn()`` returns, the bytes it left allocated, and its peak."""
    tracemalloc.start()
    try:
        out = fn()
        held, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return out, held, peak


def test_a_file_is_read_in_pages_and_its_episodes_are_never_held(tmp_path):
    # 400 episodes with a 20,000-char reply each: an 8 MB step file
    run = write_run(tmp_path / "run", {1: [run_episode(f"t{k}", k // 8, k % 2 == 0, 1.0, reply="R" * 20_000)
                                           for k in range(400)]})
    sources = open_sources([str(run)])

    def pages():
        first = api.episodes(sources, {"src": "0", "file": "step_1", "success": "1", "limit": "50"})
        ep = api.episode(sources, {"src": "0", "file": "step_1", "id": "399"})
        return first, ep

    (first, ep), held, peak = _traced(pages)
    assert first["total"] == 200 and ep["episode"]["task_id"] == "t399"
    assert len(ep["episode"]["turns"][0]["reply"]) == 20_000
    assert held < 500_000 and peak < 1_500_000, (held, peak)  # the file is 8 MB; one episode is 20 KB


def test_the_memory_kept_is_bounded_whatever_the_size_of_the_run(tmp_path):
    run = write_run(tmp_path / "run", {s: [run_episode(f"t{k}", k // 8, True, 1.0) for k in range(100)]
                                       for s in range(1, 41)})
    sources = [open_source(run, cache=RowCache(max_rows=300))]

    def read(steps):
        for s in steps:
            api.episodes(sources, {"src": "0", "file": f"step_{s}"})

    read([1])
    _, after_5, _ = _traced(lambda: read(range(2, 6)))
    _, after_40, _ = _traced(lambda: read(range(6, 41)))
    assert after_40 < after_5 + 50_000, (after_5, after_40)


def test_a_line_over_the_limit_is_skipped_and_named_and_the_others_shown(tmp_path):
    run = write_run(tmp_path / "run", {1: [run_episode("before", 0, True, 1.0),
                                           run_episode("huge", 0, True, 1.0, reply="A" * (LINE_LIMIT + 1_000_000)),
                                           run_episode("after", 0, False, 0.0)]})
    sources = open_sources([str(run)])
    page = api.episodes(sources, {"src": "0", "file": "step_1"})
    assert [r["task_id"] for r in page["rows"]] == ["before", "after"]
    (note,) = page["skipped"]["lines"]
    assert note["line"] == 2 and note["why"] == "17.0 MB long, over the 16 MB a line may be"
    assert api.episode(sources, {"src": "0", "file": "step_1", "id": "1"})["episode"]["task_id"] == "after"


def test_a_row_shows_the_first_reply_on_one_line_cut_to_its_limit():
    from agentgym.viewer.sources import REPLY_LIMIT, first_reply

    turn = {"reply": "<think>a\n  b</think>\n<answer>c</answer>"}
    assert first_reply({"turns": [turn, {"reply": "later"}]}) == "<think>a b</think> <answer>c</answer>"
    assert first_reply({"turns": []}) == "" and first_reply({"turns": [{"reply": None}]}) == ""
    long = first_reply({"turns": [{"reply": "y" * 500}]})
    assert long == "y" * REPLY_LIMIT + "..."
