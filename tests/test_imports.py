"""The trainer core imports inside a function only what is heavy or optional to load.

An import at the top of a module says what the module stands on; one inside a function defers a
dependency that costs seconds or may be missing (torch, transformers, an engine, an extra), never
dodges an import cycle (`lint-imports` checks there is none; the contracts are in pyproject.toml).
This reads every module of ``agentgym/train`` as source, so it checks what a user installs.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# what may be deferred: slow to import, or an optional extra
HEAVY = {"torch", "transformers", "tokenizers", "safetensors", "vllm", "ray", "tensorboard", "tqdm", "matplotlib",
         "textworld", "alfworld", "scienceworld", "datasets", "trl", "openai", "psutil", "pyarrow", "wandb", "mlflow",
         "trackio"}


def _path(module: str) -> Path | None:
    base = ROOT / Path(*module.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return getattr(test, "id", getattr(test, "attr", None)) == "TYPE_CHECKING"


def _imported(node: ast.Import | ast.ImportFrom) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    names = [node.module or ""]
    return names + [f"{node.module}.{a.name}" for a in node.names if _path(f"{node.module}.{a.name}")]


def _top_level_imports(module: str) -> list[str]:
    """What importing ``module`` imports: its top-level statements (TYPE_CHECKING blocks aside)."""
    out: list[str] = []

    def walk(body):
        for node in body:
            if isinstance(node, (ast.Import, ast.ImportFrom)) and getattr(node, "level", 0) == 0:
                out.extend(_imported(node))
            elif isinstance(node, ast.If) and not _is_type_checking(node):
                walk(node.body + node.orelse)
            elif isinstance(node, ast.Try):
                walk(node.body)

    path = _path(module)
    if path is not None:
        walk(ast.parse(path.read_text()).body)
    parts = module.split(".")
    return out + [".".join(parts[:k]) for k in range(1, len(parts))]  # its packages' __init__ run too


def _heavy(module: str, seen: frozenset = frozenset()) -> bool:
    """Whether importing ``module`` loads a heavy or optional dependency."""
    if module.split(".")[0] in HEAVY:
        return True
    if not module.startswith("agentgym") or module in seen:
        return False
    return any(_heavy(m, seen | {module}) for m in _top_level_imports(module) if m != module)


def _deferred_imports(path: Path):
    for fn in ast.walk(ast.parse(path.read_text())):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for node in ast.walk(fn):
                if isinstance(node, (ast.Import, ast.ImportFrom)) and getattr(node, "level", 0) == 0:
                    yield node.lineno, _imported(node)


def test_the_trainer_core_defers_only_heavy_or_optional_imports():
    light = []
    for path in sorted((ROOT / "agentgym" / "train").rglob("*.py")):
        for line, modules in _deferred_imports(path):
            if not any(_heavy(m) for m in modules):
                light.append(f"{path.relative_to(ROOT)}:{line} imports {', '.join(modules)} inside a function")
    assert not light, "\n".join(light)


def test_the_check_sees_a_light_deferred_import(tmp_path):
    # the checker itself: a module of ours that loads torch at its top may be deferred, a light one may not
    assert _heavy("agentgym.train.optim.update") and _heavy("torch.nn")
    assert not _heavy("agentgym.train.base.errors") and not _heavy("json")
    module = tmp_path / "m.py"
    module.write_text("def f():\n    import json\n    from agentgym.train.optim import update\n")
    assert [m for _, m in _deferred_imports(module)] == [["json"], ["agentgym.train.optim", "agentgym.train.optim.update"]]
