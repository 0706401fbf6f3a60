"""The methods built on the GRPO loop, each a :class:`~agentgym.train.hooks.TrainerExtension`
with a config dataclass the trainer scripts add to :class:`~agentgym.train.config.TrainConfig`.

- :mod:`.vspo`: VSPO, value-based resampling of zero-advantage groups and value-smoothing clipping.
- :mod:`.gigpo`: GiGPO, step groups by anchor state and ``A = A_episode + omega * A_step``.
- :mod:`.dapo`: DAPO's dynamic sampling (groups with reward spread only, oversampled to fill).
- :mod:`.gcd`: GCD, the actor co-trained as a generative judge of its steps, plus prompt-based
  correction (on GRPO, or chained after GiGPO).

The math of each lives in a small pure module beside the loop (``agentgym.train.vspo``,
``agentgym.train.gigpo``, ``agentgym.train.dapo``, the package ``agentgym.train.gcd``); these files
only wire it into a step.
"""

from agentgym.train.extensions.dapo import DAPO, DAPOConfig
from agentgym.train.extensions.gcd import GCD, GCDConfig, gcd_extensions
from agentgym.train.extensions.gigpo import GiGPO, GiGPOConfig
from agentgym.train.extensions.vspo import VSPO, VSPOConfig

__all__ = ["DAPO", "DAPOConfig", "GCD", "GCDConfig", "GiGPO", "GiGPOConfig", "VSPO", "VSPOConfig", "gcd_extensions"]
