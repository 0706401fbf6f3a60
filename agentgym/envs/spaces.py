"""The observation and action space of every agentgym env: any Unicode text."""

from __future__ import annotations

import multiprocessing
import string
from collections.abc import Sequence

import numpy as np
from gymnasium.spaces import Text
from gymnasium.vector.utils import create_shared_memory, read_from_shared_memory, write_to_shared_memory

# What `sample()` draws from. Membership (`contains`) is wider: every Unicode scalar value, since
# observations carry whatever a corpus or an engine holds and any string is a legal action.
SAMPLE_ALPHABET = string.ascii_letters + string.digits + string.punctuation + " \n\t" + "éüñ中"


class UnicodeText(Text):
    """A ``gymnasium.spaces.Text`` whose charset is all of Unicode (lone surrogates excepted).

    Gymnasium's ``Text`` stores its charset as explicit sets, which for all of Unicode would cost
    hundreds of MB per space; this subclass keeps a small sampling alphabet there and checks
    membership by encodability instead. ``sample()`` draws lengths up to ``sample_max_length`` so a
    random action stays a realistic size even though ``max_length`` is large.

    >>> space = UnicodeText(max_length=100)
    >>> space.contains("look at the 中文 <answer>x</answer>\\n")
    True
    >>> space.contains("\\udcff")
    False
    """

    def __init__(self, max_length: int, *, min_length: int = 0, sample_max_length: int = 64, seed=None):
        super().__init__(max_length, min_length=min_length, charset=SAMPLE_ALPHABET, seed=seed)
        self.sample_max_length = min(int(sample_max_length), self.max_length)

    def contains(self, x) -> bool:
        if not isinstance(x, str) or not (self.min_length <= len(x) <= self.max_length):
            return False
        try:
            x.encode("utf-8")
        except UnicodeEncodeError:
            return False
        return True

    def sample(self, mask=None, probability=None) -> str:
        if mask is not None or probability is not None:
            return super().sample(mask=mask, probability=probability)
        length = int(self.np_random.integers(self.min_length, self.sample_max_length + 1))
        idx = self.np_random.integers(0, len(self._char_list), size=length)
        return "".join(self._char_list[i] for i in idx)

    def __repr__(self) -> str:
        return f"UnicodeText({self.min_length}, {self.max_length})"

    def __eq__(self, other) -> bool:
        return (isinstance(other, UnicodeText) and self.min_length == other.min_length
                and self.max_length == other.max_length)

    def __hash__(self) -> int:
        return hash(("UnicodeText", self.min_length, self.max_length))


def text_spaces(max_observation_chars: int, max_action_chars: int) -> tuple[UnicodeText, UnicodeText]:
    """(observation_space, action_space) for an env."""
    return UnicodeText(max_observation_chars), UnicodeText(max_action_chars)



# Gymnasium's AsyncVectorEnv keeps observations in shared memory by default (shared_memory=True).
# Its Text support decodes that memory into strings once, when the vector env is built, so every
# batch after it would be the empty buffer of that moment ("a" * max_length). For UnicodeText each
# slot holds its text's length, then its code points, and a batch decodes what the workers last
# wrote when it is read (AsyncVectorEnv hands out a deep copy of it: a tuple of str).


class SharedTexts(Sequence):
    """The texts of a batch in shared memory, decoded when read; a deep copy is a tuple of str.

    What ``AsyncVectorEnv(..., copy=False)`` returns as observations: like Gymnasium's arrays in
    shared memory, it shows what the workers wrote last."""

    def __init__(self, buffer, n: int, max_length: int):
        self._buffer = buffer  # keeps the memory alive while this view exists
        self._rows = np.frombuffer(buffer.get_obj(), dtype=np.int32).reshape(n, max_length + 1)

    def __len__(self) -> int:
        return len(self._rows)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return tuple(self[i] for i in range(len(self))[index])
        row = self._rows[index]
        return row[1: 1 + int(row[0])].tobytes().decode("utf-32-le", "surrogatepass")

    def __deepcopy__(self, memo) -> tuple[str, ...]:
        return tuple(self)

    def __eq__(self, other) -> bool:
        return isinstance(other, (tuple, SharedTexts)) and tuple(self) == tuple(other)

    __hash__ = None

    def __repr__(self) -> str:
        return f"SharedTexts({tuple(self)!r})"


@create_shared_memory.register(UnicodeText)
def _create_unicode_text_shared_memory(space: UnicodeText, n: int = 1, ctx=multiprocessing):
    return ctx.Array(np.dtype(np.int32).char, n * (space.max_length + 1))


@write_to_shared_memory.register(UnicodeText)
def _write_unicode_text_to_shared_memory(space: UnicodeText, index: int, value: str, shared_memory) -> None:
    codes = np.frombuffer(value.encode("utf-32-le", "surrogatepass"), dtype=np.int32)
    if len(codes) > space.max_length:
        raise ValueError(f"observation of {len(codes)} characters does not fit {space!r}")
    row = np.frombuffer(shared_memory.get_obj(), dtype=np.int32)[index * (space.max_length + 1):]
    row[0] = len(codes)
    row[1: 1 + len(codes)] = codes


@read_from_shared_memory.register(UnicodeText)
def _read_unicode_text_from_shared_memory(space: UnicodeText, shared_memory, n: int = 1) -> SharedTexts:
    return SharedTexts(shared_memory, n, space.max_length)
