"""Episodes end at different steps: finished envs wait, reset masks, Gymnasium's autoreset modes."""

import numpy as np
from fixture_env import CountingEnv
from gymnasium.vector import AutoresetMode

from agentgym.vector import AgentVectorEnv

TASKS = [{"task_id": "count-2"}, {"task_id": "count-4"}]


def _vec(**kw):
    vec = AgentVectorEnv(CountingEnv, 4, group_size=2, **kw)
    return vec


def test_finished_envs_keep_their_final_observation_and_are_not_stepped():
    vec = _vec()
    vec.reset(seed=0, options={"group_options": TASKS})
    vec.step(["inc"] * 4)
    obs, rewards, terminated, truncated, infos = vec.step(["inc"] * 4)
    assert terminated.tolist() == [True, True, False, False]
    final = obs[:2]
    turns_before = vec.get_attr("_turn")
    obs, rewards, terminated, truncated, infos = vec.step(["inc"] * 4)
    assert obs[:2] == final
    assert rewards[:2].tolist() == [0.0, 0.0]
    assert terminated.tolist() == [True, True, False, False]
    assert infos["_reward_terms"].tolist() == [False, False, True, True]
    turns_after = vec.get_attr("_turn")
    assert turns_after[:2] == turns_before[:2]  # no engine call for finished envs
    assert turns_after[2] == turns_before[2] + 1
    vec.close()


def test_reset_mask_resets_only_the_selected_envs():
    vec = _vec()
    vec.reset(seed=0, options={"group_options": TASKS})
    vec.step(["inc"] * 4)
    vec.step(["inc"] * 4)
    running = vec.step(["inc"] * 4)[0][2:]
    mask = np.array([True, True, False, False])
    obs, infos = vec.reset(options={"reset_mask": mask})
    assert obs[2:] == running
    assert obs[0] == obs[1] and obs[0].startswith("Count to")
    assert infos["_task_id"].tolist() == mask.tolist()
    assert not vec.done[:2].any()
    _, _, terminated, _, _ = vec.step(["inc"] * 4)
    assert terminated[2:].tolist() == [True, True]
    vec.close()


def test_first_episode_ending_in_a_batch_does_not_disturb_the_others():
    vec = _vec()
    vec.reset(seed=0, options={"group_options": TASKS})
    lengths = np.zeros(4, dtype=int)
    for _ in range(6):
        _, _, terminated, truncated, _ = vec.step(["inc"] * 4)
        lengths += ~(terminated | truncated)
    assert vec.done.all()
    assert lengths.tolist() == [1, 1, 3, 3]
    vec.close()


def test_next_step_autoreset_resets_on_the_following_step():
    vec = _vec(autoreset_mode=AutoresetMode.NEXT_STEP)
    vec.reset(seed=0, options={"group_options": TASKS})
    vec.step(["inc"] * 4)
    obs, _, terminated, _, _ = vec.step(["inc"] * 4)
    assert terminated[:2].all()
    obs, rewards, terminated, truncated, infos = vec.step(["inc"] * 4)
    assert obs[0].startswith("Count to") and obs[0] == obs[1]
    assert rewards[:2].tolist() == [0.0, 0.0] and not terminated[:2].any()
    assert infos["_instruction"].tolist() == [True, True, False, False]
    vec.close()


def test_same_step_autoreset_returns_the_new_observation_and_final_info():
    vec = _vec(autoreset_mode="SameStep")
    vec.reset(seed=0, options={"group_options": TASKS})
    vec.step(["inc"] * 4)
    obs, rewards, terminated, _, infos = vec.step(["inc"] * 4)
    assert terminated.tolist() == [True, True, False, False]
    assert obs[0].startswith("Count to")
    assert infos["_final_obs"].tolist() == [True, True, False, False]
    assert infos["final_obs"][0].startswith("Count: 2.")
    assert infos["final_info"]["success"][0]
    assert "success" not in infos  # the step info lives under final_info only
    assert infos["_instruction"].tolist() == [True, True, False, False]
    assert not vec.done.any()
    vec.close()


def test_autoreset_keeps_groups_on_the_same_task_per_episode():
    vec = AgentVectorEnv(CountingEnv, 4, group_size=2, autoreset_mode=AutoresetMode.NEXT_STEP)
    vec.reset(seed=1)
    episodes = {i: [] for i in range(4)}
    actions = ["inc", "noop", "inc", "inc"]  # env 1 lags behind env 0 in the same group
    for _ in range(40):
        _, _, _, _, infos = vec.step(actions)
        for i in range(4):
            if infos.get("_instruction", np.zeros(4, bool))[i]:
                episodes[i].append(infos["task_id"][i])
    k = min(len(episodes[0]), len(episodes[1]))
    assert episodes[0][:k] == episodes[1][:k]
    vec.close()
