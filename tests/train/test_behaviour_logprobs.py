"""The log-probabilities recorded at sampling land on the tokens they score, in both layouts, so
under ``--async-steps`` the ratio's denominator is the sampler's own."""

import pytest
import torch

from agentgym.agents import HFPolicy, SamplingConfig
from agentgym.train.config.rollout import RolloutConfig
from agentgym.train.optim.update import behaviour_logprobs, sample_logprobs
from agentgym.train.rollout.chat import ChatEncoder
from agentgym.train.rollout.envs import make_env_batch
from agentgym.train.rollout.episodes import collect_episodes
from agentgym.train.rollout.samples import Sample, episode_samples


@pytest.mark.parametrize("layout", ["concat", "window"])
def test_recorded_logprobs_are_the_models_own_on_every_sampled_token(tiny, layout):
    model, tok = tiny
    torch.manual_seed(0)
    envs = make_env_batch("ToolQA-v0", 1, 2, "sync", {"question_kinds": ["single_hop"], "max_turns": 2})
    try:
        policy = HFPolicy(model, tok, SamplingConfig(max_new_tokens=10, temperature=0.7))
        episodes, _ = collect_episodes(envs, policy, ChatEncoder(tok), [5], RolloutConfig(layout=layout), None,
                                       {"split": "train"})
    finally:
        envs.close()
    samples = episode_samples(episodes, [1.0] * len(episodes), layout)
    assert samples and all(s.behaviour_logprobs is not None for s in samples)
    recorded, missing = behaviour_logprobs(model, samples, tok.pad_token_id, 4, temperature=0.7)
    computed = sample_logprobs(model, samples, tok.pad_token_id, 4, temperature=0.7)
    assert missing == 0
    for s, r, c in zip(samples, recorded, computed):
        mask = torch.tensor(s.loss_mask[1:], dtype=torch.bool)
        assert mask.any() and r.shape == c.shape
        assert torch.allclose(r[mask], c[mask], atol=1e-4)  # scored alike where the model sampled
        assert torch.all(r[~mask] == 0)


def test_a_sample_without_recorded_logprobs_gets_the_models_own(tiny):
    model, tok = tiny
    ids = tok("hello there", add_special_tokens=False)["input_ids"]
    bare = Sample(ids, [0] + [1] * (len(ids) - 1), 1.0)
    rows, missing = behaviour_logprobs(model, [bare], tok.pad_token_id, 4)
    assert missing == 1
    assert torch.equal(rows[0], sample_logprobs(model, [bare], tok.pad_token_id, 4)[0])
    with pytest.raises(ValueError, match="behaviour_logprobs"):
        Sample(ids, [1] * len(ids), 1.0, behaviour_logprobs=[0.0])
