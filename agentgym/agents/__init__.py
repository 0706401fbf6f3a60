"""Policies any custom agent or trainer can use: one interface, three backends.

- :class:`HFPolicy`: transformers ``generate`` (the default; CPU or GPU).
- :class:`VLLMPolicy`: an in-process vLLM engine (imported only when asked for; extra ``[vllm]``).
- :class:`OpenAIPolicy`: any OpenAI-compatible server, for evaluation and served training rollouts.

Each takes a batch of chat histories (or prompt token ids) and returns a batch of
:class:`Completion` (text, token ids, logprobs).
"""

from agentgym.agents.base import ChatHistory, Completion, Policy, SamplingConfig

__all__ = ["ChatHistory", "Completion", "Policy", "SamplingConfig", "HFPolicy", "OpenAIPolicy",
           "OpenAIRequestError", "VLLMPolicy", "load_model_and_tokenizer", "render_prompt_ids"]

# Each backend is imported when its name is first used: vLLM pulls in CUDA and its own runtime, and
# a module of this package used alone (the tiny-model builder) should not load the others.
_BACKENDS = {"HFPolicy": "hf", "load_model_and_tokenizer": "hf", "render_prompt_ids": "hf",
             "OpenAIPolicy": "openai_compat", "OpenAIRequestError": "openai_compat", "VLLMPolicy": "vllm_policy"}


def __getattr__(name):
    if name in _BACKENDS:
        import importlib

        return getattr(importlib.import_module(f"{__name__}.{_BACKENDS[name]}"), name)
    raise AttributeError(f"module 'agentgym.agents' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_BACKENDS))
