"""The overlapped collector (``rollout_mode="overlapped"``): the same episodes as lockstep under
greedy decoding, on every env batch backend, and an env fault in one episode holds up no other."""

import os
import sys
import time

import gymnasium as gym
import pytest
import torch

from agentgym.agents import HFPolicy, SamplingConfig
from agentgym.agents.base import Completion
from agentgym.train.config.rollout import RolloutConfig
from agentgym.train.rollout.chat import ChatEncoder
from agentgym.train.rollout.collector import Collector
from agentgym.train.rollout.envs import EnvBatch, make_env_batch
from agentgym.train.rollout.episodes import GroupRequest, collect_episodes
from agentgym.vector import make_vec

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "vector"))
from fixture_env import CountingEnv  # noqa: E402,F401

FIXTURE_ID = "agentgym-test/Counting-v0"
if FIXTURE_ID not in gym.registry:
    gym.register(FIXTURE_ID, entry_point="fixture_env:CountingEnv")
ENV_KWARGS = {"question_kinds": ["single_hop"], "max_turns": 4}
SEEDS = [11, 12, 13]


@pytest.fixture(scope="module")
def varied_tiny(tiny_path):
    """The tiny model with its weights shaken (fixed seed), so that greedy completions depend on the
    prompt: the random-init model answers every prompt alike, which would hide a mix-up."""
    from agentgym.agents import load_model_and_tokenizer

    model, tok = load_model_and_tokenizer(tiny_path)
    g = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() > 1:
                p.add_(torch.randn(p.shape, generator=g) * 0.3)
    return model, tok


def play(envs, model_tok, mode, layout="concat", max_prompt_tokens=10**6):
    model, tok = model_tok
    policy = HFPolicy(model, tok, SamplingConfig(max_new_tokens=12, temperature=0.0))
    cfg = RolloutConfig(layout=layout, rollout_mode=mode, max_prompt_tokens=max_prompt_tokens)
    return collect_episodes(envs, policy, ChatEncoder(tok), SEEDS, cfg, None, {"split": "train"})


def record(ep):
    """Everything an episode holds except logprobs (compared to float precision: batches differ)."""
    return (ep.group, ep.task_id, ep.seed, ep.actions, ep.observations, ep.rewards, ep.step_infos,
            ep.terminated, ep.truncated, ep.cut_by_length, ep.success, ep.error, ep.episode_terms,
            ep.concat_ids, ep.concat_mask, ep.turn_spans,
            [(t.prompt_ids, t.completion.token_ids, t.completion.text, t.completion.finish_reason) for t in ep.turns])


@pytest.mark.parametrize("backend,layout", [("sync", "window"), ("process", "concat")])
def test_overlapped_plays_the_same_episodes_as_lockstep(varied_tiny, backend, layout):
    envs = make_env_batch("ToolQA-v0", len(SEEDS), 2, backend, ENV_KWARGS)
    try:
        free, _ = play(envs, varied_tiny, "lockstep", layout)
        # a prompt limit that only the shortest group's third turn fits under: episodes end at
        # different turns, so the overlapped collector's batches are ragged
        third = sorted({len(ep.turns[2].prompt_ids) for ep in free})
        assert len(third) > 1
        lock, lock_stats = play(envs, varied_tiny, "lockstep", layout, third[0])
        over, over_stats = play(envs, varied_tiny, "overlapped", layout, third[0])
    finally:
        envs.close()
    # ragged: the groups cut at the limit stop after 2 turns, the others play on (3 or 4 turns:
    # a window prompt can shrink again on turn 4, so which depends on the greedy completions)
    lengths = sorted({len(ep.turns) for ep in lock})
    assert lengths[0] == 2 and len(lengths) > 1, lengths
    assert len({tuple(ep.actions) for ep in lock}) == len(SEEDS)  # each group plays its own way
    assert [record(ep) for ep in over] == [record(ep) for ep in lock]
    for a, b in zip(over, lock):
        for ta, tb in zip(a.turns, b.turns):
            assert ta.completion.logprobs == pytest.approx(tb.completion.logprobs, abs=1e-4)
    assert set(over_stats) == set(lock_stats) == {"time/rollout", "time/generate", "time/env"}
    assert over_stats["time/generate"] > 0 and over_stats["time/rollout"] >= over_stats["time/generate"]


class Scripted:
    """Answers ``inc``; the prompts at (call number, index) in ``faults`` get ``faults[...]``.
    Records when each call came and how many prompts it had (and appends ``("call", n)`` to
    ``events`` when given); each call takes ``delay`` seconds."""

    def __init__(self, faults=None, delay=0.0, events=None):
        self.faults, self.calls, self.delay, self.events = dict(faults or {}), [], delay, events

    def generate(self, prompts, sampling=None):
        n = len(self.calls)
        self.calls.append((time.monotonic(), len(prompts)))
        if self.events is not None:
            self.events.append(("call", n))
        time.sleep(self.delay)
        return [Completion(self.faults.get((n, k), "inc"), [1, 2]) for k in range(len(prompts))]


def fixture_collector(policy, mode, backend, step_timeout=300.0):
    vec = make_vec(FIXTURE_ID, num_envs=6, group_size=3, backend=backend, step_timeout=step_timeout)
    cfg = RolloutConfig(layout="window", rollout_mode=mode)
    return Collector(EnvBatch(vec, 2, 3), policy, None, cfg, None)


REQUESTS = [GroupRequest(1, {"task_id": "count-3"}), GroupRequest(2, {"task_id": "count-4"})]


def view(ep):
    return (ep.group, ep.actions, ep.observations, ep.rewards, ep.terminated, ep.truncated, ep.success)


@pytest.mark.parametrize("backend", ["sync", "process"])
def test_a_raising_env_is_a_fault_episode_in_both_modes_and_the_others_play_on(backend):
    # env 0 of group 0 and envs 3, 4 of group 1 raise on their first step
    played = {}
    for mode in ("lockstep", "overlapped"):
        col = fixture_collector(Scripted({(0, 0): "!raise", (0, 3): "!raise", (0, 4): "!raise"}), mode, backend)
        try:
            played[mode] = (col(REQUESTS), col.stats())
        finally:
            col.envs.close()
    (lock, lock_stats), (over, over_stats) = played["lockstep"], played["overlapped"]
    assert [view(ep) for ep in over] == [view(ep) for ep in lock]
    assert [ep.group for ep in over] == [0, 0] and all(ep.success and len(ep.turns) == 3 for ep in over)
    for key in ("episodes/faulted", "groups/dropped_for_faults", "episodes/played"):
        assert over_stats[key] == lock_stats[key]
    assert over_stats["episodes/faulted"] == 3


class RecordingBatch(EnvBatch):
    """Appends ``("result", env)`` to ``events`` for every step result it hands the collector."""

    def __init__(self, vec, num_groups, group_size, events):
        super().__init__(vec, num_groups, group_size)
        self.events = events

    def recv_some(self, min_results=1, timeout=None):
        results = super().recv_some(min_results, timeout)
        self.events.extend(("result", i) for i in sorted(results))
        return results


@pytest.mark.slow
def test_a_hung_env_holds_up_no_other_episode_when_overlapped():
    step_timeout = 4.0
    events = []  # policy calls and step results, in the order they happened
    policy = Scripted({(0, 0): "!hang"}, events=events)  # env 0's first step hangs until the step timeout kills it
    envs = RecordingBatch(make_vec(FIXTURE_ID, num_envs=6, group_size=3, backend="process",
                                   step_timeout=step_timeout), 2, 3, events)
    try:
        episodes, stats = collect_episodes(envs, policy, None, REQUESTS,
                                           RolloutConfig(layout="window", rollout_mode="overlapped"))
        assert not envs.pending
        events = list(events)  # this rollout's events; the one below appends to the recorder's list
        # the batch is still usable: a lockstep rollout on the same envs (env 0's worker restarted)
        again, _ = collect_episodes(envs, Scripted(), None, REQUESTS, RolloutConfig(layout="window"))
    finally:
        envs.close()
    hung, others = episodes[0], episodes[1:]
    assert hung.error and hung.truncated and len(hung.turns) == 1 and not hung.success
    assert [len(ep.turns) for ep in others] == [3, 3, 4, 4, 4] and all(ep.success and not ep.error for ep in others)
    # every other episode played all its turns before the hung step was given up on: the hung
    # env's result (its fault) is the last thing that happened, after the last policy call
    given_up = events.index(("result", 0))
    assert given_up == len(events) - 1 and given_up > events.index(("call", len(policy.calls) - 1))
    assert sum(1 for kind, _ in events if kind == "result") == 1 + sum(len(ep.turns) for ep in others)
    assert stats["time/rollout"] >= step_timeout
    assert all(ep.success and not ep.error for ep in again)


def test_a_policy_error_mid_rollout_leaves_no_step_in_flight():
    envs = EnvBatch(make_vec(FIXTURE_ID, num_envs=6, group_size=3, backend="process", step_timeout=3.0), 2, 3)

    class Failing(Scripted):
        def generate(self, prompts, sampling=None):
            if len(self.calls) == 1:  # the others' second turn, while env 0's hung step is in flight
                self.in_flight = envs.pending
                raise RuntimeError("out of memory")
            return super().generate(prompts, sampling)

    policy = Failing({(0, 0): "!hang"})
    cfg = RolloutConfig(layout="window", rollout_mode="overlapped", batch_wait=0)
    try:
        with pytest.raises(RuntimeError, match="out of memory"):
            collect_episodes(envs, policy, None, REQUESTS, cfg)
        assert 0 in policy.in_flight and not envs.pending
        episodes, _ = collect_episodes(envs, Scripted(), None, REQUESTS, cfg)  # resets as usual
    finally:
        envs.close()
    assert all(ep.success for ep in episodes)


def test_bad_rollout_mode_is_a_clear_error():
    with pytest.raises(ValueError, match="rollout_mode"):
        RolloutConfig(rollout_mode="async")
    with pytest.raises(ValueError, match="max_generate_batch"):
        RolloutConfig(rollout_mode="overlapped", max_generate_batch=0)
    with pytest.raises(ValueError, match="batch_wait"):
        RolloutConfig(rollout_mode="overlapped", batch_wait=-1.0)


def test_max_generate_batch_caps_each_policy_call():
    policy = Scripted()
    envs = EnvBatch(make_vec(FIXTURE_ID, num_envs=6, group_size=3, backend="sync"), 2, 3)
    try:
        episodes, _ = collect_episodes(envs, policy, None, REQUESTS,
                                       RolloutConfig(layout="window", rollout_mode="overlapped", max_generate_batch=4))
    finally:
        envs.close()
    assert max(n for _, n in policy.calls) == 4
    assert sum(n for _, n in policy.calls) == 3 * 3 + 3 * 4 and all(ep.success for ep in episodes)


def test_env_results_that_come_back_together_go_in_one_policy_call():
    # fast envs, a policy call of 0.2 s: waiting for the other envs costs less than another call
    policy = Scripted(delay=0.2)
    envs = EnvBatch(make_vec(FIXTURE_ID, num_envs=6, group_size=3, backend="process"), 2, 3)
    try:
        episodes, _ = collect_episodes(envs, policy, None, REQUESTS, RolloutConfig(layout="window",
                                                                                  rollout_mode="overlapped"))
    finally:
        envs.close()
    assert [n for _, n in policy.calls] == [6, 6, 6, 3] and all(ep.success for ep in episodes)
