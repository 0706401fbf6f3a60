"""``agentgym view``'s sources, JSON endpoints, server and static pages, without a browser."""

import json
import math
import threading
import urllib.error
import urllib.request

import pytest
from viewer_data import HUGE_REPLY, hostile_run, large_run, run_episode, write_run

from agentgym.cli import main as cli_main
from agentgym.viewer import api
from agentgym.viewer.server import make_server
from agentgym.viewer.sources import TEXT_LIMIT, SourceError, open_source, open_sources


def _board(root):
    (root / "blocks").mkdir(parents=True)
    (root / "episodes").mkdir()
    for agent, solved in (("expert", True), ("random", False)):
        slug = f"{agent}__ToolQA-v0__test"
        (root / "blocks" / f"{slug}.json").write_text(json.dumps({"agent": agent, "env": "ToolQA-v0", "split": "test"}))
        lines = [{"agent": agent, "env": "ToolQA-v0", "split": "test", "task_id": f"t{k}", "repeat": 0,
                  "outcome": "solved" if solved else "failed", "success": solved, "prs_return": 1.0 if solved else 0.1,
                  "terms": {"answer": float(solved)}, "first_observation": f"Question {k}?",
                  "transcript": [{"action": "<answer>a</answer>", "observation": "Correct." if solved else "No.",
                                  "reward": 1.0, "terms": {"format": 1.0}, "valid": True, "parse_error": None}]}
                 for k in range(3)]
        (root / "episodes" / f"{slug}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    return root


def test_episodes_are_filtered_and_paged_on_the_server(tmp_path):
    sources = open_sources([str(large_run(tmp_path / "run", 1000))])
    page = api.episodes(sources, {"src": "0", "file": "step_1", "limit": "20", "offset": "40"})
    assert page["all"] == 1000 and page["total"] == 1000 and len(page["rows"]) == 20
    assert [r["id"] for r in page["rows"]] == list(range(40, 60))
    assert {r["reply"] for r in page["rows"]} == {"<answer>x</answer>"}  # the first reply, as a completions table
    won = api.episodes(sources, {"src": "0", "file": "step_1", "success": "1"})
    assert won["total"] == 334 and all(r["success"] for r in won["rows"])
    group = api.episodes(sources, {"src": "0", "file": "step_1", "group": "3"})
    assert group["total"] == 8 and {r["task_id"] for r in group["rows"]} == {"task-3"}
    task = api.episodes(sources, {"src": "0", "file": "step_1", "task": "TASK-12"})
    assert {r["task_id"] for r in task["rows"]} == {"task-12", "task-120", "task-121", "task-122", "task-123",
                                                    "task-124"}
    band = api.episodes(sources, {"src": "0", "file": "step_1", "rmin": "0.5", "rmax": "0.9", "sort": "-return"})
    assert all(0.5 <= r["return"] <= 0.9 for r in band["rows"])
    assert [r["return"] for r in band["rows"]] == sorted((r["return"] for r in band["rows"]), reverse=True)
    assert len(api.episodes(sources, {"src": "0", "file": "step_1", "limit": "100000"})["rows"]) == api.MAX_PAGE
    one = api.group(sources, {"src": "0", "file": "step_1", "group": "3"})
    assert one["total"] == 8 and len(one["episodes"]) == 8 and one["episodes"][0]["episode"]["turns"]


def test_a_board_reads_as_episodes_by_agent_env_and_split(tmp_path):
    sources = open_sources([str(_board(tmp_path / "board"))])
    info = api.source(sources, {"src": "0"})
    assert info["kind"] == "board"
    assert {(r["agent"], r["episodes"], r["success"]) for r in info["table"]} == {("expert", 3, 1.0), ("random", 3, 0.0)}
    rows = api.episodes(sources, {"src": "0", "agent": "random"})["rows"]
    assert len(rows) == 3 and {r["agent"] for r in rows} == {"random"} and rows[0]["outcome"] == "failed"
    ep = api.episode(sources, {"src": "0", "file": rows[0]["file"], "id": "0"})["episode"]
    assert ep["turns"][0]["observation"] == "Question 0?" and ep["turns"][0]["reply"] == "<answer>a</answer>"
    assert ep["final_observation"] == "No." and ep["return"] == 0.1
    assert api.find(sources, {"src": "0", "file": "expert__ToolQA-v0__test", "task": "t2"}) == {"id": 2}


def test_texts_are_cut_for_display_and_broken_lines_and_nan_are_harmless(tmp_path):
    root = hostile_run(tmp_path / "run")
    with open(root / "episodes" / "step_1.jsonl", "a") as f:
        f.write('{"task_id": "nan", "return": NaN, "turns": []}\n{"task_id": "cut sh')
    sources = open_sources([str(root)])
    rows = api.episodes(sources, {"src": "0", "file": "step_1"})["rows"]
    assert [r["task_id"] for r in rows][2] == "nan" and rows[2]["return"] is None and len(rows) == 3
    reply = api.episode(sources, {"src": "0", "file": "step_1", "id": "1"})["episode"]["turns"][0]["reply"]
    assert len(reply) < TEXT_LIMIT + 100 and reply.endswith(f"[cut for display: {len(HUGE_REPLY)} chars in all]")


def test_bad_requests_name_what_is_missing(tmp_path):
    sources = open_sources([str(write_run(tmp_path / "run", {1: [run_episode("a", 0, True, 1.0)]}))])
    for params, message in (({"src": "3"}, "no source 3"), ({"src": "0", "file": "../../metrics"}, "no episode file"),
                            ({"src": "0", "file": "step_1", "id": "9"}, "no episode 9"),
                            ({"src": "x"}, "must be an integer")):
        with pytest.raises(SourceError, match=message):
            (api.episode if "id" in params else api.source if "file" not in params else api.episodes)(sources, params)
    with pytest.raises(SourceError, match="neither a training run"):
        open_source(tmp_path)


def test_the_server_answers_on_loopback_with_a_strict_policy_and_refuses_other_hosts(tmp_path):
    server = make_server(open_sources([str(write_run(tmp_path / "run", {1: [run_episode("a", 0, True, 1.0)]}))]))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        page = urllib.request.urlopen(base + "/")
        assert "script-src 'self'" in page.headers["Content-Security-Policy"] and b"app.js" in page.read()
        rows = json.load(urllib.request.urlopen(base + "/api/episodes?src=0&file=step_1"))["rows"]
        assert rows[0]["task_id"] == "a"
        curve = json.load(urllib.request.urlopen(base + "/api/curve?src=0&key=reward/mean"))
        assert curve["points"] == [[1, 0.1]]
        for path, status in (("/api/episode?src=0&file=step_9&id=0", 404), ("/etc/passwd", 404)):
            with pytest.raises(urllib.error.HTTPError) as e:
                urllib.request.urlopen(base + path)
            assert e.value.code == status
        rebound = urllib.request.Request(base + "/api/sources", headers={"Host": "attacker.example:80"})
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(rebound)
        assert e.value.code == 403
    finally:
        server.shutdown()
        server.server_close()


def test_static_pages_hold_every_file_as_a_script_of_data(tmp_path, capsys):
    run = write_run(tmp_path / "run", {1: [run_episode("a", 0, True, 1.0)], 2: [run_episode("b", 0, False, 0.0)]},
                    metrics=[{"step": 1, "reward/mean": float("nan")}, {"step": 2, "reward/mean": 0.5}])
    out = tmp_path / "site"
    assert cli_main(["view", str(run), str(_board(tmp_path / "board")), "--static", str(out)]) == 0
    assert "open" in capsys.readouterr().out
    assert sorted(p.name for p in out.iterdir()) == ["agentgym-view.json", "app.css", "app.js", "data", "index.html"]
    assert "Content-Security-Policy" in (out / "index.html").read_text()
    files = sorted(p.name for p in (out / "data" / "s0").iterdir())
    assert files == ["f0.js", "f1.js", "metrics.js", "source.js"]
    text = (out / "data" / "s0" / "f0.js").read_text()
    assert text.startswith('window.AGV_DATA["s0/f0"] = ') and text.isascii()
    data = json.loads(text.split(" = ", 1)[1].rstrip(";\n"))
    assert data["rows"][0]["task_id"] == "a" and data["episodes"][0]["turns"][0]["reply"] == "<answer>x</answer>"
    metrics = json.loads((out / "data" / "s0" / "metrics.js").read_text().split(" = ", 1)[1].rstrip(";\n"))
    assert metrics == [{"step": 1}, {"step": 2, "reward/mean": 0.5}]
    assert not any(isinstance(v, float) and math.isnan(v) for r in metrics for v in r.values())
    assert (out / "data" / "s1" / "f1.js").exists()


def test_the_command_refuses_what_it_cannot_read_or_write_with_one_line(tmp_path, capsys):
    run = str(write_run(tmp_path / "run", {1: [run_episode("a", 0, True, 1.0)]}))
    (tmp_path / "file").write_text("")
    for argv, message in ((["view", str(tmp_path / "empty")], "is not a directory"),
                          (["view", str(tmp_path)], "is neither a training run"),
                          (["view", run, "--static", str(tmp_path / "file" / "site")], "--static '"),
                          (["view", run, "--port", "70000"], "--port must be in 0..65535")):
        with pytest.raises(SystemExit) as e:
            cli_main(argv)
        assert e.value.code == 2
        err = capsys.readouterr().err
        assert err.startswith("agentgym view: error: ") and message in err and err.count("\n") == 1
