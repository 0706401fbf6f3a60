"""Loading the trained model and its tokenizer from a Hugging Face checkpoint directory, and putting
LoRA adapters on it (:func:`add_adapters`)."""

from __future__ import annotations

import os

from agentgym.agents.lora import import_peft, is_peft, load_causal_lm, tokenizer_source


def load_model(path: str, device: str, gradient_checkpointing: bool = False, trainable: bool = True):
    """A causal LM in float32 (bf16 comes from autocast, so optimizer state stays exact).

    ``path`` may be a LoRA adapter directory (:mod:`agentgym.agents.lora`): it loads onto its base,
    merged, so it serves as a base model like any other."""
    import torch

    model = load_causal_lm(path, device, torch.float32)
    if not trainable:
        model.eval()
        model.requires_grad_(False)
    elif gradient_checkpointing:
        enable_gradient_checkpointing(model)
    return model


def enable_gradient_checkpointing(model) -> None:
    """Activation checkpointing; with frozen embeddings (LoRA) their output is made to require grad,
    or the checkpointed blocks would have nothing to differentiate."""
    model.gradient_checkpointing_enable()
    model.config.use_cache = False
    if is_peft(model):
        model.enable_input_require_grads()


def add_adapters(model, lora, base_path: str, gradient_checkpointing: bool = False):
    """``model`` (frozen) with new LoRA adapters of ``lora`` (a
    :class:`~agentgym.train.config.lora.LoraConfig`), recording ``base_path`` (absolute) as the base
    its checkpoints need."""
    peft = import_peft()
    model = peft.get_peft_model(model, lora.peft_config())
    model.peft_config["default"].base_model_name_or_path = os.path.abspath(base_path)  # not the name it was loaded by
    if gradient_checkpointing:
        enable_gradient_checkpointing(model)
    return model


def load_adapters(model, adapter_dir: str, gradient_checkpointing: bool = False):
    """``model`` (frozen) with the trainable adapters saved in ``adapter_dir`` (a LoRA run's
    checkpoint, resuming): put on the base the run was given, wherever the checkpoint says its base
    was, so a run directory that moved with its base still resumes."""
    model = import_peft().PeftModel.from_pretrained(model, adapter_dir, is_trainable=True)
    if gradient_checkpointing:
        enable_gradient_checkpointing(model)
    return model


def trainable_parameters(model) -> list:
    """The parameters the optimizer updates: all of them in full fine-tuning, the adapters' with LoRA."""
    return [p for p in model.parameters() if p.requires_grad]


def load_tokenizer(path: str):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tokenizer_source(path))
    if tok.pad_token_id is None:
        tok.pad_token = tok.eos_token
    return tok
