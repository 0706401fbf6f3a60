"""GRPO and the methods built on it, each in one place: its math and its extension.

- :mod:`.grpo`: group-relative advantages, the baseline the loop computes (the loop with no
  extension is GRPO) and every other method reshapes.
- :mod:`.vspo`: VSPO, value-based resampling of zero-advantage groups and value-smoothing clipping.
- :mod:`.gigpo`: GiGPO, step groups by anchor state and ``A = A_episode + omega * A_step``.
- :mod:`.dapo`: DAPO's dynamic sampling (groups with reward spread only, oversampled to fill).
- :mod:`.ppo`: PPO, a value head on the policy trained with it, and GAE over turns instead of the
  group baseline.
- :mod:`.rft`: RFT (rejection-sampling fine-tuning), the SFT loss on the policy's own successful
  episodes, the others left out.
- :mod:`.gcd`: GCD, the actor co-trained as a generative judge of its steps, plus prompt-based
  correction (on GRPO, or chained after GiGPO): a package of small pure modules and
  :mod:`.gcd.extension`.

Each method's math is small functions with doctests, and its extension a
:class:`~agentgym.train.hooks.TrainerExtension` with a config dataclass its trainer config adds to
:class:`~agentgym.train.config.tree.TrainConfig` (``--vspo.*``); each module registers its method
once (:mod:`.registry`, :data:`METHODS`). :data:`BY_NAME` lists the extensions; :func:`recorded_extensions` rebuilds those a checkpoint trained with.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agentgym.train.base.flags import from_recorded
from agentgym.train.hooks import Extensions
from agentgym.train.methods.dapo import DAPO, DAPOConfig
from agentgym.train.methods.gcd.extension import GCD, GCDConfig, gcd_extensions
from agentgym.train.methods.gigpo import GiGPO, GiGPOConfig
from agentgym.train.methods.grpo import GRPO_METHOD
from agentgym.train.methods.ppo import PPO, PPOConfig
from agentgym.train.methods.registry import METHODS, Method, get_method
from agentgym.train.methods.rft import RFT, RFTConfig
from agentgym.train.methods.sft import SFT_METHOD
from agentgym.train.methods.vspo import VSPO, VSPOConfig

BY_NAME = {m.name: m.extension for m in METHODS.values() if m.extension is not None}
"""Each registered method's extension by its ``name``, which is also its config group's name in a
trainer's config (``--gcd.*``) and its key in checkpoint state."""


def recorded_extensions(config: Mapping[str, Any], state: Mapping[str, Any]) -> Extensions:
    """The extensions a run trained with, rebuilt from its recorded config (a checkpoint's
    ``CheckpointRecord.config``) and loaded with their recorded ``state`` (by name): what evaluation
    needs to prompt a checkpoint as its training did. Extensions this package does not define (a
    user's own) are left out, and so are recorded settings this version does not know
    (:func:`~agentgym.train.base.flags.from_recorded`)."""
    rebuilt = []
    for name in state:
        if name not in BY_NAME:
            continue
        cls, config_cls = BY_NAME[name]
        extension = cls(from_recorded(config_cls, config.get(name) or {}))
        extension.load_state_dict(state[name])
        rebuilt.append(extension)
    return Extensions(rebuilt)


__all__ = ["BY_NAME", "GRPO_METHOD", "METHODS", "Method", "SFT_METHOD", "get_method", "DAPO", "DAPOConfig", "GCD", "GCDConfig", "GiGPO", "GiGPOConfig", "PPO", "PPOConfig", "RFT",
           "RFTConfig", "VSPO", "VSPOConfig", "gcd_extensions", "recorded_extensions"]
