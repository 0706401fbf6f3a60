"""``agentgym view`` in a real headless browser (Chromium): a real tiny training run, a real board,
hostile episode text and a run of thousands of episodes.

Runs where Playwright (the dev extra) and a system Chromium (``apt-get install chromium``, which
.ci/run does where it may) are installed, as ``tests/integrations/test_web.py`` does; skipped elsewhere.
"""

import json
import os
import queue
import shutil
import subprocess
import sys
import threading

import pytest

playwright = pytest.importorskip("playwright.sync_api")
CHROMIUM = os.environ.get("AGENTGYM_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
if CHROMIUM is None:
    pytest.skip("no system Chromium to drive (apt-get install chromium, or AGENTGYM_CHROMIUM=PATH)",
                allow_module_level=True)

from viewer_data import HOSTILE_OBSERVATION, HUGE_REPLY, hostile_run, large_run  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
ENV = {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""), "PYTHONUNBUFFERED": "1"}
TOOLQA = '{"question_kinds": ["single_hop"], "max_turns": 2}'


def _rows(path):
    return [json.loads(line) for line in open(path, encoding="utf-8")]


@pytest.fixture(scope="module")
def dirs(tmp_path_factory):
    """A real tiny GRPO run (two steps, held-out evaluations before and after), a real board (the
    expert and the random agent on four ToolQA test tasks), a hostile run and a large run."""
    from agentgym.leaderboard import RunnerConfig, run_board

    root = tmp_path_factory.mktemp("view")
    subprocess.run([sys.executable, os.path.join(ROOT, "trainers", "grpo.py"), "--model", "tiny", "--preset", "none",
                    "--env-kwargs", TOOLQA, "--num-steps", "2", "--num-groups", "2", "--group-size", "2",
                    "--max-new-tokens", "12", "--cold-start.num-steps", "0", "--eval-episodes", "3",
                    "--cpu-threads", "1", "--quiet", "--no-progress", "--output-dir", str(root / "run")],
                   check=True, env=ENV, cwd=str(root), capture_output=True)
    run_board(["expert", "random"], ["ToolQA-v0"], ["test"], str(root / "board"), limit=4,
              runner=RunnerConfig(num_envs=4, progress=False))
    hostile = hostile_run(root / "hostile")
    with open(hostile / "episodes" / "step_1.jsonl", "a") as f:
        f.write('{"task_id": "five turns", "turns": 5}\n{"task_id": "huge", "return": 1e999}\n')
    (root / "private.jsonl").write_text('{"task_id": "private"}\n')
    (hostile / "episodes" / "step_2.jsonl").symlink_to(root / "private.jsonl")  # out of the run: left out
    return {"run": root / "run", "board": root / "board", "hostile": hostile,
            "large": large_run(root / "large", 3000), "root": root}


@pytest.fixture(scope="module")
def viewer(dirs):
    """``agentgym view RUN BOARD HOSTILE LARGE``, as a user starts it; its URL."""
    proc = subprocess.Popen([sys.executable, "-m", "agentgym.cli", "view", str(dirs["run"]), str(dirs["board"]),
                             str(dirs["hostile"]), str(dirs["large"])],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in proc.stdout], daemon=True).start()
    try:
        first = lines.get(timeout=60)
        assert first.startswith("agentgym view: http://127.0.0.1:"), first
        yield first.split()[2]
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@pytest.fixture(scope="module")
def browser():
    with playwright.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield b
        b.close()


@pytest.fixture
def page(browser):
    page = browser.new_page(viewport={"width": 1200, "height": 900})
    page.errors = []
    page.on("pageerror", lambda e: page.errors.append(str(e)))
    yield page
    page.close()


def _open(page, url):
    """Go to ``url`` and wait until the viewer has drawn it."""
    page.goto(url)
    page.wait_for_selector("body[data-ready]")
    return page


def _click(page, selector):
    """Click what leads to another page of the viewer, and wait until it is drawn."""
    page.evaluate("document.body.removeAttribute('data-ready')")
    page.locator(selector).first.click()
    page.wait_for_selector("body[data-ready]")
    assert page.inner_text("#error") == ""


def _show(page, url_hash):
    """Go to a page of the viewer already loaded, and wait until it is drawn."""
    page.evaluate("h => { document.body.removeAttribute('data-ready'); location.hash = h; }", url_hash)
    page.wait_for_selector("body[data-ready]")
    assert page.inner_text("#error") == ""


@pytest.mark.browser
@pytest.mark.network
def test_a_real_run_shows_its_curves_episodes_and_transcripts(page, viewer, dirs):
    _open(page, viewer)
    assert page.locator("#sources tr").count() == 5
    assert page.locator("#charts svg polyline").count() >= 2  # reward/mean and success/mean over both steps
    assert "held-out success (valid, evaluation files)" in page.inner_text("#charts")

    _show(page, "#/src/0")
    _click(page, "text=episodes of the last step")
    step = _rows(dirs["run"] / "episodes" / "step_2.jsonl")
    assert page.inner_text("#count") == f"{len(step)} of {len(step)} episodes"
    # filter: the tiny untrained model solves nothing
    page.select_option("#success", "1")
    _click(page, "#apply")
    assert page.inner_text("#count") == f"0 of {len(step)} episodes"
    page.select_option("#success", "0")
    _click(page, "#apply")
    assert page.locator("#rows tr").count() == len(step) + 1
    shown = page.locator("#rows td.first-reply").first.inner_text().strip()
    assert shown and " ".join(step[0]["turns"][0]["reply"].split()).startswith(shown.removesuffix("..."))

    _click(page, "#rows a.open")
    turn = step[0]["turns"][0]
    assert page.locator("pre.reply").first.inner_text().strip() == turn["reply"].strip()
    assert page.locator("pre.obs").first.inner_text().strip() == turn["observation"].strip()
    facts = page.locator(".turn .facts").first.inner_text()
    assert f"advantage {turn['advantage']:.3f}" in facts and "format 0.000" in facts
    assert page.errors == []


@pytest.mark.browser
@pytest.mark.network
def test_a_group_side_by_side_and_a_task_at_two_steps(page, viewer, dirs):
    _open(page, viewer + "#/episodes/0?file=step_1")
    _click(page, "#rows a.grp")
    assert page.locator("#group-columns .column").count() == 2  # --group-size 2

    # the held-out tasks are the same at every evaluation: step 0's first one against step 2's
    before, after = (_rows(dirs["run"] / "episodes" / f"eval_step_{n}_valid.jsonl") for n in (0, 2))
    _show(page, "#/episode/0?file=eval_step_0_valid&id=0")
    page.select_option("#cmp-file", "eval_step_2_valid")
    _click(page, "#cmp-go")
    columns = page.locator("#compare .column")
    assert columns.count() == 2
    assert "eval_step_0_valid" in columns.nth(0).inner_text() and "eval_step_2_valid" in columns.nth(1).inner_text()
    task = before[0]["task_id"]
    index = next(k for k, r in enumerate(after) if r["task_id"] == task)
    assert columns.nth(1).locator("pre.reply").first.inner_text().strip() == after[index]["turns"][0]["reply"].strip()
    assert page.errors == []


@pytest.mark.browser
@pytest.mark.network
def test_a_board_shows_its_episodes_by_agent_env_and_split(page, viewer, dirs):
    _open(page, viewer + "#/src/1")
    table = page.inner_text("#board")
    assert "expert" in table and "random" in table and "ToolQA-v0" in table
    _click(page, "#board a:text-is('expert')")
    assert page.inner_text("#count") == "4 of 4 episodes"
    assert set(page.locator("#rows td:nth-child(8)").all_inner_texts()) == {"expert · ToolQA-v0 test"}
    page.select_option("#agent", "")
    page.select_option("#success", "1")
    _click(page, "#apply")
    assert page.inner_text("#count") == "4 of 8 episodes"  # the expert solves its four, random none
    _click(page, "#rows a.open")
    record = _rows(dirs["board"] / "episodes" / "expert__ToolQA-v0__test.jsonl")[0]
    assert page.locator("pre.obs").first.inner_text().strip() == record["first_observation"].strip()
    assert page.locator("pre.reply").first.inner_text().strip() == record["transcript"][0]["action"].strip()
    assert page.errors == []


@pytest.mark.browser
@pytest.mark.network
def test_hostile_text_is_shown_as_text_and_never_run(page, viewer):
    _open(page, viewer + "#/episodes/2?file=step_1")
    assert "<script>window.pwned='task'</script>" in page.inner_text("#rows")
    assert page.inner_text("#count") == "2 of 2 episodes"
    skipped = page.inner_text("#skipped")  # the malformed lines after them, named
    assert skipped.startswith("2 lines skipped") and "step_1 line 3: 'turns' is 5, not a list" in skipped
    assert "step_1 line 4: the number 1e999 is out of range" in skipped
    _show(page, "#/episode/2?file=step_1&id=0")
    assert page.evaluate("window.pwned") is None
    observation = page.locator("pre.obs").first.inner_text()
    assert '<script>window.pwned = "script"</script>' in observation and "<b>bold?</b>" in observation
    assert "\u241b[31mred alert\u241b[0m" in observation  # the ANSI escapes, visible, not colouring anything
    assert page.locator("pre.reply").first.inner_text().startswith("<img src=x onerror=")
    assert page.locator("img").count() == 0 and page.locator("script").count() == 1  # app.js alone
    assert HOSTILE_OBSERVATION.startswith("<script>")

    # a 10 MB reply: cut by the server, shown in part with a button for more
    _show(page, "#/episode/2?file=step_1&id=1")
    reply = page.locator("pre.reply").first
    assert len(reply.inner_text()) < 2100
    reply.locator("button.more").click()
    text = reply.inner_text()
    assert 100_000 < len(text) < 100_200 and f"[cut for display: {len(HUGE_REPLY)} chars in all]" in text
    _show(page, "#/group/2?file=step_1&group=0")
    assert page.evaluate("window.pwned") is None and page.errors == []
    _show(page, "#/src/2")
    assert page.inner_text("#left-out") == "left out: \nepisodes/step_2.jsonl: a link to a file outside the run"


@pytest.mark.browser
@pytest.mark.network
def test_a_run_of_thousands_of_episodes_loads_one_page_of_rows(page, viewer):
    asked = []
    page.on("response", lambda r: asked.append(r) if "/api/episodes?" in r.url else None)
    _open(page, viewer + "#/episodes/3?file=step_1")
    assert page.inner_text("#count") == "3000 of 3000 episodes, page 1 of 60"
    assert page.locator("#rows tr").count() == 51
    (first,) = asked
    body = first.json()
    assert body["total"] == 3000 and len(body["rows"]) == 50 and len(first.body()) < 40_000
    _click(page, "#next")
    assert page.locator("#rows td:first-child").first.inner_text() == "50"
    assert len(asked) == 2 and len(asked[1].json()["rows"]) == 50
    assert page.errors == []


@pytest.mark.browser
def test_static_pages_open_from_disk(page, dirs):
    out = dirs["root"] / "site"
    subprocess.run([sys.executable, "-m", "agentgym.cli", "view", str(dirs["run"]), str(dirs["board"]),
                    str(dirs["hostile"]), "--static", str(out)], check=True, env=ENV, capture_output=True)
    base = (out / "index.html").as_uri()
    _open(page, base)
    assert page.locator("#sources tr").count() == 4 and page.locator("#charts svg").count() >= 2
    _show(page, "#/episodes/1?agent=random")
    assert page.inner_text("#count") == "4 of 4 episodes"
    _show(page, "#/episodes/0?file=step_1&success=0")
    _click(page, "#rows a.open")
    _show(page, "#/episodes/2?file=step_1")
    assert page.inner_text("#skipped").startswith("2 lines skipped")
    _show(page, "#/src/2")
    assert "episodes/step_2.jsonl: a link to a file outside the run" in page.inner_text("#left-out")
    assert str(dirs["root"]) not in page.content()  # a shared site names its sources, never their paths
    _show(page, "#/episode/2?file=step_1&id=0")
    assert "\u241b[31mred alert" in page.locator("pre.obs").first.inner_text()
    assert page.evaluate("window.pwned") is None and page.errors == []
