"""``--fsdp``: shard the model's weights, gradients and AdamW state across the ranks with torch
FSDP (``torch.distributed.fsdp.fully_shard``, "FSDP2"), for models whose training state does not
fit one GPU.

Each transformer block (the classes a Hugging Face model lists in ``_no_split_modules``) is one
FSDP unit, and the model is the root unit. Training forwards and backwards all-gather one block at
a time and reduce-scatter its gradients; every rank runs the same number of them (``train_step``
pads a rank that has fewer micro-batches with empty ones). Generation is different: ranks play
episodes of different lengths, so they cannot meet in a collective at every token. The rollout,
the extensions' generation, the logprob passes without gradient and the held-out evaluation
therefore run on gathered weights (:func:`gathered`): the full weights must fit one GPU, the
gradients and optimizer state (12 of the 16 bytes per parameter that AdamW training takes in
float32) need not.

Checkpoints hold the full weights and an optimizer state in the one-process layout, so a run can
resume with or without FSDP and with another rank count.
"""

from __future__ import annotations

import contextlib
from typing import Any


def is_sharded(model) -> bool:
    """Whether ``model`` is sharded: itself, or a LoRA model's base (:func:`shard`)."""
    from torch.distributed.fsdp import FSDPModule

    return isinstance(model, FSDPModule) or isinstance(_root(model), FSDPModule)


def _root(model):
    """The module FSDP's root unit wraps: the model, or a LoRA (PEFT) model's base model, which every
    forward passes through (``generate`` calls the base model, never the PEFT wrapper's forward)."""
    get_base = getattr(type(model), "get_base_model", None)
    return model.get_base_model() if get_base is not None else model


def shard(model, device: str, world_size: int):
    """Wrap ``model`` (loaded on the CPU) with ``fully_shard``: each rank keeps its shard on
    ``device``. Gradients are summed, not averaged, across ranks (the loss is already divided by
    the global token count)."""
    import torch
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import FSDPModule, fully_shard

    mesh = init_device_mesh(torch.device(device).type, (world_size,))
    root = _root(model)
    blocks = set(getattr(root, "_no_split_modules", None) or [])
    for module in list(root.modules()):
        if type(module).__name__ in blocks:
            fully_shard(module, mesh=mesh)
    fully_shard(root, mesh=mesh)
    for module in model.modules():
        if isinstance(module, FSDPModule):
            module.set_gradient_divide_factor(1.0)
            module.set_force_sum_reduction_for_comms(True)  # a plain sum (gloo has no pre-multiplied one)
    return model


def gather(*models) -> list:
    """Put the full weights of every FSDP model in ``models`` on every rank (one all-gather per
    unit; forwards then need no collective) until :func:`release`; returns what to release.
    Unsharded models pass through. Every rank must call it together."""
    from torch.distributed.fsdp import FSDPModule

    units = [m for model in models if model is not None and is_sharded(model)
             for m in model.modules() if isinstance(m, FSDPModule)]
    for unit in units:
        unit.set_reshard_after_forward(False, recurse=False)
        unit.unshard()
    return units


def release(units: list) -> None:
    """Shard again what :func:`gather` gathered."""
    for unit in units:
        unit.reshard()
        unit.set_reshard_after_forward(True, recurse=False)


@contextlib.contextmanager
def gathered(*models):
    """:func:`gather` for the block."""
    units = gather(*models)
    try:
        yield
    finally:
        release(units)


def _options():
    from torch.distributed.checkpoint.state_dict import StateDictOptions

    return StateDictOptions(full_state_dict=True, cpu_offload=True)


def full_model_state(model) -> dict[str, Any]:
    """The whole model's state dict on the CPU (rank 0 holds it; a collective: every rank calls it)."""
    from torch.distributed.checkpoint.state_dict import get_model_state_dict

    state = get_model_state_dict(model, options=_options())
    # tied weights (lm_head = embed_tokens) come back as two tensors: keep the one save_pretrained keeps
    tied = ({n for n, _ in model.named_parameters(remove_duplicate=False)} - {n for n, _ in model.named_parameters()})
    return {k: v for k, v in state.items() if k not in tied}


def full_optimizer_state(model, optimizer) -> dict[str, Any]:
    """The optimizer's full state in ``optimizer.state_dict()``'s one-process layout (the trainable
    parameters numbered in ``model.parameters()`` order) on rank 0; a collective."""
    from torch.distributed.checkpoint.state_dict import get_optimizer_state_dict

    state = get_optimizer_state_dict(model, optimizer, options=_options())
    if not state:  # ranks past 0 get nothing back
        return {}
    index = {name: i for i, name in enumerate(_trained_names(model))}
    return {"state": {index[_clean(k)]: v for k, v in state["state"].items()},
            "param_groups": [{**g, "params": [index[_clean(k)] for k in g["params"]]} for g in state["param_groups"]]}


def load_optimizer_state(model, optimizer, state: dict[str, Any]) -> None:
    """Load a one-process optimizer state (as a checkpoint holds it) into the sharded optimizer."""
    from torch.distributed.checkpoint.state_dict import set_optimizer_state_dict

    names = _trained_names(model)
    fqn = {"state": {names[int(i)]: v for i, v in state["state"].items()},
           "param_groups": [{**g, "params": [names[int(i)] for i in g["params"]]} for g in state["param_groups"]]}
    set_optimizer_state_dict(model, optimizer, fqn, options=_options())


def _trained_names(model) -> list[str]:
    """The names of the parameters the optimizer holds (every one, or a LoRA run's adapters), in order."""
    return [_clean(name) for name, p in model.named_parameters() if p.requires_grad]


def _clean(name: str) -> str:
    # activation checkpointing wrappers add a prefix to parameter names
    return name.replace("_checkpoint_wrapped_module.", "")
