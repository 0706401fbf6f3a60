"""A user who installs agentgym from its wheel, with no checkout, trains with ``agentgym train``."""

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

TINY = ["--num-steps", "1", "--cold-start.num-steps", "2", "--cold-start.num-episodes", "8", "--eval-episodes", "2",
        "--num-groups", "2", "--group-size", "2", "--max-new-tokens", "16", "--cpu-threads", "1"]


def build_wheel(out: Path) -> Path:
    """The project's wheel, built offline from a copy of the checkout (which gets no build files)."""
    src = out / "src"
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(".git", "*.egg-info", "build", "__pycache__", "runs",
                                                             "tests", "benchmarks", "trainers", "docs", ".venv*"))
    run = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
                          "--wheel-dir", str(out / "dist"), str(src)], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    (wheel,) = (out / "dist").glob("agentgym-*.whl")
    return wheel


@pytest.mark.slow
@pytest.mark.multiproc
def test_a_wheel_install_without_the_checkout_trains_with_agentgym_train(tmp_path):
    wheel = build_wheel(tmp_path)
    assert "agentgym/train/command.py" in zipfile.ZipFile(wheel).namelist()
    # a fresh venv that sees this machine's torch and the other dependencies (the wheel alone, no index)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", "--system-site-packages", str(venv)], check=True)
    python = venv / "bin" / "python"
    install = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps",
                              "--no-index", "--isolated", str(wheel)], capture_output=True, text=True, timeout=300)
    assert install.returncode == 0, install.stdout[-3000:] + install.stderr[-3000:]
    work = tmp_path / "work"  # away from the checkout: nothing of it is importable from here
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    where = subprocess.run([str(python), "-c", "import agentgym; print(agentgym.__file__)"], cwd=work, env=env,
                           capture_output=True, text=True, check=True).stdout
    assert where.startswith(str(venv)), where

    agentgym = str(venv / "bin" / "agentgym")
    listing = subprocess.run([agentgym, "train", "--help"], cwd=work, env=env, capture_output=True, text=True)
    assert listing.returncode == 0 and "  grpo" in listing.stdout and "  vspo" in listing.stdout, listing.stderr
    run = subprocess.run([agentgym, "train", "grpo", *TINY, "--output-dir", "run", "--no-progress"], cwd=work,
                         env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert "held-out episodes: success" in run.stdout + run.stderr
    assert (work / "run" / "metrics.jsonl").exists() and (work / "run" / "sft" / "final").is_dir()
