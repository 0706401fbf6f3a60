"""Loading the trained model and its tokenizer from a Hugging Face checkpoint directory."""

from __future__ import annotations


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
