"""The trainer core's former module paths, each still importable as the module's new home.

The core is grouped by concern (``run/``, ``rollout/``, ``optim/``, ``methods/``, ``coldstart/``).
Scripts, notebooks and pickles written against the flat layout name modules by their former
paths (``from agentgym.train.update import train_step``, ``agentgym.train.extensions.gcd``,
``agentgym.train.config``). :data:`MOVED` maps each former path to where the module is now; an
import of a former path gives the very module object of the new one (not a copy), so patching it
(``mock.patch("agentgym.train.config.X")``) acts on the code that runs, and a class unpickled under
its former path is the class in use. A moved package takes its submodules with it
(``agentgym.train.gcd.judge`` is ``agentgym.train.methods.gcd.judge``).

``agentgym.train.rollout`` was a module and is now the package of the rollout modules; the names
that module held (``Episode``, ``collect_episodes``...) are read from :data:`BECAME_PACKAGE`'s
module by the package's ``__getattr__`` (:func:`former_names`).

:func:`install` puts the finder first on ``sys.meta_path``; ``agentgym.train`` calls it when
imported, which is before any of its former submodule paths can be looked up.

>>> import agentgym.train.config, agentgym.train.run.config
>>> agentgym.train.config is agentgym.train.run.config
True
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any

MOVED: dict[str, str] = {
    "agentgym.train.config": "agentgym.train.run.config",
    "agentgym.train.flags": "agentgym.train.run.flags",
    "agentgym.train.presets": "agentgym.train.run.presets",
    "agentgym.train.env_check": "agentgym.train.run.env_check",
    "agentgym.train.checkpoint": "agentgym.train.run.checkpoint",
    "agentgym.train.checkpoint_record": "agentgym.train.run.checkpoint_record",
    "agentgym.train.state_file": "agentgym.train.run.state_file",
    "agentgym.train.metrics": "agentgym.train.run.metrics",
    "agentgym.train.threads": "agentgym.train.run.threads",
    "agentgym.train.setup": "agentgym.train.run.helpers",
    "agentgym.train.run_setup": "agentgym.train.run.setup",
    "agentgym.train.run_state": "agentgym.train.run.state",
    "agentgym.train.run_view": "agentgym.train.run.view",
    "agentgym.train.collector": "agentgym.train.rollout.collector",
    "agentgym.train.envs": "agentgym.train.rollout.envs",
    "agentgym.train.generators": "agentgym.train.rollout.generators",
    "agentgym.train.tasks": "agentgym.train.rollout.tasks",
    "agentgym.train.chat": "agentgym.train.rollout.chat",
    "agentgym.train.samples": "agentgym.train.rollout.samples",
    "agentgym.train.stats": "agentgym.train.rollout.stats",
    "agentgym.train.loss": "agentgym.train.optim.loss",
    "agentgym.train.update": "agentgym.train.optim.update",
    "agentgym.train.distributed": "agentgym.train.optim.distributed",
    "agentgym.train.fsdp": "agentgym.train.optim.fsdp",
    "agentgym.train.sft": "agentgym.train.coldstart.sft",
    "agentgym.train.expert": "agentgym.train.coldstart.expert",
    "agentgym.train.advantages": "agentgym.train.methods.grpo",
    "agentgym.train.vspo": "agentgym.train.methods.vspo",
    "agentgym.train.gigpo": "agentgym.train.methods.gigpo",
    "agentgym.train.dapo": "agentgym.train.methods.dapo",
    "agentgym.train.ppo": "agentgym.train.methods.ppo",
    "agentgym.train.gcd": "agentgym.train.methods.gcd",
    "agentgym.train.extensions": "agentgym.train.methods",
    "agentgym.train.extensions.vspo": "agentgym.train.methods.vspo",
    "agentgym.train.extensions.gigpo": "agentgym.train.methods.gigpo",
    "agentgym.train.extensions.dapo": "agentgym.train.methods.dapo",
    "agentgym.train.extensions.ppo": "agentgym.train.methods.ppo",
    "agentgym.train.extensions.gcd": "agentgym.train.methods.gcd.extension",
}
"""Former module path -> the path it lives at now."""

BECAME_PACKAGE: dict[str, str] = {
    "agentgym.train.rollout": "agentgym.train.rollout.episodes",
}
"""A former module path that is now a package -> the module that holds the former module's names."""


def new_path(name: str) -> str | None:
    """Where the module formerly at ``name`` lives now (None: ``name`` did not move). A submodule
    of a moved package moved with it; an entry for the submodule itself wins."""
    if name in MOVED:
        return MOVED[name]
    parts = name.split(".")
    for cut in range(len(parts) - 1, 2, -1):  # longest moved prefix below agentgym.train
        prefix = ".".join(parts[:cut])
        if prefix in MOVED:
            return ".".join([MOVED[prefix], *parts[cut:]])
    return None


class _Alias(importlib.abc.Loader):
    """Loads a former path as the module at its new path."""

    def __init__(self, target: str):
        self.target = target
        self._spec: importlib.machinery.ModuleSpec | None = None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        module = importlib.import_module(self.target)
        self._spec = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        # The import system has just set the former path's spec on the module: give it its own back,
        # so that reload, pickling by spec and tracebacks keep naming where the code is.
        module.__spec__ = self._spec


class _FormerPaths(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        new = new_path(fullname)
        try:
            if new is None or importlib.util.find_spec(new) is None:
                return None
        except ModuleNotFoundError:  # its new parent is not there either: no such module
            return None
        return importlib.machinery.ModuleSpec(fullname, _Alias(new))


_FINDER = _FormerPaths()


def install() -> None:
    """Make the former paths importable (idempotent)."""
    if not any(isinstance(finder, _FormerPaths) for finder in sys.meta_path):
        sys.meta_path.insert(0, _FINDER)


def former_names(package: str) -> Callable[[str], Any]:
    """The module ``__getattr__`` of ``package``, a former module path that is now a package: it
    answers the names the former module held from :data:`BECAME_PACKAGE`'s module."""
    holder = BECAME_PACKAGE[package]

    def __getattr__(name: str) -> Any:
        if not name.startswith("__"):
            module = importlib.import_module(holder)
            if hasattr(module, name):
                return getattr(module, name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__
