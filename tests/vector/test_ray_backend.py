"""The ray backend on a local Ray instance (CPU): same observations as sync, and fault handling."""

import os
import signal
from pathlib import Path

import pytest

from agentgym.vector import make_vec

ray = pytest.importorskip("ray")
pytestmark = pytest.mark.slow


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
