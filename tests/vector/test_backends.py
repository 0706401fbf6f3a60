"""The three backends agree: same seeds, same observations; call/get_attr/set_attr reach every env."""

import gymnasium as gym
import pytest

from agentgym.vector import make_vec

ACTIONS = ["inc", "noop", "inc", "bogus", "inc", "inc"]


def _rollout(vec, seed=0):
    """Observations of two full resets and a few steps."""
    out = []
    obs, _ = vec.reset(seed=seed)
    out.append(obs)
    for _ in range(3):
        obs, rewards, terminated, truncated, _ = vec.step(ACTIONS)
        out.append((obs, rewards.tolist(), terminated.tolist(), truncated.tolist()))
    out.append(vec.reset()[0])
    vec.close()
    return out


@pytest.mark.parametrize("backend,extra", [("process", {}), ("process", {"envs_per_worker": 2}),
                                           ("process", {"mp_context": "spawn"})])
def test_process_backend_matches_sync(fixture_id, backend, extra):
    expected = _rollout(make_vec(fixture_id, 6, group_size=2))
    assert _rollout(make_vec(fixture_id, 6, group_size=2, backend=backend, **extra)) == expected


def test_group_size_one_matches_gymnasium_async_vector_env(fixture_id):
    ours = make_vec(fixture_id, 3, backend="process")
    theirs = gym.vector.AsyncVectorEnv([lambda: gym.make(fixture_id)] * 3, shared_memory=False)
    assert ours.reset(seed=4)[0] == theirs.reset(seed=4)[0]
    ours.close(), theirs.close()


@pytest.mark.parametrize("backend", ["sync", "process"])
def test_call_get_attr_set_attr_reach_every_env(fixture_id, backend):
    vec = make_vec(fixture_id, 4, group_size=2, backend=backend, envs_per_worker=2 if backend != "sync" else 1)
    assert vec.call("set_prs_stage", 1) == (None,) * 4
    assert vec.get_attr("prs_stage") == (1,) * 4
    obs, _ = vec.reset(seed=0)
    assert all("Stage: 1." in o for o in obs)
    vec.set_attr("step_delay", [0.0, 0.01, 0.02, 0.03])
    assert vec.get_attr("step_delay") == (0.0, 0.01, 0.02, 0.03)
    assert vec.call("_admissible_actions") == (["inc", "noop"],) * 4
    with pytest.raises(AttributeError):
        vec.call("no_such_method")
    vec.close()


def test_steps_run_in_parallel_across_workers(fixture_id):
    import time

    vec = make_vec(fixture_id, 4, backend="process", step_delay=0.5)
    vec.reset(seed=0)
    start = time.monotonic()
    vec.step(["noop"] * 4)
    assert time.monotonic() - start < 0.5 * 4 * 0.6  # sequential would take 2 s
    vec.close()


def test_gym_make_vec_builds_our_vector_env(fixture_id):
    from agentgym.vector.make import vector_entry_point

    env_id = "agentgym-test/CountingVec-v0"
    if env_id not in gym.registry:
        gym.register(env_id, entry_point="fixture_env:CountingEnv", vector_entry_point=vector_entry_point(env_id))
    vec = gym.make_vec(env_id, num_envs=4, group_size=2, backend="process")
    assert type(vec).__name__ == "AgentVectorEnv" and vec.backend_name == "process" and vec.group_size == 2
    obs, infos = vec.reset(seed=0)
    assert obs[0] == obs[1]
    vec.close()


def test_agentgym_ids_register_a_vector_entry_point():
    import agentgym  # noqa: F401

    for env_id in ("ToolQA-v0", "ALFWorld-v0", "ScienceWorld-v0"):
        assert gym.spec(env_id).vector_entry_point == f"agentgym.vector.make:{env_id}"


def test_ray_backend_without_ray_names_the_extra(fixture_id, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(gym.error.DependencyNotInstalled, match=r"agentgym\[ray\]"):
        make_vec(fixture_id, 2, backend="ray")
