"""The training methods, each declared once: :func:`register` at the end of its module.

A :class:`Method` is what every list of methods reads: ``agentgym train METHOD`` and the thin
``trainers/METHOD.py`` scripts (:mod:`agentgym.train.command`), ``agentgym eval`` rebuilding a
checkpoint's extensions (:data:`agentgym.train.methods.BY_NAME`), the learning-curves benchmark and
the test that docs/trainers.md documents every flag. Adding a method is its module with its
registration, its docs and its tests (docs/architecture.md, "Adding a method").
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agentgym.train.hooks import TrainerExtension


def _no_extensions(_config: Any) -> list[TrainerExtension]:
    return []


@dataclass(frozen=True)
class Method:
    """One training method, as ``agentgym train NAME`` runs it."""

    name: str
    """``agentgym train NAME``, ``trainers/NAME.py`` and the name a run records"""
    summary: str
    """one line in ``agentgym train --help``"""
    description: str
    """the text above its flags in ``--help``"""
    config: type
    """its config tree: :class:`~agentgym.train.config.tree.TrainConfig` plus its own group (``--vspo.*``)"""
    defaults: Callable[[], Any]
    """the config a run with no flags starts from"""
    extensions: Callable[[Any], list[TrainerExtension]] = _no_extensions
    """what it adds to the loop, from a config (the cold start asks them too)"""
    extension: tuple[type, type] | None = None
    """its extension class and that class's config, under the config group ``name``: what
    ``agentgym eval`` rebuilds from a checkpoint that recorded state under ``name``"""
    run_name: Callable[[Any], str] | None = None
    """the name the run records (default ``name``; GCD's says its base: ``gcd-gigpo``)"""
    doc: str = ""
    """its section in docs/trainers.md"""
    cold_start: bool = False
    """a cold start (supervised fine-tuning), run by the SFT loop, not the RL loop"""

    def recorded_name(self, config: Any) -> str:
        return self.run_name(config) if self.run_name is not None else self.name


METHODS: dict[str, Method] = {}
"""Every registered method by name: GRPO (the baseline), the other RL methods by name, then the cold
start (an order that does not depend on which module imported which first)."""


def register(method: Method) -> Method:
    """Declare ``method``; a second method of the same name is a mistake, refused."""
    if method.name in METHODS:
        raise ValueError(f"a training method named {method.name!r} is already registered")
    METHODS[method.name] = method
    ordered = sorted(METHODS.values(), key=lambda m: (m.cold_start, m.name != "grpo", m.name))
    METHODS.clear()
    METHODS.update((m.name, m) for m in ordered)
    return method


def get_method(name: str) -> Method:
    """The method registered as ``name``; an unknown name is a ``ValueError`` naming the closest."""
    if name in METHODS:
        return METHODS[name]
    close = difflib.get_close_matches(name.lower(), list(METHODS), n=1)
    hint = f" (did you mean {close[0]}?)" if close else ""
    raise ValueError(f"unknown training method {name!r}{hint}; registered: {', '.join(METHODS)}")
