"""Constrained choice: with ``constrained_choice=True`` a policy samples only the numbers of the
listed actions, records its log-probabilities under that mask, and the update recomputes them under
the same mask, so the PPO ratio is taken under the distribution that sampled."""

import pytest
import torch
from alfworld_rollouts import GAMES, check_full_forward, play, recorded_and_recomputed

from agentgym.agents import HFPolicy, SamplingConfig
from agentgym.agents.hf import ReplyTrie
from agentgym.train.config.optim import LossConfig
from agentgym.train.optim.update import (
    behaviour_logprobs,
    train_step,
)
from agentgym.train.rollout.samples import episode_samples

pytest.importorskip("alfworld")


def _play(model, tok, constrained: bool, layout: str, temperature: float = 0.7, groups: int = 2, seed: int = 0):
    kwargs = {"action_format": "choice", **({"observation": "history+admissible"} if layout == "window" else {})}
    if constrained:
        kwargs["constrained_choice"] = True
    return play(model, tok, kwargs, layout, temperature, groups, seed)


def _valid_rate(episodes) -> float:
    infos = [info for ep in episodes for info in ep.step_infos]
    return sum(bool(i["action_valid"]) for i in infos) / len(infos)


@pytest.mark.slow
@pytest.mark.parametrize("layout", ["concat", "window"])
def test_the_update_recomputes_the_sampled_logprobs_under_the_same_mask(tiny, layout):
    model, tok = tiny
    episodes = _play(model, tok, True, layout)
    assert _valid_rate(episodes) == 1.0
    for ep in episodes:
        for turn, action in zip(ep.turns, ep.actions):
            assert turn.completion.allowed_token_ids is not None and turn.completion.finish_reason == "stop"
            assert action.isdigit() and turn.completion.token_ids[-1] == tok.eos_token_id
    samples = episode_samples(episodes, [1.0] * len(episodes), layout)
    assert samples and all(s.allowed_token_ids is not None for s in samples)
    recorded, computed, free = recorded_and_recomputed(model, tok, samples)
    for s, r, c, f in zip(samples, recorded, computed, free):
        mask = torch.tensor(s.loss_mask[1:], dtype=torch.bool)
        assert mask.any()
        assert torch.allclose(r[mask], c[mask], atol=1e-4)  # the update's logprobs are the sampler's
        assert (c[mask] > f[mask] + 1e-3).any()  # and the mask matters: unmasked ones are lower
    check_full_forward(model, tok, samples, computed, "allowed")  # the full forward masks alike


def test_one_update_on_constrained_samples_starts_at_ratio_one(tiny):
    from agentgym.agents import load_model_and_tokenizer
    from agentgym.agents.tiny import build_tiny_model

    model, tok = load_model_and_tokenizer(str(build_tiny_model()))  # its own copy: the update changes it
    episodes = _play(model, tok, True, "window", groups=1)
    samples = episode_samples(episodes, [1.0, -1.0], "window")
    old, _ = behaviour_logprobs(model, samples, tok.pad_token_id, 4, temperature=0.7)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    metrics = train_step(model, optimizer, samples, LossConfig(beta=0.0), tok.pad_token_id, micro_batch_size=4,
                         temperature=0.7, old_logprobs=old)
    assert metrics["ratio/mean"] == pytest.approx(1.0, abs=1e-4) and metrics["clip_ratio"] == 0.0


def test_without_the_constraint_a_random_tiny_model_replies_invalidly(tiny):
    model, tok = tiny
    free = _play(model, tok, False, "window", temperature=1.0)
    bound = _play(model, tok, True, "window", temperature=1.0)
    assert _valid_rate(free) < 0.5 and _valid_rate(bound) == 1.0
    assert all(t.completion.allowed_token_ids is None for ep in free for t in ep.turns)


def test_greedy_keeps_to_the_allowed_replies_and_others_are_free(tiny):
    model, tok = tiny
    policy = HFPolicy(model, tok)
    prompts = [[{"role": "user", "content": "Pick a number."}]] * 3
    out = policy.generate(prompts, SamplingConfig(max_new_tokens=5, temperature=0),
                          allowed=[["1", "2", "12"], None, ["7"]])
    assert out[0].text in {"1", "2", "12"} and out[2].text == "7" and out[1].allowed_token_ids is None
    assert out[2].logprobs == [0.0, 0.0]  # one reply: its every token is certain under the mask
    assert out[0].allowed_token_ids[0] == ReplyTrie([tok(r, add_special_tokens=False)["input_ids"]
                                                     for r in ("1", "2", "12")], tok.eos_token_id).next_ids([])
    same = policy.generate(prompts, SamplingConfig(max_new_tokens=5, temperature=0), allowed=[None, None, None])
    plain = policy.generate(prompts, SamplingConfig(max_new_tokens=5, temperature=0))
    assert [c.token_ids for c in same] == [c.token_ids for c in plain]
    with pytest.raises(ValueError, match="allowed has 1 entries for 3 prompts"):
        policy.generate(prompts, allowed=[["1"]])


def test_policies_that_cannot_constrain_refuse_a_list():
    from agentgym.agents import OpenAIPolicy

    policy = OpenAIPolicy("http://127.0.0.1:9", "m")
    with pytest.raises(ValueError, match="OpenAIPolicy cannot constrain its replies"):
        policy.generate([[{"role": "user", "content": "hi"}]], allowed=[["1"]])


def test_evaluation_and_the_leaderboards_policy_agents_keep_to_the_list(tiny):
    from agentgym.leaderboard.agents import EpisodeView, PolicyAgent
    from agentgym.train.evaluate import evaluate

    model, tok = tiny
    policy = HFPolicy(model, tok, SamplingConfig(max_new_tokens=6, temperature=1.0))
    kwargs = {"data_path": GAMES, "max_turns": 3, "action_format": "choice"}
    free = evaluate(policy, "ALFWorld-v0", kwargs, "train", num_episodes=2, batch_size=2)
    bound = evaluate(policy, "ALFWorld-v0", {**kwargs, "constrained_choice": True}, "train", num_episodes=2,
                     batch_size=2)
    assert bound["terms"]["valid"] == 1.0 > free["terms"]["valid"]

    agent = PolicyAgent(policy, "tiny", SamplingConfig(max_new_tokens=6, temperature=1.0))
    view = EpisodeView("ALFWorld-v0", "train", "t", 0, "Reply with a number.", ["1. look\n2. inventory"],
                       info={"allowed_replies": ["1", "2"]})
    assert {c.text for c in agent.act([view] * 8)} <= {"1", "2"}


def test_a_generator_that_cannot_constrain_is_refused_before_the_run():
    from agentgym.train.base.errors import ConfigError
    from agentgym.train.base.flags import build
    from agentgym.train.config.tree import TrainConfig

    config = build(TrainConfig, env_kwargs='{"action_format": "choice", "constrained_choice": true}',
                   generator="openai", generator_url="http://127.0.0.1:9/v1")
    with pytest.raises(ConfigError, match="constrained_choice=True needs --generator hf"):
        config.validate()
