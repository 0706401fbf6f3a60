"""Policies any custom agent or trainer can use: one interface, three backends.

- :class:`HFPolicy`: transformers ``generate`` (the default; CPU or GPU).
- :class:`VLLMPolicy`: an in-process vLLM engine (imported only when asked for; extra ``[vllm]``).
- :class:`OpenAIPolicy`: any OpenAI-compatible server, for evaluation and served training rollouts.

Each takes a batch of chat histories (or prompt token ids) and returns a batch of
:class:`Completion` (text, token ids, logprobs).
"""

from agentgym.agents.base import ChatHistory, Completion, Policy, SamplingConfig
from agentgym.agents.hf import HFPolicy, load_model_and_tokenizer, render_prompt_ids
from agentgym.agents.openai_compat import OpenAIPolicy, OpenAIRequestError

__all__ = ["ChatHistory", "Completion", "Policy", "SamplingConfig", "HFPolicy", "OpenAIPolicy",
           "OpenAIRequestError", "VLLMPolicy", "load_model_and_tokenizer", "render_prompt_ids"]


def __getattr__(name):
    # vLLM pulls in CUDA and its own runtime: only touch it when VLLMPolicy is asked for by name.
    if name == "VLLMPolicy":
        from agentgym.agents.vllm_policy import VLLMPolicy

        return VLLMPolicy
    raise AttributeError(f"module 'agentgym.agents' has no attribute {name!r}")
