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

Reading bounds what a file can make this process do (:func:`load_json`, also used for the other
JSON a checkpoint holds): a file over :data:`MAX_JSON_BYTES`, nesting deeper than
:data:`MAX_DEPTH`, an integer of more than :data:`MAX_INT_DIGITS` digits, an array whose dtype is
not a plain bool, integer, float or string type, whose shape does not match its data, or whose
arrays would take more than :data:`ARRAY_BYTES_PER_FILE_BYTE` times the file's own size are
refused with one :class:`TrainerStateError` line, before anything of that size is allocated.

Checkpoints written before this format hold a pickled ``trainer_state.pt``. :func:`read_legacy`
reads one with ``torch.load(weights_only=True)``, which rebuilds only tensors, containers and
numpy arrays and refuses any other type without running it; a file that needs more is reported
with the command that converts it (for files the user trusts).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
from pathlib import Path
from typing import Any

import numpy as np

JSON_NAME = "trainer_state.json"
TENSORS_NAME = "trainer_state.safetensors"
LEGACY_NAME = "trainer_state.pt"
FORMAT = "agentgym-trainer-state"
VERSION = 1


MAX_JSON_BYTES = 256 * 2 ** 20
"""The largest JSON file read from a checkpoint (a trainer's state is tens of kilobytes)."""
MAX_DEPTH = 100
"""The deepest nesting of lists and objects read (a trainer's state nests under 20 deep)."""
MAX_INT_DIGITS = 100
"""The most digits an integer may have (a random generator's state holds 128-bit integers: 39)."""
ARRAY_BYTES_PER_FILE_BYTE = 16
"""The arrays of a state may take at most this many bytes per byte of its JSON file: JSON spends at
least one byte on each element, and a plain numeric element takes at most 16."""
_DTYPE = re.compile(r"[<>|=]?[biufU][1-9][0-9]{0,8}")  # what write_state writes: numpy's dtype.str
_SCALAR_KINDS = "biufU"


class TrainerStateError(ValueError):
    """A trainer state file that is missing, damaged or not safe to read; the message names the file."""


def _one_line(e: BaseException) -> str:
    text = " ".join(f"{type(e).__name__}: {e}".split())
    return text if len(text) <= 200 else text[:197] + "..."


def _parse_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise ValueError(f"an integer of {len(text.lstrip('-'))} digits (at most {MAX_INT_DIGITS} are read)")
    return int(text)


def _check_depth(tree: Any) -> None:
    stack = [(tree, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, (list, dict)):
            if depth > MAX_DEPTH:
                raise ValueError(f"nested more than {MAX_DEPTH} levels deep")
            stack.extend((v, depth + 1) for v in (value.values() if isinstance(value, dict) else value))


def load_json(path: str | os.PathLike) -> tuple[Any, int]:
    """``(data, size in bytes)`` of a JSON file from a checkpoint, read within the bounds above.
    Raises :class:`TrainerStateError` naming the file, in one line, for a file that is unreadable,
    not JSON, or outside the bounds; a missing file raises ``FileNotFoundError``."""
    path = Path(path)
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size > MAX_JSON_BYTES:
                raise TrainerStateError(f"{path}: {size} bytes, more than the {MAX_JSON_BYTES} read from a "
                                        f"checkpoint (not a file agentgym wrote)")
            raw = f.read(size + 1)  # read(n) sets n bytes aside first: the file's own size, not the cap
    except FileNotFoundError:
        raise
    except OSError as e:
        raise TrainerStateError(f"{path}: unreadable ({_one_line(e)})") from e
    if len(raw) > size:
        raise TrainerStateError(f"{path}: grew while being read (another process is writing it); try again")
    try:
        data = json.loads(raw.decode("utf-8"), parse_int=_parse_int)
        _check_depth(data)
    except RecursionError as e:
        raise TrainerStateError(f"{path}: nested too deep to read (at most {MAX_DEPTH} levels)") from e
    except ValueError as e:  # not UTF-8, not JSON, an integer too long, nested too deep
        raise TrainerStateError(f"{path}: unreadable ({_one_line(e)})") from e
    return data, len(raw)


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


def _decode(value: Any, tensor: Any, budget: list[int]) -> Any:
    """The tree of ``value``; ``budget``: the bytes its arrays may still take (see
    :data:`ARRAY_BYTES_PER_FILE_BYTE`), spent as arrays are made."""
    if isinstance(value, list):
        return [_decode(v, tensor, budget) for v in value]
    if not isinstance(value, dict):
        return value
    if len(value) == 1:
        (tag, body), = value.items()
        if tag == "$tensor":
            return tensor(body)
        if tag == "$tuple":
            return tuple(_decode(v, tensor, budget) for v in body)
        if tag == "$dict":
            return {_hashable(_decode(k, tensor, budget)): _decode(v, tensor, budget) for k, v in body}
        if tag == "$float":
            return float(body)
        if tag == "$ndarray":
            return _array(body, budget)
        if tag == "$np":
            dtype = _dtype(body["dtype"])
            scalar = _decode(body["value"], tensor, budget)
            if not isinstance(scalar, (bool, int, float, str)):
                raise ValueError(f"a numpy scalar of {type(scalar).__name__}")
            return dtype.type(scalar)
    return {k: _decode(v, tensor, budget) for k, v in value.items()}


def _dtype(text: Any) -> np.dtype:
    """A plain bool, integer, float or string dtype as ``write_state`` writes it, else ``ValueError``
    (a structured, sub-array, void, bytes or object dtype, which could make one element huge)."""
    if not isinstance(text, str) or not _DTYPE.fullmatch(text):
        raise ValueError(f"array dtype {str(text)[:40]!r} is not read (plain bool, integer, float and str only)")
    dtype = np.dtype(text)
    if dtype.kind not in _SCALAR_KINDS or dtype.fields is not None or dtype.subdtype is not None:
        raise ValueError(f"array dtype {text!r} is not read (plain bool, integer, float and str only)")
    return dtype


def _array(body: Any, budget: list[int]) -> np.ndarray:
    """A ``$ndarray``, its size checked against its data and the budget before it is allocated."""
    dtype, shape, data = _dtype(body["dtype"]), body["shape"], body["data"]
    if not isinstance(shape, list) or not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0
                                              for n in shape):
        raise ValueError(f"array shape {str(shape)[:40]} is not a list of sizes")
    if not isinstance(data, list) or any(isinstance(v, (list, dict)) for v in data):
        raise ValueError("array data is not a flat list")
    count = math.prod(shape)
    if count != len(data):
        raise ValueError(f"array of shape {str(shape)[:40]} holds {len(data)} values")
    nbytes = count * dtype.itemsize
    if nbytes > budget[0]:
        raise ValueError(f"an array of {count} x {dtype.itemsize} bytes, more than the file's "
                         f"{ARRAY_BYTES_PER_FILE_BYTE} bytes per byte allow")
    budget[0] -= nbytes
    return np.asarray(data, dtype=dtype).reshape(shape)


def _hashable(key: Any) -> Any:
    return tuple(_hashable(k) for k in key) if isinstance(key, list) else key


def write_state(directory: str | os.PathLike, state: dict[str, Any]) -> None:
    """Write ``state`` as ``trainer_state.json`` + ``trainer_state.safetensors`` in ``directory``."""
    from safetensors.torch import save_file

    directory = Path(directory)
    tensors: dict = {}
    tree = _encode(state, tensors, "state")
    text = json.dumps({"format": FORMAT, "version": VERSION, "state": tree})
    try:  # within the bounds a reader keeps, so what is saved reads back (a failure here, not at resume)
        size = len(text.encode("utf-8"))
        if size > MAX_JSON_BYTES:
            raise ValueError(f"{size} bytes of JSON, more than the {MAX_JSON_BYTES} a reader takes")
        doc = json.loads(text, parse_int=_parse_int)
        _check_depth(doc)
        _decode(doc["state"], lambda key: None, [ARRAY_BYTES_PER_FILE_BYTE * size])
    except (ValueError, RecursionError) as e:
        raise TypeError(f"trainer state: {_one_line(e)}: it would not read back; save less or flatter data") from e
    save_file(tensors, str(directory / TENSORS_NAME))
    with open(directory / JSON_NAME, "w") as f:
        f.write(text)


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
    doc, size = load_json(path)
    if not isinstance(doc, dict) or doc.get("format") != FORMAT or "state" not in doc:
        raise TrainerStateError(f"{path}: not an agentgym trainer state")
    if doc.get("version") != VERSION:
        raise TrainerStateError(f"{path}: trainer state version {doc.get('version')!r}; this agentgym reads "
                                f"version {VERSION}")
    getter = _lazy_tensors(directory / TENSORS_NAME) if tensors else (lambda key: None)
    try:
        state = _decode(doc["state"], getter, [ARRAY_BYTES_PER_FILE_BYTE * size])
    except TrainerStateError:
        raise
    except Exception as e:  # a hand-edited or damaged tree
        raise TrainerStateError(f"{path}: damaged ({_one_line(e)})") from e
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
