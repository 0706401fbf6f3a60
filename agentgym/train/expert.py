"""Expert transcripts as training samples, for the SFT cold start (SPEC §5).

Any env made with ``expert=True`` puts its oracle's next action in ``info["expert_action"]``. We
play that expert and lay each episode out exactly as the RL rollout would have (same chat template,
same layout): each action as its tokens plus the end-of-turn token, with loss, and everything the
template and the env wrote without. So SFT trains the model on the very token sequences GRPO will
later sample from.
"""

from __future__ import annotations

from typing import Any

from agentgym.prompts import episode_to_messages
from agentgym.train.chat import ChatEncoder, window_prompt_ids
from agentgym.train.samples import Sample


def action_ids(encoder: ChatEncoder, action: str) -> list[int]:
    """Ids of an action as the model would emit it: its tokens, then end-of-turn."""
    eos = encoder.tokenizer.eos_token_id
    return encoder.encode(action) + ([eos] if eos is not None else [])


def expert_episode(env, encoder: ChatEncoder, seed: int, layout: str = "concat", window: int | None = 2,
                   reset_options: dict[str, Any] | None = None, only_successful: bool = True) -> tuple[list[Sample], dict]:
    """Play one expert episode of ``env`` (made with ``expert=True``); its samples and final info.

    Returns no samples when ``only_successful`` and the expert failed (or had no action to give).
    """
    obs, info = env.reset(seed=seed, options=dict(reset_options or {}))
    system, observations, actions = info["system_prompt"], [obs], []
    if layout == "concat":
        ids = encoder.prompt_ids(episode_to_messages(system, observations, actions))
        mask = [0] * len(ids)
    samples: list[Sample] = []
    done = False
    while not done:
        action = info.get("expert_action")
        if action is None:
            return [], info
        messages = episode_to_messages(system, observations, actions)
        completion = action_ids(encoder, action)
        if layout == "window":
            prompt = window_prompt_ids(encoder, system, observations, actions, window)
            samples.append(Sample(prompt + completion, [0] * len(prompt) + [1] * len(completion), 1.0))
        obs, _, terminated, truncated, info = env.step(action)
        done = terminated or truncated
        if layout == "concat":
            ids += completion
            mask += [1] * len(completion)
            if not done:
                env_ids = encoder.env_turn_ids(messages, action, obs, stopped=True)
                ids += env_ids
                mask += [0] * len(env_ids)
        actions.append(action)
        observations.append(obs)
    if only_successful and not info.get("success", False):
        return [], info
    if layout == "concat":
        samples = [Sample(ids, mask, 1.0)]
    return samples, info
