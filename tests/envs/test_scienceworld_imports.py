"""The ScienceWorld modules import one way (levels -> tasks, env -> both), each on its own."""

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

import agentgym.envs.scienceworld as package

PACKAGE = "agentgym.envs.scienceworld"
SOURCES = {f"{PACKAGE}.{p.stem}" if p.stem != "__init__" else PACKAGE: p
           for p in sorted(Path(package.__file__).parent.glob("*.py"))}
ROOT = str(Path(package.__file__).parents[3])


def _fresh(code: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)


@pytest.mark.parametrize("module", sorted(SOURCES))
def test_each_module_imports_alone_in_a_fresh_interpreter(module):
    done = _fresh(f"import {module}")
    assert done.returncode == 0, done.stderr


def _imports_of(path: Path) -> set[str]:
    """The package's modules that ``path`` imports anywhere, inside functions too."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                 else [node.module] if isinstance(node, ast.ImportFrom) and node.module and not node.level else [])
        found.update(n for n in names if n in SOURCES and n != PACKAGE)
    return found


def test_the_package_has_no_import_cycle_even_through_imports_inside_functions():
    graph = {module: _imports_of(path) for module, path in SOURCES.items()}

    def reaches(start, target, seen=()):
        return any(nxt == target or (nxt not in seen and reaches(nxt, target, seen + (nxt,)))
                   for nxt in graph[start])

    cycles = sorted(m for m in graph if reaches(m, m))
    assert not cycles, {m: sorted(graph[m]) for m in cycles}


def test_tasks_answers_a_levels_variations_without_importing_levels():
    done = _fresh(f"import sys; from {PACKAGE}.tasks import split_variations; "
                  f"print(split_variations('boil', 'L1'), '{PACKAGE}.levels' in sys.modules)")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["range(21,", "30)", "False"]
