"""``agentgym serve --web``: a person plays the env in a real headless browser (Chromium).

Runs where Playwright (the dev extra) and a system Chromium (``apt-get install chromium``, which
.ci/run does where it may) are installed; Playwright's own browser download is not used, as its CDN
is out of reach here. Skipped elsewhere.
"""

import json
import os
import re
import shutil

import gymnasium as gym
import pytest

pytest.importorskip("openenv")
playwright = pytest.importorskip("playwright.sync_api")
CHROMIUM = os.environ.get("AGENTGYM_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
if CHROMIUM is None:
    pytest.skip("no system Chromium to drive (apt-get install chromium, or AGENTGYM_CHROMIUM=PATH)",
                allow_module_level=True)

from servers import Server  # noqa: E402

import agentgym  # noqa: E402,F401

TOOLQA = {"question_kinds": ["single_hop"], "max_turns": 4, "expert": True}


@pytest.mark.browser
@pytest.mark.network
@pytest.mark.multiproc
def test_a_person_plays_a_toolqa_episode_in_the_browser(tmp_path):
    server = Server("ToolQA-v0", "--web", "--env-kwargs", json.dumps(TOOLQA))
    # the same episode in process: a broken action, then the expert's two actions
    here = gym.make("ToolQA-v0", **TOOLQA)
    _, info = here.reset(seed=3)
    first_observation = here.unwrapped.transcript[1][1]
    _, _, _, _, info = here.step("no tags at all")
    for _ in range(2):
        _, _, terminated, _, info = here.step(info["expert_action"])
    try:
        with playwright.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            page = browser.new_page()
            page.goto(server.url + "/web")
            page.wait_for_selector("#status:has-text('connected')")
            page.fill("#seed", "3")
            page.click("#reset")
            page.wait_for_selector("#transcript pre")
            assert page.inner_text("#transcript").strip() == first_observation
            assert page.text_content("#system").startswith("You answer questions")

            # a broken action is answered, with its terms
            page.fill("#action", "no tags at all")
            page.click("#send")
            page.wait_for_selector("#transcript pre:nth-of-type(3)")
            assert "Invalid output" in page.inner_text("#transcript")
            assert "format\t0.000" in page.inner_text("#terms")

            # the expert's next action is a button; clicking it plays it
            page.click("#admissible button")
            page.wait_for_selector("#transcript pre:nth-of-type(5)")
            assert "tool\t1.000" in page.inner_text("#terms")
            page.click("#admissible button")
            page.wait_for_selector("#status:has-text('episode over')")
            status = page.inner_text("#status")
            components = page.inner_text("#components")
            page.screenshot(path=str(tmp_path / "web.png"), full_page=True)
            browser.close()
    finally:
        server.close()
    assert terminated and status == f"episode over: success={str(info['success']).lower()}, " \
                                     f"return={info['episode_return']:.3f}"
    for c in info["reward_components"]:
        assert f"{c['name']}\t{c['type']}\t{c['value']:.3f}" in components


@pytest.mark.engine
@pytest.mark.browser
@pytest.mark.network
@pytest.mark.multiproc
def test_the_admissible_actions_of_an_embodied_env_are_buttons_that_act():
    pytest.importorskip("alfworld")
    server = Server("ALFWorld-v0", "--web", "--env-kwargs", '{"max_turns": 30}')
    here = gym.make("ALFWorld-v0", max_turns=30)
    _, info = here.reset(seed=1)
    first = sorted(info["admissible_actions"])
    _, _, _, _, info = here.step(sorted(first)[0])
    try:
        with playwright.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            page = browser.new_page()
            page.goto(server.url + "/web")
            page.wait_for_selector("#status:has-text('connected')")
            page.fill("#seed", "1")
            page.click("#reset")
            page.wait_for_selector("#admissible button")
            buttons = page.locator("#admissible button")
            assert sorted(buttons.all_inner_texts()) == first
            buttons.filter(has_text=re.compile(f"^{re.escape(first[0])}$")).click()
            page.wait_for_selector("#transcript pre:nth-of-type(3)")
            assert page.locator("#transcript pre").nth(2).inner_text() == here.unwrapped.transcript[-1][1]
            assert sorted(page.locator("#admissible button").all_inner_texts()) == sorted(info["admissible_actions"])
            browser.close()
    finally:
        server.close()
        here.close()
