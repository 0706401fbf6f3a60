"""Where a run computes: its device, its seeds and the autocast of its forward passes."""

from __future__ import annotations

import contextlib
import random

import numpy as np


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


def autocast_context(device, bf16: bool):
    """bf16 autocast on a GPU when asked for; nothing on the CPU."""
    import torch

    if bf16 and torch.device(device).type == "cuda":
        return torch.autocast("cuda", dtype=torch.bfloat16)
    return contextlib.nullcontext()
