"""The vector interface on the registered envs (skipped while an env or its engine is missing)."""

import importlib.util
import os
import signal

import gymnasium as gym
import pytest
from processes import java_children, wait_gone

import agentgym
from agentgym.vector import ProcessOptions, make_vec


def _available(env_id):
    module = gym.spec(env_id).entry_point.split(":")[0]
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


def _needs(env_id):
    return pytest.mark.skipif(not _available(env_id), reason=f"{env_id} is not in the tree yet")


def _expert_rollout(vec, seed=0, steps=3):
    obs, infos = vec.reset(seed=seed)
    out = [obs, tuple(infos["group_key"])]
    for _ in range(steps):
        actions = [a or "<answer>unknown</answer>" for a in infos.get("expert_action", [None] * vec.num_envs)]
        obs, rewards, terminated, truncated, infos = vec.step(actions)
        out.append((obs, rewards.round(6).tolist(), terminated.tolist(), truncated.tolist()))
        if "expert_action" not in infos:
            break
    return out


@_needs("ToolQA-v0")
def test_toolqa_groups_and_backends_agree():
    sync = make_vec("ToolQA-v0", 4, group_size=2, expert=True)
    expected = _expert_rollout(sync)
    sync.close()
    obs, keys = expected[0], expected[1]
    assert obs[0] == obs[1] and keys[0] == keys[1] and keys[0] != keys[2]
    # the options object, and the keyword spelling of the same options
    for backend, keywords in ((ProcessOptions(envs_per_worker=2, step_timeout=60), {}),
                              ("process", {"envs_per_worker": 2, "step_timeout": 60})):
        proc = make_vec("ToolQA-v0", 4, group_size=2, backend=backend, expert=True, **keywords)
        try:
            assert proc.backend_options == ProcessOptions(envs_per_worker=2, step_timeout=60)
            assert _expert_rollout(proc) == expected
        finally:
            proc.close()


@_needs("ToolQA-v0")
def test_gym_make_vec_on_toolqa_and_prs_stage_for_the_batch():
    vec = gym.make_vec("ToolQA-v0", num_envs=2, group_size=2)
    assert isinstance(vec, agentgym.vector.AgentVectorEnv)
    vec.call("set_prs_stage", 0)
    assert vec.get_attr("prs_stage") == (0, 0)
    obs, infos = vec.reset(seed=1)
    assert obs[0] == obs[1] and infos["group_key"][0] == infos["group_key"][1]
    vec.close()


@pytest.mark.engine
@pytest.mark.multiproc
@_needs("ALFWorld-v0")
def test_alfworld_group_and_a_killed_worker():
    vec = make_vec("ALFWorld-v0", 4, group_size=2, backend="process")
    obs, infos = vec.reset(seed=0)
    assert obs[0] == obs[1] and infos["group_key"][0] == infos["group_key"][1]
    actions = [infos["admissible_actions"][i][0] for i in range(4)]
    vec.step(actions)
    victim = vec.worker_pids()[3]
    os.kill(victim, signal.SIGKILL)
    obs2, _, _, truncated, infos = vec.step(actions)
    assert truncated.tolist() == [False, False, False, True] and "died" in infos["error"][3]
    obs3, infos = vec.reset(seed=0)
    assert obs3 == obs and vec.worker_pids()[3] != victim
    vec.close()


@pytest.mark.engine
@pytest.mark.multiproc
@_needs("ScienceWorld-v0")
def test_scienceworld_jvms_are_gone_after_a_kill_and_after_close():
    vec = make_vec("ScienceWorld-v0", 2, group_size=2, backend="process")
    obs, infos = vec.reset(seed=0)
    assert obs[0] == obs[1]
    jvms = java_children()
    assert len(jvms) == 2
    os.kill(vec.worker_pids()[0], signal.SIGKILL)
    _, _, _, truncated, _ = vec.step(["look around"] * 2)
    assert truncated.tolist() == [True, False]
    vec.reset(seed=0)
    jvms |= java_children()
    assert len(jvms) == 3
    vec.close()
    assert wait_gone(jvms, within=10)
