"""Faults: a killed or hung worker truncates its own envs only, restarts, and close() leaves nothing."""

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest

from agentgym.vector import make_vec
from processes import process_tree, wait_gone

TASKS = [{"task_id": "count-5"}, {"task_id": "count-5"}]
HERE = Path(__file__).parent


def _descendants():
    return {p.pid for p in psutil.Process().children(recursive=True)}


def test_killed_worker_truncates_its_env_only_and_the_next_reset_runs_on_a_fresh_worker(fixture_id):
    vec = make_vec(fixture_id, 4, group_size=2, backend="process")
    control = make_vec(fixture_id, 4, group_size=2)
    for v in (vec, control):
        v.reset(seed=0, options={"group_options": TASKS})
        v.step(["inc"] * 4)
    victim = vec.worker_pids()[1]
    os.kill(victim, signal.SIGKILL)
    obs, rewards, terminated, truncated, infos = vec.step(["inc"] * 4)
    c_obs, c_rewards, c_terminated, c_truncated, _ = control.step(["inc"] * 4)
    assert truncated.tolist() == [False, True, False, False]
    assert not terminated.any()
    assert "died" in infos["error"][1] and infos["_error"].tolist() == [False, True, False, False]
    assert infos["task_id"][1] == "count-5" and infos["action_valid"][1] == False  # noqa: E712
    for i in (0, 2, 3):  # the rest of the batch is untouched
        assert obs[i] == c_obs[i] and rewards[i] == c_rewards[i]
    assert obs[1] == "Count: 1. Word: " + obs[1].split("Word: ")[1]  # keeps its last observation
    # the batch goes on; the truncated env waits
    obs, _, _, truncated, _ = vec.step(["inc"] * 4)
    assert obs[0] == control.step(["inc"] * 4)[0][0] and truncated[1]
    obs, infos = vec.reset(seed=0, options={"group_options": TASKS})
    assert vec.worker_pids()[1] != victim and vec.restarts == 1
    assert obs[1] == obs[0] and infos["task_id"][1] == "count-5"
    _, _, _, truncated, _ = vec.step(["inc"] * 4)
    assert not truncated.any()
    vec.close(), control.close()


def test_hung_worker_is_killed_after_the_step_timeout(fixture_id):
    vec = make_vec(fixture_id, 4, backend="process", step_timeout=1.0)
    vec.reset(seed=0, options={"prs_stage": 0})
    vec.call("set_prs_stage", 2)
    hung = vec.worker_pids()[2]
    start = time.monotonic()
    obs, rewards, terminated, truncated, infos = vec.step(["inc", "inc", "!hang", "inc"])
    assert time.monotonic() - start < 5
    assert truncated.tolist() == [False, False, True, False]
    assert "timeout" in infos["error"][2]
    assert wait_gone([hung])
    obs, _ = vec.reset(seed=0)
    assert vec.worker_pids()[2] != hung
    assert all("Stage: 2." in o for o in obs)  # the PRS stage survived the restart
    vec.close()


@pytest.mark.parametrize("backend", ["sync", "process"])
def test_an_env_that_raises_is_truncated_and_rebuilt(fixture_id, backend):
    vec = make_vec(fixture_id, 2, backend=backend)
    vec.reset(seed=0)
    obs, _, _, truncated, infos = vec.step(["!raise", "inc"])
    assert truncated.tolist() == [True, False]
    assert infos["error"][0] == "RuntimeError: engine exploded"
    obs, infos = vec.reset(seed=0)
    assert obs[0].startswith("Count to")
    assert not vec.step(["inc", "inc"])[3].any()
    vec.close()


def test_a_worker_holding_two_envs_truncates_both_and_nothing_else(fixture_id):
    vec = make_vec(fixture_id, 4, backend="process", envs_per_worker=2)
    vec.reset(seed=0, options={"task_id": "count-5"})
    pids = vec.worker_pids()
    assert pids[0] == pids[1] != pids[2] == pids[3]
    os.kill(pids[2], signal.SIGKILL)
    _, _, _, truncated, _ = vec.step(["inc"] * 4)
    assert truncated.tolist() == [False, False, True, True]
    vec.close()


def test_close_leaves_no_worker_or_engine_process(fixture_id):
    before = _descendants()
    vec = make_vec(fixture_id, 3, backend="process", engine_process=True)
    vec.reset(seed=0)
    spawned = _descendants() - before
    assert len(spawned) == 6  # three workers, three engine processes
    os.kill(vec.worker_pids()[0], signal.SIGKILL)  # its engine must not outlive it
    vec.step(["inc"] * 3)
    vec.reset(seed=0)
    spawned |= _descendants() - before
    vec.close()
    assert wait_gone(spawned)


def _run_script(body: str) -> subprocess.Popen:
    script = textwrap.dedent(f"""
        import sys, time
        sys.path.insert(0, {str(HERE)!r})
        import conftest
        from agentgym.vector import make_vec
        if __name__ == "__main__":
            vec = make_vec(conftest.FIXTURE_ID, 2, backend="process", engine_process=True)
            vec.reset(seed=0)
            print(" ".join(str(p) for p in vec.worker_pids()), flush=True)
    """) + textwrap.indent(textwrap.dedent(body), "    ")
    return subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True,
                            start_new_session=True)


@pytest.mark.slow
def test_ctrl_c_in_the_parent_leaves_no_workers_or_engines():
    proc = _run_script("time.sleep(60)")
    workers = [int(p) for p in proc.stdout.readline().split()]
    tree = process_tree(workers)
    assert len(tree) == 4
    os.killpg(proc.pid, signal.SIGINT)  # what the terminal does on Ctrl-C: the foreground group
    proc.wait(timeout=30)
    assert wait_gone(tree)


@pytest.mark.slow
def test_a_parent_killed_outright_takes_its_workers_and_engines_with_it():
    proc = _run_script("time.sleep(60)")
    workers = [int(p) for p in proc.stdout.readline().split()]
    tree = process_tree(workers)
    proc.kill()
    proc.wait()
    assert wait_gone(tree, within=10)


def test_a_worker_that_died_between_episodes_is_replaced_at_reset(fixture_id):
    vec = make_vec(fixture_id, 2, group_size=2, backend="process")
    vec.reset(seed=0, options={"task_id": "count-2"})
    vec.step(["inc", "inc"])
    vec.step(["inc", "inc"])
    assert vec.done.all()
    os.kill(vec.worker_pids()[0], signal.SIGKILL)
    time.sleep(0.2)
    obs, infos = vec.reset(seed=0)
    assert obs[0] == obs[1] and vec.restarts == 1
    vec.close()


def test_ctrl_c_during_a_step_leaves_the_vector_env_usable(fixture_id):
    vec = make_vec(fixture_id, 2, backend="process")
    vec.reset(seed=0)

    def interrupt(*_):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGALRM, interrupt)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.1)
        with pytest.raises(KeyboardInterrupt):
            vec.step(["!slow", "!slow"])
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert vec.done.all()  # the interrupted episodes wait for a reset
    obs, _ = vec.reset(seed=0)
    assert all(o.startswith("Count to") for o in obs)
    obs, _, _, truncated, _ = vec.step(["inc", "inc"])
    assert all(o.startswith("Count: 1.") for o in obs) and not truncated.any()
    vec.close()
