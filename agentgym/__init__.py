"""agentgym: Gymnasium text environments for LLM agents, with progressive reward shaping.

>>> import gymnasium as gym, agentgym
>>> env = gym.make("ToolQA-v0")
"""

import importlib

from agentgym import envs  # noqa: F401  registers every env id

__version__ = "0.1.0"

# The public API is imported when first used, so that importing one module of the package (the
# tiny-model builder, a trainer module) costs that module and env registration, not every layer.
_EXPORTS = {"AgentEnv": "agentgym.envs.base", "EngineError": "agentgym.envs.base",
            "Transition": "agentgym.envs.base", "episode_to_messages": "agentgym.prompts",
            "make_vec": "agentgym.vector", "EMBODIED_PRS": "agentgym.rewards.prs",
            "TOOLQA_PRS": "agentgym.rewards.prs", "PRSSchedule": "agentgym.rewards.prs",
            "PRSSpec": "agentgym.rewards.prs", "PRSTracker": "agentgym.rewards.prs"}


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    try:  # a subpackage used as an attribute (agentgym.vector.AgentVectorEnv) after `import agentgym`
        return importlib.import_module(f"{__name__}.{name}")
    except ModuleNotFoundError as e:
        if e.name != f"{__name__}.{name}":
            raise
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))

__all__ = [
    "AgentEnv", "EngineError", "make_vec", "Transition", "episode_to_messages",
    "PRSSpec", "PRSTracker", "PRSSchedule", "TOOLQA_PRS", "EMBODIED_PRS", "__version__",
]
