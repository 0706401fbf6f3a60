"""env.task_refs(split): every task of a split, each with its type and the reset options that start
exactly it, on each env family's real engine."""

import gymnasium as gym
import pytest

import agentgym  # noqa: F401
from agentgym.envs.alfworld.generate import generate
from agentgym.envs.alfworld.tasks import TASK_TYPES
from agentgym.envs.scienceworld.tasks import split_variations


def starts_its_task(env, ref):
    _, info = env.reset(seed=0, options=ref.options)
    return info["task_id"] == ref.task_id


def test_toolqa_lists_every_question_of_the_split_typed_by_its_kind():
    env = gym.make("ToolQA-v0", question_kinds=["single_hop", "bridge"])
    try:
        refs = env.unwrapped.task_refs("test")
        assert [r.task_id for r in refs] == env.unwrapped.task_ids("test")
        assert {r.task_type for r in refs} == {"single_hop", "bridge"}
        assert all(r.options == {"task_id": r.task_id, "split": "test"} for r in refs)
        assert all(starts_its_task(env, r) for r in (refs[0], refs[-1]))
        assert [r.task_id for r in env.unwrapped.task_refs()] == env.unwrapped.task_ids("train")
    finally:
        env.close()


def test_alfworld_lists_every_game_of_the_split_with_its_canonical_split(tmp_path):
    generate(str(tmp_path), 6, seed=3, split="train")
    generate(str(tmp_path), 4, seed=3, split="valid_unseen")
    env = gym.make("ALFWorld-v0", data_path=str(tmp_path))
    try:
        refs = env.unwrapped.task_refs("test")  # an alias of valid_unseen
        games = env.unwrapped.games_in("valid_unseen")
        assert [(r.task_id, r.task_type) for r in refs] == [(g.task_id, g.task_type) for g in games]
        assert all(r.options == {"task_id": r.task_id, "split": "valid_unseen"} for r in refs)
        assert {r.task_type for r in refs} <= set(TASK_TYPES)
        assert starts_its_task(env, refs[-1])
        assert [r.task_id for r in env.unwrapped.task_refs()] == env.unwrapped.task_ids()
    finally:
        env.close()


@pytest.mark.engine
def test_scienceworld_lists_every_variation_of_the_split_without_a_jvm_and_each_starts():
    pytest.importorskip("scienceworld")
    env = gym.make("ScienceWorld-v0", task=["boil", "melt"])
    try:
        refs = env.unwrapped.task_refs("dev")
        assert env.unwrapped._engine is None  # listed from the task tables
        expected = [f"{t}/{v}" for t in ("boil", "melt") for v in split_variations(t, "dev")]
        assert [r.task_id for r in refs] == expected == env.unwrapped.task_ids("dev")
        assert [r.task_type for r in refs] == [i.split("/")[0] for i in expected]
        assert all(r.options == {"task_id": r.task_id, "split": "dev"} for r in refs)
        assert starts_its_task(env, refs[-1])
    finally:
        env.close()
