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
