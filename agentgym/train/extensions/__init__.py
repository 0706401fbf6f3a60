"""The methods built on the GRPO loop, each a :class:`~agentgym.train.hooks.TrainerExtension`
with a config dataclass the trainer scripts add to :class:`~agentgym.train.run.config.TrainConfig`.

- :mod:`.vspo`: VSPO, value-based resampling of zero-advantage groups and value-smoothing clipping.
- :mod:`.gigpo`: GiGPO, step groups by anchor state and ``A = A_episode + omega * A_step``.
- :mod:`.dapo`: DAPO's dynamic sampling (groups with reward spread only, oversampled to fill).
- :mod:`.gcd`: GCD, the actor co-trained as a generative judge of its steps, plus prompt-based
  correction (on GRPO, or chained after GiGPO).
- :mod:`.ppo`: PPO, a value head on the policy trained with it, and GAE over turns instead of the
  group baseline.

The math of each lives in a small pure module beside the loop (``agentgym.train.vspo``,
``agentgym.train.gigpo``, ``agentgym.train.dapo``, ``agentgym.train.ppo``, the package
``agentgym.train.gcd``); these files only wire it into a step.
"""

from __future__ import annotations

from typing import Any, Mapping

from agentgym.train.extensions.dapo import DAPO, DAPOConfig
from agentgym.train.extensions.gcd import GCD, GCDConfig, gcd_extensions
from agentgym.train.extensions.gigpo import GiGPO, GiGPOConfig
from agentgym.train.extensions.ppo import PPO, PPOConfig
from agentgym.train.extensions.vspo import VSPO, VSPOConfig
from agentgym.train.run.flags import from_recorded
from agentgym.train.hooks import Extensions

BY_NAME = {"vspo": (VSPO, VSPOConfig), "gigpo": (GiGPO, GiGPOConfig), "dapo": (DAPO, DAPOConfig),
           "gcd": (GCD, GCDConfig), "ppo": (PPO, PPOConfig)}
"""Each extension of this package by its ``name``, which is also its config group's name in a
trainer's config (``--gcd.*``) and its key in checkpoint state."""


def recorded_extensions(config: Mapping[str, Any], state: Mapping[str, Any]) -> Extensions:
    """The extensions a run trained with, rebuilt from its recorded config (a checkpoint's
    ``CheckpointRecord.config``) and loaded with their recorded ``state`` (by name): what evaluation
    needs to prompt a checkpoint as its training did. Extensions this package does not define (a
    user's own) are left out; settings a newer or older version does not know are ignored, and a
    setting recorded under its former name is read as the current one (:func:`~agentgym.train.run.flags.from_recorded`)."""
    rebuilt = []
    for name in state:
        if name not in BY_NAME:
            continue
        cls, config_cls = BY_NAME[name]
        extension = cls(from_recorded(config_cls, config.get(name) or {}))
        extension.load_state_dict(state[name])
        rebuilt.append(extension)
    return Extensions(rebuilt)


__all__ = ["BY_NAME", "DAPO", "DAPOConfig", "GCD", "GCDConfig", "GiGPO", "GiGPOConfig", "PPO", "PPOConfig", "VSPO",
           "VSPOConfig", "gcd_extensions", "recorded_extensions"]
