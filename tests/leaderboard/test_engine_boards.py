"""The leaderboard on the real engines: generated ALFWorld games in the official layout (levels
included) and the ScienceWorld JVM; and a run killed with SIGKILL that resumes to the same board."""

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import warnings

import psutil
import pytest

import agentgym  # noqa: F401
from agentgym.leaderboard import RunnerConfig, run_board
from agentgym.leaderboard.store import read_jsonl

QUIET = RunnerConfig(num_envs=3, progress=False)


@pytest.fixture(scope="module")
def official_tree(tmp_path_factory):
    """A tree as alfworld-download lays it out, with a movable-receptacle trial ALFWorld skips."""
    pytest.importorskip("alfworld")
    from agentgym.envs.alfworld.generate import generate

    root = str(tmp_path_factory.mktemp("alfworld_data"))
    generate(root, 12, seed=21, split="train")
    generate(root, 6, seed=21, split="valid_seen")
    generate(root, 6, seed=21, split="valid_unseen")
    split_dir = os.path.join(root, "json_2.1.1", "valid_seen")
    movable = os.path.join(split_dir, "pick_and_place_simple-Pen-Mug-Desk-301movable", "trial_T0")
    os.makedirs(movable)
    first = sorted(os.listdir(split_dir))[0]
    trial = os.listdir(os.path.join(split_dir, first))[0]
    with open(os.path.join(split_dir, first, trial, "game.tw-pddl")) as src, \
            open(os.path.join(movable, "game.tw-pddl"), "w") as dst:
        dst.write(src.read())
    return root


def _rows(rows):
    return {(r["agent"], r["split"]): r for r in rows}


@pytest.mark.engine
def test_alfworld_board_plays_every_game_of_the_split_per_task_type(official_tree, tmp_path):
    rows = _rows(run_board(["expert", "random"], ["ALFWorld-v0"], ["valid_seen"], str(tmp_path),
                           env_kwargs={"data_path": official_tree}, runner=QUIET))
    games = [d for d in os.listdir(os.path.join(official_tree, "json_2.1.1", "valid_seen")) if "movable" not in d]
    expert, random = rows[("expert", "valid_seen")], rows[("random", "valid_seen")]
    assert expert["episodes"] == random["episodes"] == len(games) == 6
    assert len(expert["by_task_type"]) == 6 and all(v["episodes"] == 1 for v in expert["by_task_type"].values())
    assert expert["success"] >= 0.95 and random["success"] <= 0.2
    assert expert["stamps"]["engines"]["alfworld"] and expert["stamps"]["max_turns"] == 50
    assert random["invalid_action_rate"] == 0.0 and random["repeated_action_rate"] > 0  # admissible, aimless


@pytest.mark.engine
def test_alfworld_levels_on_the_board(official_tree, tmp_path):
    from agentgym.envs.alfworld.levels import HELD_OUT_TYPES, SEEN_TYPES

    rows = _rows(run_board(["random"], ["ALFWorld-v0"], ["L0", "L1", "L2"], str(tmp_path),
                           env_kwargs={"data_path": official_tree, "max_turns": 2}, runner=QUIET))
    assert set(rows[("random", "L2")]["by_task_type"]) == set(HELD_OUT_TYPES)
    assert set(rows[("random", "L1")]["by_task_type"]) == set(SEEN_TYPES)
    assert rows[("random", "L1")]["episodes"] == 8 and rows[("random", "L2")]["episodes"] == 4
    assert set(rows[("random", "L0")]["by_task_type"]) <= set(SEEN_TYPES)


class PicksTheFirstAction:
    """A policy that answers every prompt with action number 1 and keeps the prompts it saw."""

    def __init__(self):
        from agentgym.agents import SamplingConfig

        self.sampling, self.prompts = SamplingConfig(max_new_tokens=4), []

    def generate(self, prompts, sampling=None):
        from agentgym.agents import Completion

        self.prompts += prompts
        return [Completion(text="<action>1</action>") for _ in prompts]


@pytest.mark.engine
def test_alfworld_board_with_history_observations_and_choices(official_tree, tmp_path):
    from agentgym.leaderboard.agents import PolicyAgent
    from agentgym.leaderboard.cli import plan_blocks, write_reports
    from agentgym.leaderboard.runner import run_block
    from agentgym.leaderboard.store import RunDir
    from agentgym.train.base.records import RECORD_FILE

    options = {"observation": "history+admissible", "history": 1, "action_format": "choice"}
    rows = _rows(run_board(["expert", "random"], ["ALFWorld-v0"], ["valid_seen"], str(tmp_path / "scripted"),
                           env_kwargs={"data_path": official_tree, **options}, limit=2, runner=QUIET))
    expert, random = rows[("expert", "valid_seen")], rows[("random", "valid_seen")]
    assert expert["episodes"] == random["episodes"] == 2 and expert["success"] == 1.0
    assert expert["terms"]["valid"] == 1.0 and random["invalid_action_rate"] == 0.0

    # a checkpoint whose record says it was trained with the options plays with them; the board's
    # data and turn limit stay the board's, and --env-kwargs wins over the record
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    recorded = {**options, "data_path": "/elsewhere", "max_turns": 40, "reward_mode": "prs"}
    (ckpt / RECORD_FILE).write_text(json.dumps({"recipe": {"env_id": "ALFWorld-v0", "env_kwargs": recorded}}))
    policy = PicksTheFirstAction()
    agent = PolicyAgent(policy, "trained", checkpoint=str(ckpt))
    assert agent.trained_env_kwargs("ALFWorld-v0") == options and agent.trained_env_kwargs("ToolQA-v0") == {}
    (block, _), = plan_blocks([agent], ["ALFWorld-v0"], ["valid_seen"],
                              {"data_path": official_tree, "max_turns": 3, "history": 0}, limit=2).pairs
    assert block.env_kwargs == {**options, "history": 0, "data_path": official_tree, "max_turns": 3,
                                "split": "valid_seen"}
    run = RunDir(str(tmp_path / "trained"))
    run.write_block(block)
    run_block(block, agent, run, QUIET)
    row, = write_reports(run)
    assert row["episodes"] == 2 and row["terms"]["format"] == 1.0 and row["turns"] == 3
    # each prompt: the system prompt and the latest observation, which lists the actions by number
    assert len(policy.prompts) == 6 and all([m["role"] for m in p] == ["system", "user"] for p in policy.prompts)
    assert all(p[1]["content"].startswith("Task: ") and "\n1. " in p[1]["content"] for p in policy.prompts)


@pytest.mark.engine
def test_scienceworld_board_expert_and_random(tmp_path):
    pytest.importorskip("scienceworld")
    rows = _rows(run_board(["expert", "random"], ["ScienceWorld-v0"], ["test"], str(tmp_path),
                           select=["find-*", "chemistry-mix"], limit=5, runner=QUIET))
    expert, random = rows[("expert", "test")], rows[("random", "test")]
    assert expert["episodes"] == random["episodes"] == 5
    assert set(expert["by_task_type"]) == {"find-living-thing", "find-non-living-thing", "find-plant",
                                           "find-animal", "chemistry-mix"}
    assert expert["success"] >= 0.95 and expert["score"] >= 95
    assert random["success"] <= 0.2 and random["score"] < 50


def _board_cmd(root, out):
    return [sys.executable, "-m", "agentgym.cli", "leaderboard", "--agents", "random", "--envs", "ALFWorld-v0",
            "--split", "train", "--num-envs", "2", "--repeats", "2", "--no-progress", "--out", out,
            "--env-kwargs", json.dumps({"data_path": root, "max_turns": 6})]


# The board under a faulthandler that writes every thread's stack to stderr on SIGUSR1, in the board
# and in its env workers (forked, they inherit it; each leads a process group of its own): a run that
# stalls says where.
_DUMPS_STACKS = ("import faulthandler, signal, sys; faulthandler.register(signal.SIGUSR1, all_threads=True); "
                 "from agentgym.cli import main; sys.exit(main(sys.argv[1:]))")


def _finished(path: str) -> int:
    """Episodes written in full, read as a resumed board reads them (a line cut short does not count)."""
    return sum(1 for _ in read_jsonl(path))


@pytest.mark.engine
@pytest.mark.multiproc
def test_a_run_killed_mid_way_resumes_to_the_same_board(official_tree, tmp_path):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (os.environ.get("PYTHONPATH"), os.getcwd()) if p)}
    whole, killed = str(tmp_path / "whole"), str(tmp_path / "killed")
    subprocess.run(_board_cmd(official_tree, whole), check=True, env=env, capture_output=True, timeout=600)
    stderr_path = tmp_path / "killed-stderr.txt"
    with open(stderr_path, "wb") as stderr:
        proc = subprocess.Popen([sys.executable, "-c", _DUMPS_STACKS, *_board_cmd(official_tree, killed)[3:]],
                                env=env, stdout=subprocess.DEVNULL, stderr=stderr, start_new_session=True)
    episodes = os.path.join(killed, "episodes", "random__ALFWorld-v0__train.jsonl")
    # Kill after 3 episodes (under a second on a quiet machine). An env step that stalls is the
    # vector layer's to cut (its step timeout, 300 s), not this test's subject: after 60 s the test
    # records every stack and kills the run wherever it is, as long as an episode is finished.
    start = time.monotonic()
    stalled = False
    while proc.poll() is None and _finished(episodes) < 3:
        waited = time.monotonic() - start
        if waited > 60 and not stalled:
            stalled = True
            with contextlib.suppress(psutil.NoSuchProcess):  # it may finish as it is asked
                for pid in [proc.pid, *(c.pid for c in psutil.Process(proc.pid).children(recursive=True))]:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGUSR1)
        if stalled and _finished(episodes) >= 1 or waited > 300:
            break
        time.sleep(0.05)
    assert proc.poll() is None, "the run finished before it could be killed"
    os.killpg(proc.pid, signal.SIGKILL)  # the board; its env workers follow it within a second (their watchdog)
    proc.wait()
    done_before = _finished(episodes)
    log = stderr_path.read_text(errors="replace")
    if stalled:
        warnings.warn(f"the board had {done_before} of 16 episodes after {time.monotonic() - start:.0f} s; "
                      f"its stacks and stderr:\n{log[-20000:]}", stacklevel=1)
    assert 1 <= done_before < 16, f"{done_before} episodes finished; the board's stderr:\n{log[-20000:]}"
    subprocess.run(_board_cmd(official_tree, killed), check=True, env=env, capture_output=True, timeout=600)
    a = json.load(open(os.path.join(whole, "summary.json")))
    b = json.load(open(os.path.join(killed, "summary.json")))
    assert a == b and a[0]["episodes"] == 16
    keyed = [{(r["task_id"], r["repeat"]): r for r in map(json.loads, open(os.path.join(d, "episodes", os.path.basename(episodes))))}
             for d in (whole, killed)]
    assert keyed[0] == keyed[1]  # every episode, transcript included, replays exactly
