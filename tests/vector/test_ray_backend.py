"""The ray backend on a local Ray instance (CPU): same observations as sync, and fault handling."""

import os
import signal
import time
from pathlib import Path

import pytest
import test_faults as faults
import test_ready_first as ready

from agentgym.vector import make_vec

ray = pytest.importorskip("ray")
pytestmark = [pytest.mark.multiproc]


@pytest.fixture(scope="module")
def local_ray():
    started = not ray.is_initialized()
    if started:
        # Ray workers do not inherit the test's sys.path; the fixture env lives next to this file.
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
                 runtime_env={"env_vars": {"PYTHONPATH": str(Path(__file__).parent)}})
    yield
    if started:
        ray.shutdown()


def _rollout(vec):
    out = [vec.reset(seed=0)[0]]
    for _ in range(3):
        obs, rewards, terminated, truncated, _ = vec.step(["inc", "noop", "inc", "inc"])
        out.append((obs, rewards.tolist(), terminated.tolist(), truncated.tolist()))
    out.append(vec.reset()[0])
    return out


def test_ray_backend_matches_sync_and_survives_a_killed_and_a_hung_actor(local_ray, fixture_id):
    expected = _rollout(make_vec(fixture_id, 4, group_size=2))
    vec = make_vec(fixture_id, 4, group_size=2, backend="ray", envs_per_worker=2, step_timeout=2.0)
    assert _rollout(vec) == expected

    vec.call("set_prs_stage", 1)
    vec.reset(seed=0, options={"task_id": "count-5"})
    victim = vec.worker_pids()[0]
    os.kill(victim, signal.SIGKILL)
    _, _, _, truncated, infos = vec.step(["inc"] * 4)
    assert truncated.tolist() == [True, True, False, False] and "died" in infos["error"][0]
    _, _, _, truncated, infos = vec.step(["inc", "inc", "!hang", "inc"])
    assert truncated.tolist() == [True, True, True, True] and "timeout" in infos["error"][2]
    obs, _ = vec.reset(seed=0)
    assert victim not in vec.worker_pids() and vec.restarts == 2
    assert all("Stage: 1." in o for o in obs)
    vec.close()
    faults.assert_closed_for_good(vec)  # no actor is started again


def test_ray_backend_gives_the_same_toolqa_observations_as_sync(local_ray):
    pytest.importorskip("agentgym.envs.toolqa.env")

    def rollout(vec):
        obs, infos = vec.reset(seed=3)
        out = [obs]
        obs, rewards, terminated, _, _ = vec.step(list(infos.get("expert_action", ["<answer>x</answer>"] * 4)))
        out.append((obs, rewards.tolist(), terminated.tolist()))
        vec.close()
        return out

    expected = rollout(make_vec("ToolQA-v0", 4, group_size=2, expert=True))
    assert rollout(make_vec("ToolQA-v0", 4, group_size=2, backend="ray", expert=True)) == expected


def test_ray_ready_first_matches_lockstep_and_a_hung_actor_holds_up_no_one(local_ray, fixture_id):
    expected = ready._lockstep(make_vec(fixture_id, 6, group_size=2))
    assert ready._ready_first(make_vec(fixture_id, 6, group_size=2, backend="ray", envs_per_worker=2)) == expected
    ready.test_an_answer_that_came_in_time_survives_a_late_recv(fixture_id, backend="ray")

    vec = ready._started(fixture_id, 3, backend="ray", step_timeout=4.0)
    vec.send(["!hang", "inc", "inc"])
    start = time.monotonic()
    assert vec.recv(min_envs=2).env_ids.tolist() == [1, 2] and time.monotonic() - start < 3.0
    batch = vec.recv()
    assert batch.env_ids.tolist() == [0] and batch.truncated.all() and "timeout" in batch.infos["error"][0]
    vec.send_reset([0])
    assert vec.recv().resets.all() and vec.restarts == 1
    vec.close()
