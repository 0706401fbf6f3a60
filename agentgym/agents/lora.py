"""Model directories that hold a LoRA adapter (PEFT's ``adapter_config.json`` and
``adapter_model.safetensors``) rather than whole weights, wherever agentgym takes a model directory.

An adapter directory names its base model (``base_model_name_or_path``, an absolute path when
agentgym wrote it). :func:`load_causal_lm` loads either kind: a plain checkpoint as it is, an
adapter onto its base, merged (one set of weights, the speed of the base model).
:func:`merge_adapter_dir` writes the merged model as an ordinary directory (``agentgym
merge-lora``), and :func:`base_weights` gives the merged weights under the base model's own names,
which is what a vLLM engine loads.

PEFT is imported only when an adapter is met or made (``pip install "agentgym[lora]"``).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ADAPTER_CONFIG = "adapter_config.json"
ADAPTER_WEIGHTS = ("adapter_model.safetensors", "adapter_model.bin")


class AdapterError(ValueError):
    """An adapter directory that cannot be loaded (its base missing, peft not installed); one line."""


def import_peft():
    try:
        import peft
    except ImportError as e:
        raise AdapterError('LoRA needs the peft package: pip install "agentgym[lora]"') from e
    # peft reads a transformers attribute that transformers 5 renamed: a warning per model, not the user's to act on
    warnings.filterwarnings("ignore", message="`is_gradient_checkpointing` is deprecated", category=FutureWarning)
    return peft


def is_adapter_dir(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a directory holding a PEFT adapter (and so no whole model of its own)."""
    return os.path.isfile(os.path.join(path, ADAPTER_CONFIG))


def recorded_base(path: str | os.PathLike) -> str:
    """The ``base_model_name_or_path`` an adapter directory's config records (read, not checked);
    raises :class:`AdapterError` when the config does not read or names no base."""
    config_file = Path(path) / ADAPTER_CONFIG
    try:
        config = json.loads(config_file.read_text())
        base = config.get("base_model_name_or_path") if isinstance(config, dict) else None
    except (OSError, ValueError) as e:
        raise AdapterError(f"{config_file}: not a readable adapter config ({type(e).__name__})") from e
    if not base or not isinstance(base, str):
        raise AdapterError(f"{config_file} names no base model (base_model_name_or_path)")
    return base


def adapter_base(path: str | os.PathLike) -> str:
    """The base model an adapter directory needs: its recorded ``base_model_name_or_path``, taken
    relative to the adapter directory when it is not absolute. Raises :class:`AdapterError` when it
    is not a model directory here (nothing is downloaded)."""
    config_file = Path(path) / ADAPTER_CONFIG
    base = recorded_base(path)
    where = base if os.path.isabs(base) else os.path.join(path, base)
    if not os.path.isfile(os.path.join(where, "config.json")):
        raise AdapterError(f"{config_file}: its base model {base!r} is not a model directory here; copy the base "
                           f"there, or merge the adapter where the base is (`agentgym merge-lora`)")
    return os.path.abspath(where)


def tokenizer_source(path: str | os.PathLike) -> str:
    """Where the tokenizer of a model directory is: the directory, or for an adapter directory
    without one of its own, its base."""
    own = any(os.path.isfile(os.path.join(path, f)) for f in ("tokenizer.json", "tokenizer_config.json"))
    return str(path) if own or not is_adapter_dir(path) else adapter_base(path)


def load_causal_lm(path: str | os.PathLike, device: str = "cpu", dtype=None):
    """A causal LM from ``path``: a whole checkpoint, or an adapter directory loaded onto its base and
    merged into it (a plain model). A LoRA run resuming puts its adapters on its own base instead
    (``agentgym.train.base.models.load_adapters``)."""
    import torch
    from transformers import AutoModelForCausalLM
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    dtype = dtype or torch.float32
    if not is_adapter_dir(path):
        return AutoModelForCausalLM.from_pretrained(str(path), dtype=dtype).to(device)
    peft = import_peft()
    base = AutoModelForCausalLM.from_pretrained(adapter_base(path), dtype=dtype)
    return peft.PeftModel.from_pretrained(base, str(path)).to(device).merge_and_unload()


def is_peft(model) -> bool:
    """Whether ``model`` carries PEFT adapters (without importing peft when it does not)."""
    return any(c.__module__.startswith("peft.") for c in type(_unwrap(model)).__mro__)


def _unwrap(model):
    return getattr(model, "module", model)  # a DistributedDataParallel wrapper's model


@contextlib.contextmanager
def adapters_off(model) -> Iterator[None]:
    """The base model for the block: a PEFT model's adapters are switched off (no copy is made);
    any other model is left as it is."""
    if not is_peft(model):
        yield
        return
    with _unwrap(model).disable_adapter():
        yield


@contextlib.contextmanager
def merged(model) -> Iterator[None]:
    """A PEFT model's adapters merged into its base weights for the block, then taken out again."""
    inner = _unwrap(model)
    if not is_peft(inner):
        yield
        return
    inner.merge_adapter()
    try:
        yield
    finally:
        inner.unmerge_adapter()


def base_weights(model) -> Iterator[tuple[str, Any]]:
    """``model``'s weights under the base model's own parameter names (what ``from_pretrained`` of the
    base reads, and what a vLLM engine's ``load_weights`` takes). For a PEFT model the adapter is
    merged into them: call inside :func:`merged`. Any other model: its ``state_dict()``."""
    inner = _unwrap(model)
    if not is_peft(inner):
        yield from inner.state_dict().items()
        return
    for name, tensor in inner.state_dict().items():
        if "lora_" in name:
            continue
        name = name.removeprefix("base_model.model.").replace(".base_layer.", ".")
        yield name, tensor


def merge_adapter_dir(adapter_dir: str | os.PathLike, out_dir: str | os.PathLike) -> Path:
    """Write the base model of ``adapter_dir`` with the adapter merged in to ``out_dir``, an ordinary
    model directory (weights, config, the adapter directory's tokenizer or else the base's); written
    under a temporary name and renamed when complete. Returns ``out_dir``."""
    from transformers import AutoTokenizer

    if not is_adapter_dir(adapter_dir):
        raise AdapterError(f"{adapter_dir} holds no LoRA adapter ({ADAPTER_CONFIG})")
    out, tmp = Path(out_dir), Path(f"{out_dir}.tmp")
    if out.exists():
        raise AdapterError(f"{out} exists; give a new directory")
    model = load_causal_lm(adapter_dir)  # merged
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(tmp)
    AutoTokenizer.from_pretrained(tokenizer_source(adapter_dir)).save_pretrained(tmp)
    for extra in ("agentgym_sft.json",):  # a cold start's record of what it trained on travels with it
        if (Path(adapter_dir) / extra).is_file():
            shutil.copy2(Path(adapter_dir) / extra, tmp / extra)
    os.replace(tmp, out)
    return out


def main(argv: list[str] | None = None) -> int:
    """``agentgym merge-lora ADAPTER_DIR OUT_DIR``."""
    import argparse
    import sys

    parser = argparse.ArgumentParser(
        prog="agentgym merge-lora",
        description="Merge a LoRA adapter directory (a LoRA run's checkpoint, or its SFT output) into the base "
                    "model it names, and write the result as an ordinary model directory: it loads with "
                    "from_pretrained, vLLM and every agentgym command without peft.")
    parser.add_argument("adapter_dir", help="a directory with adapter_config.json (e.g. RUN/checkpoints/step_100)")
    parser.add_argument("out_dir", help="where the merged model goes (a new directory)")
    args = parser.parse_args(argv)
    try:
        out = merge_adapter_dir(args.adapter_dir, args.out_dir)
    except AdapterError as e:
        print(f"agentgym merge-lora: {e}", file=sys.stderr)
        return 2
    print(f"merged {args.adapter_dir} into its base {adapter_base(args.adapter_dir)}: {out}")
    return 0
