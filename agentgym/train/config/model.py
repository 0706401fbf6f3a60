"""The trained model and where it runs (:class:`ModelConfig`)."""

from __future__ import annotations

import os
from dataclasses import dataclass

from agentgym.agents.lora import AdapterError, adapter_base, is_adapter_dir
from agentgym.train.base.errors import ConfigError, at_least
from agentgym.train.config.presets import TINY_MODELS


@dataclass
class ModelConfig:
    """The model and where it runs."""

    model: str = "tiny-wide"
    """local checkpoint directory (a LoRA adapter directory loads onto its base, merged), or `tiny-wide` / `tiny` / `tiny-small` to build one offline (docs/trainers.md)"""
    device: str = "auto"
    """`auto`, `cpu` or `cuda[:N]`"""
    cpu_threads: int = 0
    """torch intra-op threads on CPU (0: this process's share of the cores it may use, affinity and cgroup quota counted, split among torchrun's local ranks)"""
    bf16: bool = True
    """bf16 autocast on GPU (ignored on CPU)"""
    gradient_checkpointing: bool = True
    """activation checkpointing on GPU (ignored on CPU)"""
    fsdp: bool = False
    """shard weights, gradients and optimizer state across torchrun's processes with torch FSDP (RL trainers)"""

    def validate(self) -> None:
        if self.model not in TINY_MODELS:
            if not os.path.isdir(self.model):
                raise ConfigError(f"--model {self.model!r} is not a directory; give a local Hugging Face checkpoint "
                                  f"directory or one of {', '.join(TINY_MODELS)} (nothing is downloaded)")
            if not os.path.isfile(os.path.join(self.model, "config.json")):
                if not is_adapter_dir(self.model):
                    raise ConfigError(f"--model {self.model!r} has no config.json: not a Hugging Face checkpoint "
                                      "directory (nor a LoRA adapter directory)")
                try:  # an adapter directory: it loads onto its base, merged
                    adapter_base(self.model)
                except AdapterError as e:
                    raise ConfigError(f"--model {self.model!r}: {e}") from None
        if not (self.device in ("auto", "cpu") or self.device.startswith("cuda")):
            raise ConfigError(f"--device must be auto, cpu or cuda[:N], got {self.device!r}")
        at_least("cpu-threads", self.cpu_threads, 0)
        if self.fsdp and "WORLD_SIZE" not in os.environ:
            raise ConfigError("--fsdp shards the model across processes: launch with "
                              "`torchrun --nproc_per_node N` or `accelerate launch`")
