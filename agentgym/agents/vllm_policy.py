"""``VLLMPolicy``: sampling with an in-process vLLM engine on the GPU, weights synced from a trainer.

vLLM is optional (extra ``[vllm]``) and is imported only when a ``VLLMPolicy`` is created, never by
``import agentgym.agents``. Written against vLLM's documented offline API: ``LLM``,
``SamplingParams``, ``LLM.generate`` with token-id prompts, ``LLM.apply_model`` (or the
driver worker's model on older releases) to load new weights in place, and ``LLM.sleep`` /
``LLM.wake_up`` (sleep mode, ``enable_sleep_mode=True``) to free its GPU memory while a colocated
trainer updates.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable, Sequence

from agentgym.agents.base import Completion, Policy, Prompt, SamplingConfig, is_token_prompt, refuse_allowed
from agentgym.agents.hf import render_prompt_ids


def _import_vllm():
    try:
        import vllm
    except ImportError as e:
        raise ImportError(
            "VLLMPolicy needs vLLM, which is not installed: `pip install 'agentgym[vllm]'` on a CUDA machine, "
            "or use HFPolicy (transformers generate) instead."
        ) from e
    return vllm


class VLLMPolicy(Policy):
    """Sample from a vLLM engine colocated with the trainer.

    Args:
        model: local checkpoint directory (what ``LLM(model=...)`` loads).
        tokenizer: a transformers tokenizer for the same model (renders chat histories).
        sampling: default :class:`SamplingConfig`.
        gpu_memory_utilization: share of GPU memory vLLM may take (leave room for training).
        dtype: weights dtype in vLLM.
        seed: engine seed.
        stop_token_ids: ids that end a turn (default: the tokenizer's eos).
        **llm_kwargs: passed to ``vllm.LLM``.
    """

    def __init__(self, model: str, tokenizer=None, sampling: SamplingConfig | None = None,
                 gpu_memory_utilization: float = 0.3, dtype: str = "bfloat16", seed: int = 0,
                 stop_token_ids: Sequence[int] | None = None, **llm_kwargs):
        vllm = _import_vllm()
        if tokenizer is None:
            from transformers import AutoTokenizer

            tokenizer = AutoTokenizer.from_pretrained(model)
        self.tokenizer = tokenizer
        self.sampling = sampling or SamplingConfig()
        self.stop_token_ids = list(stop_token_ids or [tokenizer.eos_token_id])
        self._vllm = vllm
        self.llm = vllm.LLM(model=model, tokenizer=model, dtype=dtype, seed=seed,
                            gpu_memory_utilization=gpu_memory_utilization, enable_prefix_caching=True,
                            **llm_kwargs)

    def _params(self, sampling: SamplingConfig):
        return self._vllm.SamplingParams(
            n=1, max_tokens=sampling.max_new_tokens, temperature=sampling.temperature, top_p=sampling.top_p,
            top_k=sampling.top_k if sampling.top_k > 0 else -1, logprobs=0, stop_token_ids=self.stop_token_ids,
            skip_special_tokens=True)

    def generate(self, prompts: Sequence[Prompt], sampling: SamplingConfig | None = None,
                 allowed: Sequence[Sequence[str] | None] | None = None,
                 scored: Sequence[Sequence[str] | None] | None = None) -> list[Completion]:
        refuse_allowed(self, allowed, scored)
        sampling = sampling or self.sampling
        ids = [[int(t) for t in p] if is_token_prompt(p) else render_prompt_ids(self.tokenizer, p) for p in prompts]
        requests = [{"prompt_token_ids": p} for p in ids]  # vLLM's TokensPrompt is a TypedDict of this shape
        outputs = self.llm.generate(requests, self._params(sampling), use_tqdm=False)
        completions = []
        for prompt_ids, request_output in zip(ids, outputs):
            out = request_output.outputs[0]
            token_ids = list(out.token_ids)
            logprobs = []
            for tok, entry in zip(token_ids, out.logprobs or []):
                logprobs.append(float(entry[tok].logprob) if entry and tok in entry else float("nan"))
            completions.append(Completion(text=out.text, token_ids=token_ids, logprobs=logprobs,
                                          prompt_ids=prompt_ids,
                                          finish_reason="length" if out.finish_reason == "length" else "stop"))
        return completions

    def load_weights(self, named_tensors: Iterable[tuple[str, object]]) -> None:
        """Copy the trainer's weights (``model.named_parameters()`` or a state dict's items) into vLLM."""
        weights = [(name, t.detach()) for name, t in named_tensors]
        if hasattr(self.llm, "apply_model"):
            self.llm.apply_model(lambda model: model.load_weights(weights))
        else:  # vLLM releases before apply_model
            self.llm.llm_engine.model_executor.driver_worker.model_runner.model.load_weights(weights)
        if hasattr(self.llm, "reset_prefix_cache"):
            self.llm.reset_prefix_cache()  # cached KV blocks were computed with the old weights

    def sync_from(self, model) -> None:
        """Load a transformers model's current parameters into the engine. A PEFT (LoRA) model's
        adapters are merged into its base weights for the copy, which goes under the base's own
        names, then taken out again (:mod:`agentgym.agents.lora`)."""
        from agentgym.agents.lora import base_weights, merged

        with merged(model):
            self.load_weights(base_weights(model))

    def sleep(self, level: int = 1) -> None:
        """Free the engine's GPU memory (needs ``enable_sleep_mode=True``): level 1 moves the weights
        to CPU memory and drops the KV cache; level 2 drops both."""
        self.llm.sleep(level=level)

    def wake_up(self, tags: Sequence[str] | None = None) -> None:
        """Take the engine's GPU memory back after :meth:`sleep`: everything, or only ``tags``
        (``weights``, ``kv_cache``), so that new weights can be loaded before the KV cache returns.
        On releases whose ``wake_up`` takes no tags, the first call wakes everything."""
        if tags is None:
            self.llm.wake_up()
        elif "tags" in inspect.signature(self.llm.wake_up).parameters:
            self.llm.wake_up(tags=list(tags))
        elif "weights" in tags:
            self.llm.wake_up()
