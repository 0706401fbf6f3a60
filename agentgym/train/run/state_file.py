"""Trainer state on disk in formats that cannot run code when read.

A checkpoint's trainer state (optimizer moments, RNG states, step, data position, the run's config,
extension state) is a tree of dicts, lists, tuples, numbers, strings, tensors and numpy arrays. It
is written as two files:

- ``trainer_state.json``: the tree, with each tensor replaced by ``{"$tensor": KEY}``;
- ``trainer_state.safetensors``: the tensors, by key.

Neither format can name a callable, so reading a downloaded checkpoint never executes anything
(``torch.load`` of a pickle can: a ``__reduce__`` payload runs before any check). JSON cannot say
everything the tree holds, so a few values are tagged with a one-key object whose key starts with
``$``: ``$tuple``, ``$dict`` (a dict with non-string keys, or with a key that starts with ``$``),
``$float`` (nan, inf, -inf), ``$ndarray`` and ``$np`` (numpy scalars). Anything else is refused at
save time with the path to the offending value, so an unsupported type fails the first checkpoint,
not the resume.

Checkpoints written before this format hold a pickled ``trainer_state.pt``. :func:`read_legacy`
reads one with ``torch.load(weights_only=True)``, which rebuilds only tensors, containers and
numpy arrays and refuses any other type without running it; a file that needs more is reported
with the command that converts it (for files the user trusts).
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

import numpy as np

JSON_NAME = "trainer_state.json"
TENSORS_NAME = "trainer_state.safetensors"
LEGACY_NAME = "trainer_state.pt"
FORMAT = "agentgym-trainer-state"
VERSION = 1


class TrainerStateError(ValueError):
    """A trainer state file that is missing, damaged or not safe to read; the message names the file."""


def _encode(value: Any, tensors: dict, path: str) -> Any:
    import torch

    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else {"$float": repr(value)}
    if isinstance(value, torch.Tensor):
        key = f"t{len(tensors)}"
        # safetensors refuses views that share storage: each tensor gets its own copy
        tensors[key] = value.detach().to("cpu").contiguous().clone()
        return {"$tensor": key}
    if isinstance(value, np.ndarray):
        if value.dtype == object:
            raise TypeError(f"trainer state at {path}: numpy object arrays cannot be saved safely")
        return {"$ndarray": {"dtype": value.dtype.str, "shape": list(value.shape), "data": value.ravel().tolist()}}
    if isinstance(value, np.generic):
        return {"$np": {"dtype": value.dtype.str, "value": _encode(value.item(), tensors, path)}}
    if isinstance(value, (list, tuple)):
        items = [_encode(v, tensors, f"{path}[{i}]") for i, v in enumerate(value)]
        return items if isinstance(value, list) else {"$tuple": items}
    if isinstance(value, dict):
        if all(isinstance(k, str) and not k.startswith("$") for k in value):
            return {k: _encode(v, tensors, f"{path}.{k}") for k, v in value.items()}
        return {"$dict": [[_encode(k, tensors, f"{path}<key>"), _encode(v, tensors, f"{path}[{k!r}]")]
                          for k, v in value.items()]}
    raise TypeError(f"trainer state at {path}: {type(value).__name__} cannot be saved safely; give plain "
                    "data (dict, list, tuple, str, int, float, bool, None, tensors, numpy arrays)")


def _decode(value: Any, tensor: Any) -> Any:
    if isinstance(value, list):
        return [_decode(v, tensor) for v in value]
    if not isinstance(value, dict):
        return value
    if len(value) == 1:
        (tag, body), = value.items()
        if tag == "$tensor":
            return tensor(body)
        if tag == "$tuple":
            return tuple(_decode(v, tensor) for v in body)
        if tag == "$dict":
            return {_hashable(_decode(k, tensor)): _decode(v, tensor) for k, v in body}
        if tag == "$float":
            return float(body)
        if tag == "$ndarray":
            dtype = np.dtype(body["dtype"])
            if dtype == object:
                raise ValueError("numpy object arrays are not read")
            return np.asarray(body["data"], dtype=dtype).reshape(body["shape"])
        if tag == "$np":
            return np.dtype(body["dtype"]).type(_decode(body["value"], tensor))
    return {k: _decode(v, tensor) for k, v in value.items()}


def _hashable(key: Any) -> Any:
    return tuple(_hashable(k) for k in key) if isinstance(key, list) else key


def write_state(directory: str | os.PathLike, state: dict[str, Any]) -> None:
    """Write ``state`` as ``trainer_state.json`` + ``trainer_state.safetensors`` in ``directory``."""
    from safetensors.torch import save_file

    directory = Path(directory)
    tensors: dict = {}
    tree = _encode(state, tensors, "state")
    save_file(tensors, str(directory / TENSORS_NAME))
    with open(directory / JSON_NAME, "w") as f:
        json.dump({"format": FORMAT, "version": VERSION, "state": tree}, f)


def has_state(directory: str | os.PathLike) -> bool:
    """Whether ``directory`` holds a trainer state, in this format or the legacy one."""
    directory = Path(directory)
    return (directory / JSON_NAME).is_file() or (directory / LEGACY_NAME).is_file()


def read_state(directory: str | os.PathLike, tensors: bool = True) -> dict[str, Any]:
    """The trainer state saved in ``directory`` (this format, else the legacy pickle read safely).

    ``tensors=False`` reads only the JSON and leaves each tensor as ``None`` (for callers that need
    the run's record, not its optimizer). Raises :class:`TrainerStateError` naming the file when it
    is missing, damaged or unsafe."""
    directory = Path(directory)
    path = directory / JSON_NAME
    if not path.is_file():
        if (directory / LEGACY_NAME).is_file():
            return read_legacy(directory / LEGACY_NAME)
        raise TrainerStateError(f"{directory}: no {JSON_NAME} (not a trainer checkpoint)")
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise TrainerStateError(f"{path}: unreadable ({type(e).__name__}: {e})") from e
    if not isinstance(doc, dict) or doc.get("format") != FORMAT or "state" not in doc:
        raise TrainerStateError(f"{path}: not an agentgym trainer state")
    if doc.get("version") != VERSION:
        raise TrainerStateError(f"{path}: trainer state version {doc.get('version')!r}; this agentgym reads "
                                f"version {VERSION}")
    getter = _lazy_tensors(directory / TENSORS_NAME) if tensors else (lambda key: None)
    try:
        state = _decode(doc["state"], getter)
    except TrainerStateError:
        raise
    except Exception as e:  # a hand-edited or damaged tree
        raise TrainerStateError(f"{path}: damaged ({type(e).__name__}: {e})") from e
    if not isinstance(state, dict):
        raise TrainerStateError(f"{path}: not an agentgym trainer state")
    return state


def _lazy_tensors(path: Path):
    from safetensors import safe_open

    try:
        handle = safe_open(str(path), framework="pt", device="cpu")
    except Exception as e:  # missing, truncated or not a safetensors file
        raise TrainerStateError(f"{path}: unreadable ({type(e).__name__}: {e})") from e

    def get(key: str):
        try:
            return handle.get_tensor(key)
        except Exception as e:
            raise TrainerStateError(f"{path}: tensor {key!r} missing or damaged ({e})") from e

    return get


def read_legacy(path: str | os.PathLike) -> dict[str, Any]:
    """A pickled ``trainer_state.pt`` of an older checkpoint, read without running any code it holds.

    ``weights_only=True`` rebuilds tensors, containers and the numpy arrays an RNG state holds, and
    refuses every other type unread."""
    import torch

    path = Path(path)
    safe = [np.ndarray, np.dtype, type(np.dtype(np.uint32))]
    reconstruct = getattr(getattr(np, "_core", np).multiarray, "_reconstruct", None) \
        or np.core.multiarray._reconstruct  # numpy 1.x
    safe.append(reconstruct)
    try:
        with torch.serialization.safe_globals(safe):
            state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:
        reason = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise TrainerStateError(
            f"{path}: cannot be read safely ({reason}). If you trust this file, convert it once with "
            f"`agentgym convert-checkpoint {path.parent} --trust-pickle`") from e
    if not isinstance(state, dict):
        raise TrainerStateError(f"{path}: not an agentgym trainer state")
    return state


def convert_legacy(directory: str | os.PathLike, trust_pickle: bool = False) -> Path:
    """Rewrite a checkpoint's legacy ``trainer_state.pt`` in this format; returns the JSON path.

    Without ``trust_pickle`` the pickle is read safely (as :func:`read_legacy`); with it, it is
    unpickled in full, which runs whatever code the file holds: only for files you made yourself."""
    import torch

    directory = Path(directory)
    legacy = directory / LEGACY_NAME
    if not legacy.is_file():
        raise TrainerStateError(f"{directory}: no {LEGACY_NAME} to convert")
    state = torch.load(legacy, map_location="cpu", weights_only=False) if trust_pickle else read_legacy(legacy)
    write_state(directory, state)
    read_state(directory)  # the new files read back before the old one goes
    os.replace(legacy, directory / (LEGACY_NAME + ".converted"))
    return directory / JSON_NAME


def main(argv: list[str] | None = None) -> int:
    """``agentgym convert-checkpoint DIR [--trust-pickle]``: rewrite an older checkpoint's
    ``trainer_state.pt`` as ``trainer_state.json`` + ``.safetensors`` (the old file is kept as
    ``trainer_state.pt.converted``)."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="agentgym convert-checkpoint",
        description="Rewrite a checkpoint's pickled trainer_state.pt in the format that runs no code when read. "
                    "Without --trust-pickle the pickle is read safely (tensors, containers and numpy arrays "
                    "only); --trust-pickle unpickles it in full, which runs any code it holds: only for files "
                    "you made yourself.")
    parser.add_argument("checkpoint", nargs="+", help="checkpoint step directories (holding trainer_state.pt)")
    parser.add_argument("--trust-pickle", action="store_true", help="unpickle in full (runs code in the file)")
    args = parser.parse_args(argv)
    for directory in args.checkpoint:
        try:
            print(f"wrote {convert_legacy(directory, args.trust_pickle)}")
        except TrainerStateError as e:
            parser.exit(2, f"agentgym convert-checkpoint: error: {e}\n")
    return 0
