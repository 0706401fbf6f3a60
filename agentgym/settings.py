"""Checks of settings dataclasses (sampling, loss, rollout), run when one is made.

A settings class checks its values in ``check()`` and raises :class:`SettingError`, which names
the setting as code spells it (``top_p must be in (0, 1], got 2.0``). It runs ``check()`` from
``__post_init__`` through :func:`check_on_init`, so a bad value in code fails where it is
written. While a command line is parsed (:func:`checks_deferred`), the parser makes the groups
first and checks the whole tree after, so that the error names the flag the user typed
(``--top-p``, ``--gcd.judge-loss.eps-low``) in one line rather than the parser's own report.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

_deferred: contextvars.ContextVar[bool] = contextvars.ContextVar("agentgym_checks_deferred", default=False)


class SettingError(ValueError):
    """A setting value that cannot work: ``name`` (the field) and ``problem`` (what is wrong)."""

    def __init__(self, name: str, problem: str):
        self.name, self.problem = name, problem
        super().__init__(f"{name} {problem}")


def check_on_init(settings: Any) -> None:
    """``settings.check()``, unless a command line is being parsed (it is checked after)."""
    if not _deferred.get():
        settings.check()


@contextmanager
def checks_deferred() -> Iterator[None]:
    """Make settings without checking them (the caller checks the finished tree)."""
    token = _deferred.set(True)
    try:
        yield
    finally:
        _deferred.reset(token)
