"""Evaluation levels L0/L1/L2 on real generated ALFWorld games and the real ScienceWorld JVM."""

import os
from collections import Counter

import gymnasium as gym
import pytest

import agentgym  # noqa: F401
from agentgym.envs.alfworld.levels import HELD_OUT_TYPES, SEEN_TYPES
from agentgym.envs.scienceworld.levels import HELD_OUT_TASKS
from agentgym.envs.scienceworld.tasks import TASK_NAMES, split_variations


@pytest.fixture(scope="module")
def alf_root(tmp_path_factory):
    pytest.importorskip("alfworld")
    from agentgym.envs.alfworld.generate import generate

    out = str(tmp_path_factory.mktemp("alf_levels"))
    generate(out, 24, seed=5, split="train")
    generate(out, 12, seed=5, split="valid_seen")
    generate(out, 12, seed=5, split="valid_unseen")
    return out


def _games(root, split):
    env = gym.make("ALFWorld-v0", data_path=root, split=split)
    games = list(env.unwrapped.games)
    env.close()
    return games


def test_alfworld_train_never_holds_an_l2_type_and_train_all_holds_all(alf_root):
    train, train_all = _games(alf_root, "train"), _games(alf_root, "train_all")
    assert {g.task_type for g in train} == set(SEEN_TYPES)
    assert {g.task_type for g in train_all} == set(SEEN_TYPES) | set(HELD_OUT_TYPES)
    assert len(train) == sum(g.task_type in SEEN_TYPES for g in train_all)


def test_alfworld_levels_pick_the_documented_games(alf_root):
    train = {g.task_id for g in _games(alf_root, "train")}
    l0, l1, l2 = (_games(alf_root, level) for level in ("L0", "L1", "L2"))
    assert l0 and {g.task_id for g in l0} <= train  # seen tasks: games training plays
    assert Counter(g.task_type for g in l0) == Counter({t: 1 for t in SEEN_TYPES})  # 4 per type, every 10th
    valid = {f"{s}/{g.task_id}": g.task_type for s in ("valid_seen", "valid_unseen") for g in _games(alf_root, s)}
    assert {g.task_id for g in l1} == {k for k, t in valid.items() if t in SEEN_TYPES}
    assert {g.task_id for g in l2} == {k for k, t in valid.items() if t in HELD_OUT_TYPES}
    assert not train & {g.task_id.split("/", 1)[1] for g in l1 + l2}


def test_alfworld_level_by_reset_option_and_env_argument_plays_real_games(alf_root):
    env = gym.make("ALFWorld-v0", data_path=alf_root, split="L2", expert=True)
    seen = set()
    for seed in range(4):
        obs, info = env.reset(seed=seed)
        assert info["split"] == "L2" and info["task_type"] in HELD_OUT_TYPES
        assert info["group_key"] == f"ALFWorld-v0/L2/{info['task_id']}" and "Your task is to" in obs
        seen.add(info["task_id"])
    assert len(seen) > 1
    # one episode of a held-out type, solved by the planner expert on the real engine
    obs, info = env.reset(seed=0)
    for _ in range(50):
        obs, _, terminated, truncated, info = env.step(info["expert_action"] or "look")
        if terminated or truncated:
            break
    assert info["success"]
    _, info = env.reset(seed=0, options={"split": "L1"})
    assert info["split"] == "L1" and info["task_type"] in SEEN_TYPES
    with pytest.raises(ValueError, match="unknown split"):
        env.reset(options={"split": "L3"})
    env.close()


def test_alfworld_levels_on_an_official_layout_tree(tmp_path, alf_root):
    """An official tree: a movable-receptacle trial is skipped, and a missing split reads as empty."""
    from agentgym.envs.alfworld.generate import generate

    root = str(tmp_path / "official")
    generate(root, 6, seed=9, split="valid_seen")
    split_dir = os.path.join(root, "json_2.1.1", "valid_seen")
    some = sorted(os.listdir(split_dir))[0]
    os.rename(os.path.join(split_dir, some), os.path.join(split_dir, some.replace("-None-", "-Pan-") + "movable"))
    types = {g.task_type for g in _games(root, "valid_seen")}
    assert len(_games(root, "valid_seen")) == 5
    # valid_unseen is missing: a level reads the splits that are there
    for level, want in (("L1", SEEN_TYPES), ("L2", HELD_OUT_TYPES)):
        if types & set(want):
            assert {g.task_type for g in _games(root, level)} <= set(want)


def test_scienceworld_held_out_tasks_are_the_last_of_each_topic():
    assert len(HELD_OUT_TASKS) == 10
    assert HELD_OUT_TASKS[0] == "change-the-state-of-matter-of" and "find-animal" in HELD_OUT_TASKS
    assert split_variations("boil", "L0") == split_variations("boil", "train")
    assert split_variations("boil", "L1") == split_variations("boil", "test") == split_variations("boil", "L2")


@pytest.mark.engine
def test_scienceworld_train_draws_no_l2_task_and_l2_draws_only_them():
    pytest.importorskip("scienceworld")
    env = gym.make("ScienceWorld-v0", split="train", admissible_actions=False)
    try:
        tasks = set()
        for seed in range(12):
            _, info = env.reset(seed=seed)
            assert info["task"] not in HELD_OUT_TASKS
            assert info["variation"] in split_variations(info["task"], "train")
            tasks.add(info["task"])
        assert len(tasks) > 3
        for seed in range(4):
            _, info = env.reset(seed=seed, options={"split": "L2"})
            assert info["task"] in HELD_OUT_TASKS and info["split"] == "L2"
            assert info["variation"] in split_variations(info["task"], "test")
        _, info = env.reset(seed=0, options={"split": "L1"})
        assert info["task"] not in HELD_OUT_TASKS and info["variation"] in split_variations(info["task"], "test")
    finally:
        env.close()
    # a task named explicitly is played as asked; a level it is not in is refused up front
    env = gym.make("ScienceWorld-FindAnimal-v0", admissible_actions=False)
    assert env.unwrapped.tasks == ("find-animal",)
    env.close()
    with pytest.raises(ValueError, match="belongs to split"):
        gym.make("ScienceWorld-Boil-v0", split="L2")
    env = gym.make("ScienceWorld-v0", split="L2", admissible_actions=False)
    assert set(env.unwrapped.tasks) == set(TASK_NAMES)
    env.close()


def test_task_ids_of_a_training_split_hold_no_l2_task():
    """Trainers list tasks with task_ids(split): the held-out types must not be among them."""
    import gymnasium as gym

    from agentgym.envs.scienceworld.levels import HELD_OUT_TASKS

    sw = gym.make("ScienceWorld-v0").unwrapped
    assert sw.task_ids("train") and not any(t.split("/")[0] in HELD_OUT_TASKS for t in sw.task_ids("train"))
    assert {t.split("/")[0] for t in sw.task_ids("L2")} == set(HELD_OUT_TASKS)
    alf = gym.make("ALFWorld-v0").unwrapped
    held = ("pick_cool_then_place_in_recep", "pick_two_obj_and_place")
    assert alf.task_ids("train") and not any(kind in t for t in alf.task_ids("train") for kind in held)
    assert all(any(kind in t for kind in held) for t in alf.task_ids("L2"))
