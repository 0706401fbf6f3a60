"""Faults: a killed or hung worker truncates its own envs only, restarts, and close() leaves nothing."""

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import gymnasium as gym
import psutil
import pytest
from processes import process_tree, wait_gone

from agentgym.vector import VectorEnvClosedError, make_vec

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


# Every way to use a vector env, each of which once reached its closed backend.
USES = {
    "step": lambda vec: vec.step(["inc"] * vec.num_envs),
    "reset": lambda vec: vec.reset(seed=1),
    "send": lambda vec: vec.send(["inc"] * vec.num_envs),
    "send_reset": lambda vec: vec.send_reset(),
    "recv": lambda vec: vec.recv(),
    "call": lambda vec: vec.call("set_prs_stage", 1),
    "get_attr": lambda vec: vec.get_attr("max_turns"),
    "set_attr": lambda vec: vec.set_attr("step_delay", 0.0),
    "render": lambda vec: vec.render(),
}


def assert_closed_for_good(vec):
    """Every use of a closed ``vec`` raises one error naming it, and no worker comes back."""
    restarts = vec.restarts
    for name, use in USES.items():
        with pytest.raises(VectorEnvClosedError, match=rf"is closed: {name}\(\) after close\(\)"):
            use(vec)
    assert vec.restarts == restarts
    vec.close()  # a second close is a no-op


@pytest.mark.parametrize("backend", ["sync", "process"])
def test_a_closed_vector_env_raises_a_clear_error_and_starts_nothing(fixture_id, backend, capfd):
    before = _descendants()
    vec = make_vec(fixture_id, 2, backend=backend)
    vec.reset(seed=0)
    vec.close()
    assert wait_gone(_descendants() - before)
    capfd.readouterr()
    assert_closed_for_good(vec)
    assert _descendants() - before == set()
    assert capfd.readouterr().err == ""  # no worker printed a traceback
    assert issubclass(VectorEnvClosedError, RuntimeError)
    assert issubclass(VectorEnvClosedError, gym.error.ClosedEnvironmentError)


def _ignore_sigint():
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _run_script(body: str, setup: str = "", vec_kwargs: str = "") -> subprocess.Popen:
    """A parent program in its own session, started the way a background job of a non-interactive
    shell is (``pytest &``): with SIGINT ignored. Its first line gives it what a program started
    from a terminal has, Python's KeyboardInterrupt on SIGINT, so the tests hold however the suite
    itself was launched."""
    script = textwrap.dedent(f"""
        import signal, sys, time
        signal.signal(signal.SIGINT, signal.default_int_handler)
        sys.path.insert(0, {str(HERE)!r})
        import conftest
        from agentgym.vector import make_vec
        if __name__ == "__main__":
    """) + textwrap.indent(textwrap.dedent(setup or """
            vec = make_vec(conftest.FIXTURE_ID, 2, backend="process", engine_process=True)
            vec.reset(seed=0)
            print(" ".join(str(p) for p in vec.worker_pids()), flush=True)
    """), "    ") + textwrap.indent(textwrap.dedent(body), "    ")
    return subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True, preexec_fn=_ignore_sigint)


@pytest.mark.multiproc
def test_ctrl_c_in_the_parent_leaves_no_workers_or_engines():
    proc = _run_script("time.sleep(60)")
    workers = [int(p) for p in proc.stdout.readline().split()]
    tree = process_tree(workers)
    assert len(tree) == 4
    os.killpg(proc.pid, signal.SIGINT)  # what the terminal does on Ctrl-C: the foreground group
    proc.wait(timeout=30)
    assert wait_gone(tree)


def _children_appear(proc: subprocess.Popen, count: int, within: float = 30.0) -> set[int]:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        children = process_tree([proc.pid]) - {proc.pid}
        if len(children) >= count:
            return children
        time.sleep(0.01)
    raise AssertionError(f"{count} workers did not start within {within}s")


@pytest.mark.multiproc
def test_ctrl_c_while_workers_build_their_envs_exits_at_once_and_leaves_nothing():
    setup = """
        print("starting", flush=True)
        vec = make_vec(conftest.FIXTURE_ID, 2, backend="process", engine_process=True, build_delay=60)
    """
    proc = _run_script("", setup=setup)
    proc.stdout.readline()
    workers = _children_appear(proc, 2)
    time.sleep(0.5)  # the workers have left the parent's group and are building their envs
    start = time.monotonic()
    os.killpg(proc.pid, signal.SIGINT)
    proc.wait(timeout=30)
    # Nothing to close gracefully in a worker that has no envs yet: it is killed, not waited for.
    assert time.monotonic() - start < 5
    assert wait_gone(workers)


@pytest.mark.multiproc
def test_ctrl_c_while_spawned_workers_start_reaches_the_parent_only():
    setup = """
        print("starting", flush=True)
        vec = make_vec(conftest.FIXTURE_ID, 2, backend="process", mp_context="spawn", build_delay=60)
    """
    proc = _run_script("", setup=setup)
    proc.stdout.readline()
    workers = _children_appear(proc, 3)  # multiprocessing's resource tracker and two workers
    time.sleep(0.1)  # the workers are importing, still in the parent's process group
    os.killpg(proc.pid, signal.SIGINT)
    _, stderr = proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGINT
    # One traceback, the parent's; a worker that got the Ctrl-C would print its own.
    assert stderr.count("KeyboardInterrupt") == 1, stderr
    assert wait_gone(workers)


@pytest.mark.multiproc
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


def test_a_hung_reset_is_given_up_after_the_reset_timeout_not_the_startup_timeout(fixture_id):
    vec = make_vec(fixture_id, 2, backend="process", reset_timeout=1.0)
    assert vec.startup_timeout == 600.0
    hung = vec.worker_pids()[1]
    start = time.monotonic()
    with pytest.raises(RuntimeError, match="env 1 failed to reset twice: no answer within the timeout of 1.0s"):
        vec.reset(seed=0, options={"group_options": [{"task_id": "count-3"}, {"task_id": "hang"}]})
    # Two tries of 1 s each, the second on a fresh worker once it has built its env.
    assert time.monotonic() - start < 10
    assert wait_gone([hung]) and vec.restarts == 2
    obs, _ = vec.reset(seed=0, options={"task_id": "count-3"})  # both envs play on
    assert all(o.startswith("Count to 3.") for o in obs)
    vec.close()


def test_a_hung_reset_through_recv_truncates_its_env_only(fixture_id):
    vec = make_vec(fixture_id, 2, backend="process", reset_timeout=1.0)
    start = time.monotonic()
    vec.send_reset(seed=0, options={"group_options": [{"task_id": "count-3"}, {"task_id": "hang"}]})
    batch = vec.recv(min_envs=2)
    assert time.monotonic() - start < 10
    assert batch.resets.tolist() == [True, False] and batch.truncated.tolist() == [False, True]
    assert "reset failed twice: no answer within the timeout of 1.0s" in batch.infos["error"][1]
    vec.close()


def test_the_default_reset_timeout_is_tens_of_seconds(fixture_id):
    vec = make_vec(fixture_id, 1, backend="process")
    assert 10 <= vec.reset_timeout <= 120 and vec.reset_timeout < vec.startup_timeout
    vec.close()
