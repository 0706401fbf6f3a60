"""Optional dependencies: check up front that the modules a command needs are installed.

A benchmark that imports matplotlib only to draw its plot at the end would otherwise measure for
half an hour and then lose the run on an ``ImportError``. Scripts and commands call
:func:`require` before any work, and the message names the extra that installs what is missing.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence

from gymnasium.error import DependencyNotInstalled


def missing_modules(modules: Sequence[str]) -> list[str]:
    """The top-level modules in ``modules`` that cannot be imported here."""
    missing = []
    for name in modules:
        try:
            found = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):  # a broken install counts as missing
            found = False
        if not found:
            missing.append(name)
    return missing


def require(modules: Sequence[str], extra: str, purpose: str) -> None:
    """Raise ``DependencyNotInstalled`` naming the extra if any of ``modules`` is missing.

    >>> require(["json"], "bench", "this check")
    >>> require(["no_such_module_here"], "bench", "the plot")
    Traceback (most recent call last):
    ...
    gymnasium.error.DependencyNotInstalled: the plot needs no_such_module_here, which is not installed: pip install "agentgym[bench]" (in a clone: pip install -e ".[bench]")
    """
    missing = missing_modules(modules)
    if missing:
        raise DependencyNotInstalled(
            f"{purpose} needs {', '.join(missing)}, which {'is' if len(missing) == 1 else 'are'} not installed: "
            f'pip install "agentgym[{extra}]" (in a clone: pip install -e ".[{extra}]")')


def require_for_script(modules: Sequence[str], extra: str, script: str) -> None:
    """:func:`require` for a script's first lines: exit with the message rather than a traceback."""
    try:
        require(modules, extra, script)
    except DependencyNotInstalled as e:
        raise SystemExit(str(e)) from None
