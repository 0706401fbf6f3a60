"""The observation and action space of every agentgym env: any Unicode text."""

from __future__ import annotations

import string

from gymnasium.spaces import Text

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

