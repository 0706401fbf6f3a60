"""Ready-first stepping with send()/recv(): same episodes as lockstep, slow or broken envs hold up
no one, and misuse gets a clear error."""

import os
import signal
import time

import gymnasium as gym
import numpy as np
import pytest
from processes import process_tree, wait_gone

from agentgym.vector import AutoresetMode, ReadyBatch, make_vec

ACTIONS = ["inc", "noop", "inc", "bogus", "inc", "inc"]
BACKENDS = [("sync", {}), ("process", {}), ("process", {"envs_per_worker": 2})]


def _started(fixture_id, num_envs, **kwargs):
    """A ready-first vector env whose envs have all started a count-5 episode."""
    vec = make_vec(fixture_id, num_envs, **kwargs)
    vec.send_reset(seed=0, options={"task_id": "count-5"})
    assert vec.recv(min_envs=num_envs).resets.all()
    return vec


def _lockstep(vec, steps=6):
    """Per env: the observations and (reward, terminated, truncated) of each of its steps."""
    obs, _ = vec.reset(seed=0)
    trace = {i: [obs[i]] for i in range(vec.num_envs)}
    for _ in range(steps):
        running = ~vec.done
        obs, rewards, terminated, truncated, _ = vec.step(ACTIONS[:vec.num_envs])
        for i in np.flatnonzero(running):
            trace[i].append((obs[i], rewards[i], terminated[i], truncated[i]))
    vec.close()
    return trace


def _ready_first(vec, steps=6):
    """The same episodes driven through send()/recv(), one env at a time as each comes back."""
    vec.send_reset(seed=0)
    trace, taken = {}, {i: 0 for i in range(vec.num_envs)}
    while vec.pending or not trace:
        batch = vec.recv()
        assert isinstance(batch, ReadyBatch)
        for k, i in enumerate(batch.env_ids.tolist()):
            if batch.resets[k]:
                trace[i] = [batch.observations[k]]
            else:
                trace[i].append((batch.observations[k], batch.rewards[k], batch.terminated[k], batch.truncated[k]))
                taken[i] += 1
            if taken[i] < steps and not (batch.terminated[k] or batch.truncated[k]):
                vec.send([ACTIONS[i]], [i])
    vec.close()
    return trace


@pytest.mark.parametrize("backend,extra", BACKENDS)
def test_ready_first_plays_the_same_episodes_as_lockstep(fixture_id, backend, extra):
    expected = _lockstep(make_vec(fixture_id, 6, group_size=2))
    assert _ready_first(make_vec(fixture_id, 6, group_size=2, backend=backend, **extra)) == expected


@pytest.mark.multiproc
def test_recv_returns_the_envs_that_are_done_and_a_hung_env_holds_up_no_one(fixture_id):
    vec = _started(fixture_id, 4, backend="process", step_timeout=4.0)
    vec.send(["!hang", "inc", "inc", "inc"])
    start = time.monotonic()
    batch = vec.recv(min_envs=3)
    assert 0 not in batch.env_ids and sorted(batch.env_ids.tolist()) == [1, 2, 3]
    assert time.monotonic() - start < 3.0 and vec.pending == (0,)
    # the others go on stepping while env 0 hangs
    for _ in range(3):
        vec.send(["inc"] * 3, [1, 2, 3])
        assert sorted(vec.recv(min_envs=3).env_ids.tolist()) == [1, 2, 3]
    batch = vec.recv(min_envs=1)
    assert batch.env_ids.tolist() == [0] and batch.truncated.tolist() == [True]
    assert "timeout" in batch.infos["error"][0] and vec.restarts == 1
    vec.send(["inc"] * 3, [1, 2, 3])
    batch = vec.recv(min_envs=3)
    assert batch.observations[0].startswith("Count: 5.") and batch.terminated.all()
    vec.send_reset([0])
    assert vec.recv().observations[0].startswith("Count to")
    vec.close()


def test_a_worker_killed_mid_job_truncates_its_env_and_the_next_reset_gets_a_fresh_worker(fixture_id):
    vec = _started(fixture_id, 3, backend="process")
    victim = vec.worker_pids()[1]
    vec.send(["inc", "!slow", "inc"])
    os.kill(victim, signal.SIGKILL)
    batch = vec.recv(min_envs=3)
    assert batch.truncated.tolist() == [False, True, False] and "died" in batch.infos["error"][1]
    assert batch.observations[0].startswith("Count: 1.")
    vec.send_reset([1], seed=0, options={"task_id": "count-5"})
    assert vec.recv().resets.tolist() == [True] and vec.worker_pids()[1] != victim
    vec.close()


def test_a_worker_answers_each_env_as_it_finishes(fixture_id):
    vec = _started(fixture_id, 2, backend="process", envs_per_worker=2)
    vec.send(["inc", "!slow"])
    first = vec.recv()
    assert first.env_ids.tolist() == [0] and vec.pending == (1,)
    assert vec.recv().env_ids.tolist() == [1]
    # a message too big for the pipe while the worker is busy waits its turn instead of blocking
    vec.send(["!slow"], [0])
    vec.send(["x" * 200_000], [1])
    batch = vec.recv(min_envs=2)
    assert batch.env_ids.tolist() == [0, 1] and batch.infos["action_valid"].tolist() == [True, False]
    vec.close()


def test_recv_timeout_returns_what_is_ready(fixture_id):
    # Both envs hang: only the recv timeout can end the wait before the step timeout does.
    vec = _started(fixture_id, 2, backend="process", step_timeout=60)
    vec.send(["!hang", "!hang"])
    start = time.monotonic()
    batch = vec.recv(timeout=0.05)
    assert len(batch.env_ids) == 0 and time.monotonic() - start < 30 and vec.pending == (0, 1)
    vec.close()


@pytest.mark.parametrize("backend", ["sync", "process"])
def test_finished_envs_follow_the_autoreset_mode(fixture_id, backend):
    def finish(vec):
        vec.send_reset(seed=0, options={"task_id": "count-2"})
        vec.recv(min_envs=2)
        for _ in range(2):
            vec.send(["inc", "inc"])
            batch = vec.recv(min_envs=2)
        return batch

    vec = make_vec(fixture_id, 2, backend=backend)
    assert finish(vec).terminated.all()
    vec.send(["inc", "inc"])  # DISABLED: a finished env waits; no engine call
    batch = vec.recv(min_envs=2)
    assert batch.terminated.all() and batch.rewards.tolist() == [0.0, 0.0] and batch.infos == {}
    vec.close()

    lockstep = make_vec(fixture_id, 2, autoreset_mode=AutoresetMode.NEXT_STEP)
    lockstep.reset(seed=0, options={"task_id": "count-2"})
    for _ in range(3):
        expected = lockstep.step(["inc", "inc"])
    vec = make_vec(fixture_id, 2, backend=backend, autoreset_mode=AutoresetMode.NEXT_STEP)
    finish(vec)
    vec.send(["inc", "inc"])  # NEXT_STEP: the finished env's next send resets it
    batch = vec.recv(min_envs=2)
    assert batch.resets.all() and not batch.terminated.any() and batch.observations == expected[0]
    vec.close()

    vec = make_vec(fixture_id, 2, backend=backend, autoreset_mode=AutoresetMode.SAME_STEP)
    batch = finish(vec)  # SAME_STEP: the last step comes back with the next episode's start
    assert batch.resets.all() and batch.terminated.all() and batch.rewards.min() > 0
    assert batch.observations == expected[0]
    assert all(o.startswith("Count: 2.") for o in batch.infos["final_obs"])
    assert batch.infos["final_info"]["success"].all()
    vec.close()


def test_misuse_gets_a_clear_error(fixture_id):
    vec = make_vec(fixture_id, 2, backend="process")
    with pytest.raises(gym.error.NoAsyncCallError):
        vec.recv()
    with pytest.raises(gym.error.ResetNeeded, match="send_reset"):
        vec.send(["inc", "inc"])
    vec.send_reset([0])
    with pytest.raises(gym.error.AlreadyPendingCallError, match="recv"):
        vec.send(["inc"], [0])
    with pytest.raises(gym.error.AlreadyPendingCallError):
        vec.step(["inc", "inc"])
    with pytest.raises(gym.error.AlreadyPendingCallError):
        vec.reset()
    with pytest.raises(gym.error.AlreadyPendingCallError):
        vec.call("set_prs_stage", 1)
    with pytest.raises(ValueError, match="out of range"):
        vec.send_reset([5])
    with pytest.raises(ValueError, match="repeat"):
        vec.send_reset([1, 1])
    with pytest.raises(ValueError, match="reset_mask"):
        vec.send_reset([1], options={"reset_mask": np.array([False, True])})
    assert vec.pending == (0,)
    vec.recv()
    with pytest.raises(ValueError, match="one action per env"):
        vec.send(["inc", "inc"], [0])
    vec.reset(seed=0)  # nothing pending: lockstep works again
    vec.close()


def test_an_answer_that_came_in_time_survives_a_late_recv(fixture_id, backend="process"):
    # A policy may take longer than step_timeout to come back to recv(): the env answered on time.
    vec = _started(fixture_id, 2, backend=backend, step_timeout=0.3)
    vec.send(["inc", "inc"])
    time.sleep(0.8)
    batch = vec.recv(min_envs=2)
    assert not batch.truncated.any() and "_error" not in batch.infos and vec.restarts == 0
    vec.close()


def test_close_with_jobs_in_flight_leaves_no_process_behind(fixture_id):
    vec = make_vec(fixture_id, 2, backend="process", engine_process=True)
    vec.send_reset(seed=0)
    vec.recv(min_envs=2)
    vec.send(["!hang", "inc"])
    children = process_tree(set(vec.worker_pids()))
    assert len(children) >= 4  # two workers, each with its engine process
    start = time.monotonic()
    vec.close()
    assert time.monotonic() - start < 5.0
    assert wait_gone(children, within=5)

