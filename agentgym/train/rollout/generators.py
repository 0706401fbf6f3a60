"""What samples the rollouts, and how the trained weights reach it (``--generator``).

:func:`make_generator` builds the policy the collector samples with; the training loop calls
:meth:`Generator.before_update` right before each update and :meth:`Generator.sync` right after it,
so the next rollout samples from the weights just trained (docs/trainers.md, "Generators").

- ``hf`` (default): :class:`~agentgym.agents.HFPolicy` on the trained model itself. Nothing to sync.
- ``vllm``: :class:`~agentgym.agents.VLLMPolicy`, a vLLM engine in this process on the same GPU.
  With sleep mode (``enable_sleep_mode=True``, where the release has it) the engine sleeps at
  level 1 before the update (weights to CPU memory, KV cache dropped) so training gets its memory;
  after the update its weights wake first, the trained weights are copied in (``sync_from``), then
  its KV cache wakes. Every step.
- ``openai``: :class:`~agentgym.agents.OpenAIPolicy` against a running ``vllm serve``. Prompts go as
  token ids to ``/v1/completions`` and the sampled ids come back (vLLM's ``return_token_ids`` and
  ``return_tokens_as_token_ids``), so the trainer trains on the tokens the server sampled. At the
  start and every ``--reload-every`` steps (and on evaluation steps and the last step) the weights
  are saved to ``OUTPUT_DIR/generator/step_N`` (under a temporary name, renamed when complete) and
  the server loads them through vLLM's dev-mode endpoints (``VLLM_SERVER_DEV_MODE=1``):
  ``/collective_rpc`` ``update_config`` (its model path := that directory), ``/collective_rpc``
  ``reload_weights``, then ``/reset_prefix_cache`` (cached KV blocks belong to the old weights).
  Every request has a timeout; a server that does not answer is a :class:`GeneratorError` after the
  retries.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import time
from pathlib import Path
from typing import Any

from agentgym.agents.base import Policy, SamplingConfig
from agentgym.agents.hf import HFPolicy, default_stop_token_ids
from agentgym.agents.lora import adapter_base, base_weights, is_adapter_dir, is_peft, merged
from agentgym.agents.openai_compat import OpenAIPolicy, OpenAIRequestError, request_json
from agentgym.agents.vllm_policy import VLLMPolicy, _import_vllm


class GeneratorError(RuntimeError):
    """The generator cannot be reached, or cannot load the trained weights."""


class Generator:
    """``hf``: the trained model samples its own rollouts, so there is nothing to sync."""

    name = "hf"

    def __init__(self, policy: Policy):
        self.policy = policy

    def before_update(self) -> None:
        """Called right before the update (the rollouts of the step are done)."""

    def sync(self, step: int, model, output_dir: str) -> dict[str, float]:
        """Called right after the update of step ``step`` (completed steps); returns metrics."""
        return {}


def _unwrap(model):
    return getattr(model, "module", model)  # a DistributedDataParallel wrapper's model


class VLLMGenerator(Generator):
    """``vllm``: a colocated vLLM engine that sleeps through each update and gets the new weights."""

    name = "vllm"

    def __init__(self, model_path: str, tokenizer, sampling: SamplingConfig, stop_token_ids: list[int],
                 gpu_memory_utilization: float, seed: int):
        # The engine must run in this process: load_weights then hands it the trainer's tensors
        # directly instead of pickling them to an engine-core process.
        os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")

        vllm = _import_vllm()
        engine_fields = _engine_fields(vllm)
        kwargs: dict[str, Any] = {}
        self.sleeps = "enable_sleep_mode" in engine_fields and hasattr(vllm.LLM, "sleep")
        if self.sleeps:
            kwargs["enable_sleep_mode"] = True
        if "logprobs_mode" in engine_fields:
            kwargs["logprobs_mode"] = "processed_logprobs"  # the sampling distribution, as HFPolicy reports
        super().__init__(VLLMPolicy(model_path, tokenizer, sampling, gpu_memory_utilization=gpu_memory_utilization,
                                    seed=seed, stop_token_ids=stop_token_ids, **kwargs))
        self.asleep = False

    def before_update(self) -> None:
        if self.sleeps:
            self.policy.sleep(level=1)
            self.asleep = True

    def sync(self, step: int, model, output_dir: str) -> dict[str, float]:
        t = time.perf_counter()
        if self.asleep:
            self.policy.wake_up(["weights"])  # the KV cache comes back after the new weights are in
        self.policy.sync_from(_unwrap(model))
        if self.asleep:
            self.policy.wake_up(["kv_cache"])
            self.asleep = False
        return {"time/generator_sync": time.perf_counter() - t}


def _engine_fields(vllm) -> set[str]:
    engine_args = getattr(vllm, "EngineArgs", None)
    return {f.name for f in dataclasses.fields(engine_args)} if dataclasses.is_dataclass(engine_args) else set()


def save_generator_weights(model, tokenizer, output_dir: str, step: int) -> Path:
    """``OUTPUT_DIR/generator/step_<step>``: the model and tokenizer as ``save_pretrained`` writes
    them, written under a temporary name and renamed when complete; older ones are removed."""
    root = Path(output_dir) / "generator"
    root.mkdir(parents=True, exist_ok=True)
    final, tmp = root / f"step_{step}", root / f".step_{step}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    inner = _unwrap(model)
    if is_peft(inner):  # a server loads whole weights: the adapters merged in, under the base's names
        with merged(inner):
            inner.get_base_model().save_pretrained(tmp, state_dict=dict(base_weights(inner)))
    else:
        inner.save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    shutil.rmtree(final, ignore_errors=True)
    os.replace(tmp, final)
    return final.resolve()


class ServerGenerator(Generator):
    """``openai``: an OpenAI-compatible server samples; vLLM's dev endpoints reload its weights."""

    name = "openai"

    def __init__(self, url: str, model_name: str | None, tokenizer, sampling: SamplingConfig,
                 stop_token_ids: list[int], model_path: str, *, api_key: str | None = None, timeout: float = 60.0,
                 retries: int = 3, reload_every: int = 1, reload_timeout: float = 600.0, concurrency: int = 8,
                 num_steps: int = 0, eval_every: int = 0):
        self.url = url.rstrip("/")
        self.root = self.url.removesuffix("/v1")  # vLLM's dev endpoints live at the server root
        self.tokenizer, self.api_key, self.timeout, self.retries = tokenizer, api_key, timeout, retries
        self.reload_every, self.reload_timeout = reload_every, reload_timeout
        self.num_steps, self.eval_every = num_steps, eval_every
        super().__init__(OpenAIPolicy(self.url, model_name or self._served_model(), api_key, sampling,
                                      timeout=timeout, max_retries=retries, concurrency=concurrency,
                                      token_ids=True, tokenizer=tokenizer, stop_token_ids=stop_token_ids))
        self.loaded: str | None = None
        if reload_every > 0:
            self.reload(str(Path(model_path).resolve()))  # whatever the server started with, it samples from the run's weights

    def _served_model(self) -> str:
        try:
            body = request_json(self.url + "/models", timeout=self.timeout, max_retries=self.retries,
                                api_key=self.api_key)
            return str(body["data"][0]["id"])
        except OpenAIRequestError as e:
            raise GeneratorError(f"--generator-url {self.url}: {e}") from None
        except (KeyError, IndexError, TypeError):
            raise GeneratorError(f"--generator-url {self.url}: /models lists no model; pass --generator-model") from None

    def reload_due(self, step: int) -> bool:
        """Whether the weights after ``step`` completed steps go to the server: every
        ``reload_every`` steps, and on steps the loop evaluates (the evaluation samples there too)."""
        if self.reload_every <= 0:
            return False
        return (step % self.reload_every == 0 or step == self.num_steps
                or (self.eval_every > 0 and step % self.eval_every == 0))

    def reload(self, path: str) -> None:
        """Make the server load the checkpoint directory ``path`` (it must see the same filesystem)."""
        calls = [("/collective_rpc", {"method": "update_config", "args": [{"model_config": {"model": path}}],
                                      "timeout": self.reload_timeout}),
                 ("/collective_rpc", {"method": "reload_weights", "timeout": self.reload_timeout}),
                 ("/reset_prefix_cache", {})]
        for endpoint, body in calls:
            try:
                request_json(self.root + endpoint, body, timeout=self.reload_timeout, max_retries=self.retries,
                             api_key=self.api_key)
            except OpenAIRequestError as e:
                hint = (" (the server has no such endpoint: start it with VLLM_SERVER_DEV_MODE=1)"
                        if "HTTP 404" in str(e) else "")
                raise GeneratorError(
                    f"the generator server at {self.root} could not load {path}: "
                    f"{endpoint}{' ' + body['method'] if 'method' in body else ''}: {e}{hint}. The trainer reloads weights through vLLM's dev-mode "
                    "endpoints (docs/trainers.md); --reload-every 0 samples from the server's weights as they "
                    "are (off-policy)") from None
        self.loaded = path

    def sync(self, step: int, model, output_dir: str) -> dict[str, float]:
        t = time.perf_counter()
        out = {"generator/retokenized": float(self.policy.take_retokenized()), "generator/reloaded": 0.0}
        if self.reload_due(step):
            path = save_generator_weights(model, self.tokenizer, output_dir, step)
            self.reload(str(path))
            for old in path.parent.glob("step_*"):
                if old != path:  # the server holds these weights in memory now
                    shutil.rmtree(old, ignore_errors=True)
            out["generator/reloaded"] = 1.0
        out["time/generator_sync"] = time.perf_counter() - t
        return out


def make_generator(config, model, tokenizer, sampling: SamplingConfig, model_path: str) -> Generator:
    """The run's generator (``config.rollout.generator``) for ``model``, which was loaded from
    ``model_path`` (the base model, or the checkpoint a run resumes from). A LoRA checkpoint holds
    only the adapters, which an engine cannot start from: the vLLM engine starts from the base and
    takes the merged weights at once, and a server loads them from OUTPUT_DIR/generator/step_0."""
    r = config.rollout
    if r.generator == "hf":
        return Generator(HFPolicy(model, tokenizer, sampling))
    stops = default_stop_token_ids(tokenizer, _unwrap(model))
    adapter = is_adapter_dir(model_path)
    if r.generator == "vllm":
        generator = VLLMGenerator(adapter_base(model_path) if adapter else model_path, tokenizer, sampling, stops,
                                  r.generator_gpu_memory, config.run.seed)
        if adapter:
            generator.policy.sync_from(_unwrap(model))
        return generator
    if adapter and r.generator == "openai":
        model_path = str(save_generator_weights(model, tokenizer, config.run.output_dir, 0))
    if r.generator == "openai":
        key = os.environ.get(r.generator_api_key_env) if r.generator_api_key_env else None
        return ServerGenerator(r.generator_url, r.generator_model, tokenizer, sampling, stops, model_path,
                               api_key=key, timeout=r.generator_timeout, retries=r.generator_retries,
                               reload_every=r.reload_every, reload_timeout=r.reload_timeout,
                               concurrency=min(256, max(8, r.num_groups * r.group_size)),
                               num_steps=config.run.num_steps, eval_every=config.eval.eval_every)
    raise ValueError(f"unknown generator {r.generator!r}")
