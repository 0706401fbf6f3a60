"""Group-relative advantages (GRPO, SPEC §4.2); methods reshape them through the loop's
``transform_advantages`` hook (:mod:`agentgym.train.hooks`).

Episodes of the same task form a group. An episode's advantage is its return minus the group mean,
divided by the group's standard deviation (``normalize_std=True``, GRPO) or not (Dr. GRPO). We use
the unbiased (n - 1) standard deviation, as the reference GRPO implementations do.

>>> group_advantages([1.0, 0.0, 0.0, 1.0], [0, 0, 0, 0]).round(4).tolist()
[0.866, -0.866, -0.866, 0.866]
>>> group_advantages([1.0, 0.0, 0.5, 0.5], [0, 0, 1, 1], normalize_std=False).tolist()
[0.5, -0.5, 0.0, 0.0]
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from agentgym.train.config.tree import TrainConfig
from agentgym.train.methods.registry import Method, register


def group_advantages(rewards: Sequence[float], group_ids: Sequence, normalize_std: bool = True,
                     eps: float = 1e-6) -> np.ndarray:
    """Advantage of each episode relative to the other episodes of its group.

    Args:
        rewards: one return per episode.
        group_ids: the group of each episode (any hashable); groups need not be contiguous.
        normalize_std: divide by the group's std (GRPO); False gives Dr. GRPO's mean-centering only.
        eps: added to the std so a group whose returns all tie gets advantage 0, not NaN.
    """
    rewards = np.asarray(rewards, dtype=np.float64)
    if rewards.ndim != 1 or len(rewards) != len(group_ids):
        raise ValueError(f"need one group id per reward, got {len(group_ids)} ids for {rewards.shape} rewards")
    out = np.zeros_like(rewards)
    keys = list(group_ids)
    for key in dict.fromkeys(keys):
        idx = np.array([i for i, k in enumerate(keys) if k == key])
        r = rewards[idx]
        centered = r - r.mean()
        if normalize_std:
            std = r.std(ddof=1) if len(r) > 1 else 0.0
            # a tied group has nothing to compare: zero advantage even with eps=0
            centered = centered / (std + eps) if std + eps > 0 else np.zeros_like(centered)
        out[idx] = centered
    return out


GRPO_METHOD = register(Method(
    name="grpo", summary="multi-turn GRPO: group-relative advantages, the baseline every method shares",
    description="""Multi-turn GRPO on any registered agentgym env, with a Hugging Face causal LM (SPEC §4.2).

    python trainers/grpo.py                                   # tiny model: SFT cold start, then GRPO on ToolQA-v0
    python trainers/grpo.py --model runs/sft/final            # GRPO from your own cold start
    python trainers/grpo.py --env-id ALFWorld-v0 --layout window --model /ckpt/Qwen2.5-1.5B-Instruct

For each task, G episodes (a group); every model-written token of episode i gets the advantage
(R_i - mean R) / std R, env-written tokens are masked out, and the loss is token-level PPO-clip
with an optional k3 KL to the initial model. The loop (setup, rollout, advantages, update, log,
checkpoint, held-out evaluation) is agentgym.train.loop; every flag is in --help.
""",
    config=TrainConfig, defaults=TrainConfig, doc="docs/trainers.md#what-one-step-does"))
