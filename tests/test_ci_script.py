"""CI's own script (.ci/run): it runs the README's test command word for word, and the venvs it layers
over the environment it runs in see that environment, a contributor's venv as much as a system Python."""

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = (ROOT / ".ci" / "run").read_text()


def test_ci_runs_the_readmes_test_command_word_for_word():
    readme = (ROOT / "README.md").read_text()
    command = next(line for line in readme.splitlines() if line.startswith("pip install") and "pytest" in line)
    assert command in SCRIPT.splitlines()


def _layered_venv_function() -> str:
    found = re.search(r"^layered_venv\(\) \{\n.*?^\}\n", SCRIPT, flags=re.M | re.S)
    assert found, ".ci/run defines no layered_venv"
    return found.group(0)


def _venv_python(venv: Path) -> Path:
    return venv / "bin" / "python"


def _site_packages(python: Path) -> Path:
    return Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                               check=True, text=True, capture_output=True).stdout.strip())


def test_a_venv_layered_over_a_contributors_venv_sees_what_that_venv_holds(tmp_path):
    # a contributor's venv, without the system's packages: what it holds is in it alone (a package, and
    # one on a path its own .pth adds, as an editable install does)
    outer = tmp_path / "outer"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(outer)], check=True)
    site = _site_packages(_venv_python(outer))
    (site / "only_in_outer.py").write_text("WHERE = 'outer'\n")
    (tmp_path / "editable").mkdir()
    (tmp_path / "editable" / "editable_pkg.py").write_text("WHERE = 'editable'\n")
    (site / "__editable__.pth").write_text(f"{tmp_path / 'editable'}\n")

    layered = tmp_path / "layered"
    env = {**os.environ, "PATH": f"{outer / 'bin'}{os.pathsep}{os.environ['PATH']}", "VIRTUAL_ENV": str(outer)}
    subprocess.run(["bash", "-c", f"set -euo pipefail\n{_layered_venv_function()}layered_venv {layered}\n"],
                   check=True, env=env, cwd=tmp_path)
    python = _venv_python(layered)
    # what is installed into the layered venv comes first
    (_site_packages(python) / "only_in_outer.py").write_text("WHERE = 'layered'\n")
    run = subprocess.run([str(python), "-c", "import only_in_outer, editable_pkg\n"
                                             "print(only_in_outer.WHERE, editable_pkg.WHERE)"],
                         text=True, capture_output=True, cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout == "layered editable\n"


def test_a_venv_layered_over_a_system_python_adds_nothing_it_sees_already(tmp_path):
    layered = tmp_path / "layered"
    bin_dir = Path(sys.executable).parent
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    env["PATH"] = f"{bin_dir}{os.pathsep}{env['PATH']}"
    subprocess.run(["bash", "-c", f"set -euo pipefail\n{_layered_venv_function()}layered_venv {layered}\n"],
                   check=True, env=env, cwd=tmp_path)
    python = _venv_python(layered)
    if sys.prefix == sys.base_prefix:  # this Python is a system one: the venv sees its packages as they are
        assert (_site_packages(python) / "_layered_over.pth").read_text() == ""
    run = subprocess.run([str(python), "-c", "import gymnasium, agentgym"], text=True, capture_output=True,
                         cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-2000:]
