"""The test tiers: a test marked with why it is slow (engine, learning, browser, network, multiproc)
is slow by that alone, so the quick tier (`-m "not slow"`) leaves it out; every marker is registered."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REASONS = ("engine", "learning", "browser", "network", "multiproc")


def _pytest(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    # no third-party plugins: the hook under test is the project's conftest, and each start stays short
    env = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    return subprocess.run([sys.executable, "-m", "pytest", "-c", str(ROOT / "pyproject.toml"), "--rootdir",
                           str(tmp_path), "--strict-markers", "-p", "no:cacheprovider", "-q", "-o", "addopts=",
                           *args, str(tmp_path / "test_tiers.py")],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)


def test_a_test_marked_with_a_reason_is_slow_and_left_out_of_the_quick_tier(tmp_path):
    shutil.copy(ROOT / "tests" / "conftest.py", tmp_path / "conftest.py")
    # each test asserts the markers it ends up with; `slow` among them exactly where a reason is given
    tests = [f"@pytest.mark.{reason}\ndef test_{reason}(request):\n"
             f"    assert request.node.get_closest_marker('slow')\n" for reason in REASONS]
    tests += ["@pytest.mark.slow\ndef test_slow():\n    pass\n",
              "@pytest.mark.gpu\ndef test_gpu(request):\n    assert not request.node.get_closest_marker('slow')\n",
              "def test_quick(request):\n    assert not request.node.get_closest_marker('slow')\n"]
    (tmp_path / "test_tiers.py").write_text("import pytest\n\n\n" + "\n\n".join(tests))

    everything = _pytest(tmp_path, "-rA")
    assert everything.returncode == 0, everything.stdout[-3000:] + everything.stderr[-3000:]
    assert "8 passed" in everything.stdout
    quick = _pytest(tmp_path, "--collect-only", "-m", "not slow")
    assert quick.returncode == 0, quick.stdout[-3000:] + quick.stderr[-3000:]
    assert sorted(line.split("::")[1] for line in quick.stdout.splitlines() if "::" in line) == ["test_gpu",
                                                                                                 "test_quick"]


def test_every_run_prints_its_25_slowest_tests(tmp_path):
    (tmp_path / "test_tiers.py").write_text("def test_one():\n    pass\n")
    run = _pytest(tmp_path, "-o", f"addopts={_addopts()}")
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert "slowest 25 durations" in run.stdout


def _addopts() -> str:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["addopts"]
