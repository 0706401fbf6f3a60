"""agentgym: Gymnasium text environments for LLM agents, with progressive reward shaping.

>>> import gymnasium as gym, agentgym
>>> env = gym.make("ToolQA-v0")
"""

from agentgym import envs  # noqa: F401  registers every env id
from agentgym.envs.base import AgentEnv, EngineError, Transition
from agentgym.prompts import episode_to_messages
from agentgym.vector import make_vec
from agentgym.rewards.prs import EMBODIED_PRS, TOOLQA_PRS, PRSSchedule, PRSSpec, PRSTracker

__version__ = "0.1.0"

__all__ = [
    "AgentEnv", "EngineError", "make_vec", "Transition", "episode_to_messages",
    "PRSSpec", "PRSTracker", "PRSSchedule", "TOOLQA_PRS", "EMBODIED_PRS", "__version__",
]
