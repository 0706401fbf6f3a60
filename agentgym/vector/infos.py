"""Per-env info dicts -> Gymnasium's vector info layout.

The layout is exactly what ``VectorEnv._add_info`` builds: a dict of arrays, each key ``k`` with a
bool mask ``_k``; nested dicts become nested layouts; ``final_obs`` is an object array. Text envs
put a dozen keys in every info and cheap envs step in a tenth of a millisecond, so this runs on
every step and is kept lean: arrays are made once per key, with dtypes looked up by Python type.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

_SCALAR_DTYPES = {bool: np.dtype(np.bool_), int: np.dtype(np.int64), float: np.dtype(np.float64)}


def _empty(value: Any, n: int) -> np.ndarray:
    dtype = _SCALAR_DTYPES.get(type(value))
    if dtype is not None:
        return np.zeros(n, dtype=dtype)
    if isinstance(value, np.number):
        return np.zeros(n, dtype=value.dtype)
    if isinstance(value, np.ndarray):
        return np.zeros((n, *value.shape), dtype=value.dtype)
    return np.full(n, None, dtype=object)


def batch_infos(items: Sequence[tuple[int, dict[str, Any]]], num_envs: int, into: dict | None = None) -> dict:
    """Merge ``(env index, info)`` pairs into a vector info dict (``into`` if given)."""
    out = into if into is not None else {}
    nested: dict[str, list[tuple[int, dict]]] = {}
    for i, info in items:
        for key, value in info.items():
            if type(value) is dict and key != "final_obs":
                nested.setdefault(key, []).append((i, value))
                continue
            array = out.get(key)
            if array is None or type(array) is dict:
                array = out[key] = (np.full(num_envs, None, dtype=object) if key == "final_obs"
                                    else _empty(value, num_envs))
                mask = out[f"_{key}"] = np.zeros(num_envs, dtype=np.bool_)
            else:
                mask = out[f"_{key}"]
            array[i] = value
            mask[i] = True
    for key, pairs in nested.items():
        existing = out.get(key)
        out[key] = batch_infos(pairs, num_envs, existing if isinstance(existing, dict) else None)
        mask = out.get(f"_{key}")
        if mask is None or existing is None:
            mask = out[f"_{key}"] = np.zeros(num_envs, dtype=np.bool_)
        for i, _ in pairs:
            mask[i] = True
    return out
