"""Small setup helpers the trainer scripts share: device, seeding, task seeds, envs, models."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from agentgym.train.rollout.envs import EnvBatch
from agentgym.train.rollout.tasks import task_seed  # noqa: F401  (re-exported: scripts seed with it)

if TYPE_CHECKING:
    from agentgym.vector.options import BackendOptions


def resolve_device(device: str) -> str:
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ValueError(f"device {device!r} asked for, but CUDA is not available here")
    return device


def seed_everything(seed: int) -> None:
    import torch

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def parse_env_kwargs(text: str | dict | None) -> dict[str, Any]:
    if not text:
        return {}
    if isinstance(text, dict):
        return dict(text)
    from agentgym.envs.arguments import json_object

    return json_object(text)


def make_env_batch(env: str | Callable[[], Any], num_groups: int, group_size: int,
                   backend: str | BackendOptions = "sync", env_kwargs: dict[str, Any] | None = None) -> EnvBatch:
    """``num_groups`` groups of ``group_size`` envs on ``agentgym.make_vec``: ``env`` is a registered
    id or a callable that makes one env; ``backend`` a backend name or its options object
    (:mod:`agentgym.vector.options`; a trainer's comes from ``EnvConfig.backend_options()``)."""
    from agentgym.vector import AgentVectorEnv, make_vec

    if isinstance(env, str):
        vec = make_vec(env, num_groups * group_size, group_size, backend, **(env_kwargs or {}))
    else:
        vec = AgentVectorEnv(env, num_groups * group_size, group_size=group_size, backend=backend,
                             env_kwargs=env_kwargs)
    return EnvBatch(vec, num_groups, group_size)


def load_model(path: str, device: str, gradient_checkpointing: bool = False, trainable: bool = True):
    """A causal LM in float32 (bf16 comes from autocast, so optimizer state stays exact)."""
    import torch
    from transformers import AutoModelForCausalLM
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).to(device)
    if gradient_checkpointing and trainable:
        model.gradient_checkpointing_enable()
        model.config.use_cache = False
    if not trainable:
        model.eval()
        model.requires_grad_(False)
    return model


def load_tokenizer(path: str):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(path)
    if tok.pad_token_id is None:
        tok.pad_token = tok.eos_token
    return tok
