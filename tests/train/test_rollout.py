
import gymnasium as gym
import pytest
import torch

from agentgym.agents import HFPolicy, SamplingConfig
from agentgym.train.config.rollout import RolloutConfig
from agentgym.train.rollout.chat import ChatEncoder
from agentgym.train.rollout.envs import make_env_batch
from agentgym.train.rollout.episodes import collect_episodes

ENV_KWARGS = {"question_kinds": ["single_hop"], "max_turns": 2}


def play(tiny, backend, seeds=(11, 12)):
    model, tok = tiny
    torch.manual_seed(0)
    envs = make_env_batch("ToolQA-v0", 2, 3, backend, ENV_KWARGS)
    try:
        policy = HFPolicy(model, tok, SamplingConfig(max_new_tokens=10))
        episodes, stats = collect_episodes(envs, policy, ChatEncoder(tok), list(seeds), RolloutConfig(), None,
                                           {"split": "train"})
    finally:
        envs.close()
    return episodes, stats


def test_groups_share_a_task_and_make_vec_matches_plain_envs(tiny):
    eps_vec, stats = play(tiny, "sync")
    assert [e.group for e in eps_vec] == [0, 0, 0, 1, 1, 1]
    assert len({e.task_id for e in eps_vec[:3]}) == 1 and len({e.task_id for e in eps_vec[3:]}) == 1
    assert eps_vec[0].task_id != eps_vec[3].task_id
    # each episode, replayed on a plain gym.make env from its group's seed, is the same episode
    for ep in eps_vec:
        env = gym.make("ToolQA-v0", **ENV_KWARGS)
        obs, info = env.reset(seed=ep.seed, options={"split": "train"})
        replay = [env.step(action) for action in ep.actions]
        env.close()
        assert (info["task_id"], [obs] + [r[0] for r in replay]) == (ep.task_id, ep.observations)
        assert [r[1] for r in replay] == ep.rewards and replay[-1][4]["episode_terms"] == ep.episode_terms
    assert all(e.done and len(e.turns) == 2 for e in eps_vec)
    assert stats["time/generate"] > 0


def test_max_prompt_tokens_cuts_an_episode(tiny):
    model, tok = tiny
    envs = make_env_batch("ToolQA-v0", 1, 2, "sync", ENV_KWARGS)
    policy = HFPolicy(model, tok, SamplingConfig(max_new_tokens=8))
    episodes, _ = collect_episodes(envs, policy, ChatEncoder(tok), [0], RolloutConfig(max_prompt_tokens=10))
    assert all(e.cut_by_length and e.truncated and not e.turns for e in episodes)


def test_bad_layout_is_a_clear_error():
    with pytest.raises(ValueError, match="layout"):
        RolloutConfig(layout="interleaved")


@pytest.mark.parametrize("backend", ["sync", "process"])
def test_only_requested_groups_are_reset_and_only_named_envs_stepped(backend):
    envs = make_env_batch("ToolQA-v0", 3, 2, backend, ENV_KWARGS)
    try:
        starts = envs.reset_groups([5], {"split": "train"}, [{}])
        assert len(starts) == 2 and starts[0][1]["task_id"] == starts[1][1]["task_id"]
        envs.step_some({0: "not an action"})
        # env 1 (same group, ended by the collector) and the groups never asked for got nothing
        assert envs.vec.get_attr("_turn") == (1, 0, 0, 0, 0, 0)
    finally:
        envs.close()


def test_group_requests_pick_tasks_by_id_and_record_where_they_came_from(tiny):
    from agentgym.train.rollout.episodes import GroupRequest

    model, tok = tiny
    envs = make_env_batch("ToolQA-v0", 2, 2, "sync", ENV_KWARGS)
    task_ids = envs.vec.call("task_ids", "train")[0][:2]
    policy = HFPolicy(model, tok, SamplingConfig(max_new_tokens=6))
    requests = [GroupRequest(7, {"task_id": task_ids[1]}, "resample")]
    episodes, stats = collect_episodes(envs, policy, ChatEncoder(tok), requests, RolloutConfig(max_turns=1),
                                       None, {"split": "train"}, system_prompt_hook=lambda p: p + " [hooked]")
    assert [ep.task_id for ep in episodes] == [task_ids[1]] * 2
    assert all(ep.seed == 7 and ep.tag == "resample" and ep.reset_options == {"split": "train", "task_id": task_ids[1]}
               for ep in episodes)
    assert all(ep.system_prompt.endswith(" [hooked]") and len(ep.turns) == 1 for ep in episodes)
    assert all(len(ep.turn_spans) == 1 for ep in episodes)
    envs.close()


class Runaway:
    """A policy (chat histories in) whose every reply is 10 MB of text; records each prompt's size."""

    def __init__(self):
        self.prompt_chars = []

    def generate(self, prompts, sampling=None):
        from agentgym.agents.base import Completion

        self.prompt_chars += [sum(len(m["content"]) for m in p) for p in prompts]
        return [Completion("<answer>" + "x" * 10_000_000) for _ in prompts]


def test_a_runaway_reply_is_cut_in_the_history_not_sent_again_whole():
    from agentgym.prompts import MAX_ACTION_CHARS

    envs = make_env_batch("ToolQA-v0", 1, 1, "sync", {"question_kinds": ["single_hop"], "max_turns": 10})
    policy = Runaway()
    try:
        (ep,), _ = collect_episodes(envs, policy, None, [3], RolloutConfig(layout="window", window=None))
    finally:
        envs.close()
    assert len(ep.turns) == 10 and len(policy.prompt_chars) == 10
    # the tenth prompt holds nine past replies of 10 MB: cut, it stays near 9 x 100,000 characters
    assert max(policy.prompt_chars) < 10 * MAX_ACTION_CHARS
    assert all(len(a) <= MAX_ACTION_CHARS and "characters cut]" in a for a in ep.actions)
    assert all(len(t.completion.text) == 10_000_008 for t in ep.turns)  # the sample itself is whole
