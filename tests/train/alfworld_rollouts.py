"""Episodes of a policy on a few generated ALFWorld games, for the tests of choice policies."""

import torch

from agentgym.agents import HFPolicy, SamplingConfig
from agentgym.train.config.rollout import RolloutConfig
from agentgym.train.rollout.chat import ChatEncoder
from agentgym.train.rollout.envs import make_env_batch
from agentgym.train.rollout.episodes import collect_episodes

GAMES = "generated:4:tiny"


def play(model, tok, env_kwargs: dict, layout: str, temperature: float = 0.7, groups: int = 2, seed: int = 0):
    """Groups of 2 episodes of up to 3 turns on the generated games, sampled at ``temperature``."""
    torch.manual_seed(seed)
    envs = make_env_batch("ALFWorld-v0", groups, 2, "sync", {"data_path": GAMES, "max_turns": 3, **env_kwargs})
    try:
        policy = HFPolicy(model, tok, SamplingConfig(max_new_tokens=6, temperature=temperature))
        episodes, _ = collect_episodes(envs, policy, ChatEncoder(tok), list(range(seed, seed + groups)),
                                       RolloutConfig(layout=layout, window=1), None, {"split": "train"})
    finally:
        envs.close()
    return episodes


def recorded_and_recomputed(model, tok, samples, temperature: float = 0.7):
    """Per sample: the logprobs the sampler recorded, the update's recomputation of them, and the
    model's free (unconstrained) ones, which tell whether the choice policy changed anything."""
    from agentgym.train.optim.update import behaviour_logprobs, sample_logprobs
    from agentgym.train.rollout.samples import Sample

    recorded, missing = behaviour_logprobs(model, samples, tok.pad_token_id, 4, temperature=temperature)
    assert missing == 0
    computed = sample_logprobs(model, samples, tok.pad_token_id, 4, temperature=temperature)
    free = sample_logprobs(model, [Sample(s.input_ids, s.loss_mask, s.advantage) for s in samples],
                           tok.pad_token_id, 4, temperature=temperature)
    return recorded, computed, free


def check_full_forward(model, tok, samples, computed, key: str, temperature: float = 0.7) -> None:
    """The full forward (an extension's loss term sees every position) gives the loss positions the
    same logprobs under the batch's ``key`` (``allowed`` or ``scored``)."""
    from agentgym.train.optim.update import logprobs_and_hidden, pad_batch

    batch = pad_batch(samples, tok.pad_token_id, "cpu")
    with torch.no_grad():
        full, _ = logprobs_and_hidden(model, batch["input_ids"], batch["attention_mask"], temperature,
                                      **{key: batch[key]})
    for row, (s, c) in enumerate(zip(samples, computed)):
        mask = torch.tensor(s.loss_mask[1:], dtype=torch.bool)
        assert torch.allclose(full[row, :len(s.input_ids) - 1][mask], c[mask], atol=1e-4)
