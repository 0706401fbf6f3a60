"""Groups start the same task; seeds map to envs as documented; reproducible across instances."""

import numpy as np
import pytest
from fixture_env import CountingEnv

from agentgym.vector import AgentVectorEnv, make_vec


def _vec(num_envs=6, group_size=2, **kw):
    return AgentVectorEnv(CountingEnv, num_envs, group_size=group_size, **kw)


def test_envs_in_a_group_start_the_same_task_and_share_group_key():
    vec = _vec(8, 4)
    for seed in (0, 1, None):
        obs, infos = vec.reset(seed=seed)
        for g in range(2):
            members = range(g * 4, (g + 1) * 4)
            assert len({obs[i] for i in members}) == 1
            assert len({infos["group_key"][i] for i in members}) == 1
    vec.close()


def test_groups_get_different_seeds():
    vec = _vec(20, 2)
    obs, _ = vec.reset(seed=3)
    assert len({obs[i] for i in range(0, 20, 2)}) > 1  # 10 groups, 10 distinct seeds
    vec.close()


def test_seed_s_starts_group_g_with_seed_s_plus_g():
    vec = _vec(6, 3)
    obs, _ = vec.reset(seed=10)
    for g, seed in enumerate((10, 11)):
        single = CountingEnv()
        expected, _ = single.reset(seed=seed)
        assert obs[g * 3] == expected
    vec.close()


def test_later_episodes_follow_the_group_seed_stream_reproducibly():
    a, b = _vec(), _vec()
    seq_a = [a.reset(seed=5)[0]] + [a.reset()[0] for _ in range(3)]
    seq_b = [b.reset(seed=5)[0]] + [b.reset()[0] for _ in range(3)]
    assert seq_a == seq_b
    assert len(set(seq_a)) > 1  # unseeded resets move on to new tasks
    a.close(), b.close()


def test_seed_lists_per_group_or_per_env():
    vec = _vec(4, 2)
    by_group, _ = vec.reset(seed=[7, 9])
    by_env, _ = vec.reset(seed=[7, 7, 9, 9])
    assert by_group == by_env
    with pytest.raises(ValueError, match="equal within each group"):
        vec.reset(seed=[1, 2, 3, 4])
    with pytest.raises(ValueError, match="one per group"):
        vec.reset(seed=[1, 2, 3])
    vec.close()


def test_group_options_pick_a_task_per_group():
    vec = _vec(4, 2)
    _, infos = vec.reset(seed=0, options={"group_options": [{"task_id": "count-2"}, {"task_id": "count-4"}]})
    assert list(infos["task_id"]) == ["count-2", "count-2", "count-4", "count-4"]
    vec.close()


def test_options_reach_every_env():
    vec = _vec(4, 2)
    obs, _ = vec.reset(seed=0, options={"prs_stage": 1})
    assert all("Stage: 1." in o for o in obs)
    vec.close()


def test_bad_group_settings_raise_precise_errors(fixture_id):
    with pytest.raises(ValueError, match="multiple of group_size"):
        make_vec(fixture_id, 5, group_size=2)
    with pytest.raises(ValueError, match="backend must be one of"):
        make_vec(fixture_id, 2, backend="threads")
    with pytest.raises(ValueError, match="envs_per_worker"):
        make_vec(fixture_id, 2, envs_per_worker=2)


def test_make_vec_returns_a_gymnasium_vector_env_with_text_batches(fixture_id):
    import gymnasium as gym

    vec = make_vec(fixture_id, 4, group_size=2)
    assert isinstance(vec, gym.vector.VectorEnv)
    obs, infos = vec.reset(seed=0)
    assert isinstance(obs, tuple) and all(isinstance(o, str) for o in obs)
    assert obs in vec.observation_space
    obs, rewards, terminated, truncated, infos = vec.step(["inc"] * 4)
    assert rewards.dtype == np.float64 and rewards.shape == (4,)
    assert terminated.dtype == np.bool_ and truncated.dtype == np.bool_
    assert infos["_reward_terms"].all() and infos["reward_terms"]["format"].tolist() == [1.0] * 4
    assert vec.metadata["autoreset_mode"] == gym.vector.AutoresetMode.DISABLED
    vec.close()
