"""The trainer's collector: group ids unique within a step, rounds past the env batch's size,
env faults left out of training and counted, and every call's cost added up per tag."""

import os
import sys

import gymnasium as gym
import pytest

from agentgym.agents.base import Completion
from agentgym.train.config.rollout import RolloutConfig
from agentgym.train.rollout.collector import Collector
from agentgym.train.rollout.envs import EnvBatch
from agentgym.train.rollout.episodes import GroupRequest
from agentgym.vector import make_vec

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "vector"))
from fixture_env import CountingEnv  # noqa: E402,F401

FIXTURE_ID = "agentgym-test/Counting-v0"
if FIXTURE_ID not in gym.registry:
    gym.register(FIXTURE_ID, entry_point="fixture_env:CountingEnv")


class Scripted:
    """A policy that answers from a table by (call number, prompt index); default ``inc``."""

    def __init__(self, faults=()):
        self.faults, self.calls = set(faults), 0

    def generate(self, prompts, sampling=None):
        out = []
        for k, _ in enumerate(prompts):
            out.append(Completion("!raise" if (self.calls, k) in self.faults else "inc", [1, 2]))
        self.calls += 1
        return out


def collector(policy, groups=2, size=3, backend="sync"):
    vec = make_vec(FIXTURE_ID, num_envs=groups * size, group_size=size, backend=backend)
    return Collector(EnvBatch(vec, groups, size), policy, None, RolloutConfig(layout="window"), None)


@pytest.mark.parametrize("backend", ["sync", "process"])
def test_a_faulted_episode_is_left_out_and_a_group_too_small_is_dropped(backend):
    # first turn: env 0 of group 0 faults (group keeps 2 episodes); envs 3 and 4 of group 1 fault (1 left)
    col = collector(Scripted(faults={(0, 0), (0, 3), (0, 4)}), backend=backend)
    try:
        episodes = col([GroupRequest(1, {"task_id": "count-2"}), GroupRequest(2, {"task_id": "count-3"})])
    finally:
        col.envs.close()
    assert [ep.group for ep in episodes] == [0, 0]
    assert all(ep.error is None and ep.success for ep in episodes)
    stats = col.stats()
    assert stats["episodes/faulted"] == 3 and stats["groups/dropped_for_faults"] == 1


def test_with_groups_of_one_episode_a_fault_drops_only_its_own_group():
    # PPO plays one episode per task: a fault elsewhere must not drop the groups that played fine
    col = collector(Scripted(faults={(0, 1)}), groups=3, size=1)
    try:
        episodes = col([GroupRequest(s, {"task_id": "count-2"}) for s in range(3)])
    finally:
        col.envs.close()
    assert [ep.group for ep in episodes] == [0, 2]
    stats = col.stats()
    assert stats["episodes/faulted"] == 1 and stats["groups/dropped_for_faults"] == 1


def test_requests_past_the_batch_size_play_in_rounds_with_step_unique_group_ids():
    col = collector(Scripted())
    try:
        first = col([GroupRequest(s, {"task_id": "count-2"}) for s in range(3)])
        more = col([GroupRequest(9, {"task_id": "count-4"}, "resample")])
    finally:
        col.envs.close()
    assert sorted({ep.group for ep in first}) == [0, 1, 2] and {ep.group for ep in more} == {3}
    stats = col.stats()
    assert stats["rollout/groups_batch"] == 3 and stats["rollout/groups_resample"] == 1
    assert stats["tokens/generated"] == stats["tokens/generated_batch"] + stats["tokens/generated_resample"]
    assert stats["tokens/generated_resample"] == 3 * 4 * 2  # 3 episodes, 4 turns, 2 ids each
    assert stats["time/rollout_extra"] > 0
    col.start_step()
    assert col.stats()["tokens/generated"] == 0 and col.next_group == 0
