"""The error a bad setting raises, and the small checks every settings group shares.

A settings group checks its own values in ``check()`` (a :class:`~agentgym.settings.SettingError`
naming the field, turned into a :class:`ConfigError` naming the flag by
:func:`agentgym.train.config.tree.check_groups`); what needs the run's other groups, the file system
or the env is checked once for the whole run (:meth:`agentgym.train.config.tree.TrainConfig.validate`).
"""

from __future__ import annotations

import math
from typing import Any


class ConfigError(ValueError):
    """A setting that cannot work; the message names the flag."""


class RunFileError(ConfigError):
    """A file of the run's ``--output-dir`` that a run cannot go on from (a resume over a hand-edited
    ``metrics.jsonl``, a folder where the run keeps a file); the message names the file and what it
    must hold."""


def finite(name: str, value: float, minimum: float | None = None, positive: bool = False) -> None:
    if not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ConfigError(f"--{name} must be a finite number, got {value!r}")
    if positive and value <= 0:
        raise ConfigError(f"--{name} must be > 0, got {value}")
    if minimum is not None and value < minimum:
        raise ConfigError(f"--{name} must be >= {minimum}, got {value}")


def at_least(name: str, value: int, minimum: int, why: str = "") -> None:
    if value < minimum:
        raise ConfigError(f"--{name} must be >= {minimum}{f' ({why})' if why else ''}, got {value}")


def is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
