"""The behaviour policy of asynchronous rollouts: what samples while the learner updates, and how a
version of the trained weights reaches it.

Under ``--async-steps K`` the rollout thread plays with weights up to K updates old, so it cannot
sample from the model the learner is changing. The learner *publishes* each version (the weights
after that many updates) with :meth:`BehaviourWeights.snapshot`, and the rollout thread
*loads* one at a batch boundary with :meth:`BehaviourWeights.load` (a batch never mixes versions).

- ``hf``: a copy of the model, in eval mode and without gradients. A version is a copy of the
  model's tensors (on its device) taken right after the update; loading copies it into the behaviour model.
- ``openai``: the server samples. A version the server is due to load (``--reload-every``) is saved
  to ``OUTPUT_DIR/generator/step_N`` by the learner, and the rollout thread has the server load it
  through vLLM's dev endpoints before the batch (``ServerGenerator.reload``).

A colocated ``--generator vllm`` engine sleeps through every update and so cannot play beside one;
the config rejects it with ``--async-steps``.
"""

from __future__ import annotations

import copy
import shutil
import time
from pathlib import Path
from typing import Any

from agentgym.agents.hf import HFPolicy
from agentgym.train.rollout.generators import Generator, ServerGenerator, _unwrap, save_generator_weights


class BehaviourWeights:
    """``hf``: a copy of the trained model that samples the rollouts at a published version."""

    def __init__(self, model, generator: Generator, tokenizer):
        learner = generator.policy
        self.model = copy.deepcopy(_unwrap(model))
        self.model.eval()
        for p in self.model.parameters():
            p.requires_grad_(False)
        self.policy = HFPolicy(self.model, tokenizer, learner.sampling, stop_token_ids=learner.stop_token_ids,
                               batch_size=learner.batch_size)
        self.version: int | None = None

    def snapshot(self, model, version: int, output_dir: str) -> Any:
        """The trained weights of ``model`` now, as version ``version`` (copies: the learner goes on
        changing them). Frozen weights never change, so a LoRA run copies its adapters only."""
        return {k: v.detach().clone() for k, v in _unwrap(model).named_parameters() if v.requires_grad}

    def load(self, version: int, snapshot: Any) -> dict[str, float]:
        """Sample from version ``version`` from now on (nothing to do when it is loaded already);
        returns metrics of the batch played with it."""
        t = time.perf_counter()
        if version != self.version:
            unknown = self.model.load_state_dict(snapshot, strict=False).unexpected_keys
            if unknown:
                raise KeyError(f"the behaviour model has no parameters named {unknown[:3]}")
            self.version = version
        return {"time/generator_sync": time.perf_counter() - t}


class ServerWeights:
    """``openai``: the server samples; the versions it is due to load are saved for it to reload."""

    def __init__(self, generator: ServerGenerator, tokenizer, start_version: int):
        self.generator, self.tokenizer = generator, tokenizer
        self.policy = generator.policy
        self.version: int | None = start_version  # the server loaded the run's weights when it was made

    def snapshot(self, model, version: int, output_dir: str) -> Any:
        if not self.generator.reload_due(version):
            return None
        return str(save_generator_weights(model, self.tokenizer, output_dir, version))

    def load(self, version: int, snapshot: Any) -> dict[str, float]:
        t = time.perf_counter()
        # the completions of the batch before this one whose ids the server did not report
        out = {"generator/retokenized": float(self.policy.take_retokenized()), "generator/reloaded": 0.0}
        if snapshot is not None and version != self.version:  # else: the server keeps the last one it loaded
            self.generator.reload(snapshot)
            path = Path(snapshot)
            for old in path.parent.glob("step_*"):
                if old != path and int(old.name.removeprefix("step_")) < version:
                    shutil.rmtree(old, ignore_errors=True)  # the server holds newer weights in memory
            self.version = version
            out["generator/reloaded"] = 1.0
        out["time/generator_sync"] = time.perf_counter() - t
        return out


def behaviour_weights(model, generator: Generator, tokenizer, start_version: int):
    """The behaviour policy of ``generator``'s kind, starting at ``start_version``."""
    if isinstance(generator, ServerGenerator):
        return ServerWeights(generator, tokenizer, start_version)
    if generator.name != "hf":
        raise ValueError(f"--async-steps cannot play with --generator {generator.name} (use hf or openai)")
    return BehaviourWeights(model, generator, tokenizer)
