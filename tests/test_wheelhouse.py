"""The offline install (docs/install.md): the train extra states floors, so a node's own torch and
transformers stay; scripts/wheelhouse.py builds what such a node lacks, and it installs from that
alone, without an index."""

import importlib.metadata
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import urllib.request
import zipfile
from pathlib import Path

import pytest
import tomllib
from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
NODE_OWN = ("torch", "transformers")


def _train_extra() -> dict[str, Requirement]:
    extra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["train"]
    return {canonicalize_name(Requirement(r).name): Requirement(r) for r in extra}


def test_the_train_extra_keeps_the_nodes_own_torch_and_transformers():
    # the CUDA build a GPU node ships (2.11.0+cu130) and the transformers beside it
    reqs = _train_extra()
    assert reqs["torch"].specifier.contains("2.11.0+cu130") and reqs["torch"].specifier.contains("2.13.0")
    assert reqs["transformers"].specifier.contains("5.17.0")
    assert not any(s.operator in ("==", "===") for r in reqs.values() for s in r.specifier), reqs


def _wheelhouse(tmp_path, *args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "scripts" / "wheelhouse.py"), "--out", str(tmp_path / "wh"), *args],
                          text=True, capture_output=True, timeout=120)


def test_a_node_torch_below_the_floor_stops_the_wheelhouse_in_one_line(tmp_path):
    (tmp_path / "node.txt").write_text("torch==2.7.1\ntransformers==5.17.0\ntokenizers==0.23.2\nnumpy==2.1.0\n")
    run = _wheelhouse(tmp_path, "--node-packages", str(tmp_path / "node.txt"))
    assert run.returncode == 2 and not (tmp_path / "wh").exists()
    assert run.stderr == ("wheelhouse: the node's torch 2.7.1 is outside torch>=2.8: upgrade it on the node first "
                          "(the wheelhouse never holds it)\n")


def test_extras_that_require_torch_themselves_are_refused_in_one_line(tmp_path):
    run = _wheelhouse(tmp_path, "--extras", "train,trl")
    assert run.returncode == 2
    assert run.stderr == ("wheelhouse: extra trl has packages that require torch themselves, which a wheelhouse does "
                          "not carry: install it where pip can reach an index\n")


def _script():
    spec = importlib.util.spec_from_file_location("wheelhouse", ROOT / "scripts" / "wheelhouse.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _wheel(path: Path, files: dict[str, bytes]) -> Path:
    """A wheel holding ``files`` (name -> bytes) and its RECORD, as pip builds them."""
    dist_info = "demo-1.0.dist-info"
    files = {**files, f"{dist_info}/METADATA": b"Metadata-Version: 2.1\nName: demo\nVersion: 1.0\n",
             f"{dist_info}/WHEEL": b"Wheel-Version: 1.0\nRoot-Is-Purelib: false\nTag: py3-none-any\n"}
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in files.items():
            z.writestr(name, data)
        z.writestr(f"{dist_info}/RECORD", "".join(f"{name},,\n" for name in [*files, f"{dist_info}/RECORD"]))
    return path


@pytest.mark.multiproc
def test_stripping_keeps_every_compiled_file_loadable(tmp_path):
    # scipy's bundled OpenBLAS and gfortran were rewritten by auditwheel's patchelf; `strip --strip-debug`
    # moved their segments off page alignment and the loader refused them ("ELF load command
    # address/offset not page-aligned"): every trainer died importing scipy
    if not shutil.which("strip") or not shutil.which("gcc"):
        pytest.skip("needs binutils' strip and gcc")
    libs = [f for f in importlib.metadata.distribution("scipy").files or [] if str(f).startswith("scipy.libs/")]
    if not any("openblas" in str(f) for f in libs):
        pytest.skip("this scipy is not a manylinux wheel's (no scipy.libs/ with its OpenBLAS)")
    # and a library with debug information of its own, which stripping is for
    (tmp_path / "answer.c").write_text("int answer(void) { return 42; }\n")
    subprocess.run(["gcc", "-g", "-O0", "-shared", "-fPIC", "-o", str(tmp_path / "libanswer.so"),
                    str(tmp_path / "answer.c")], check=True)
    files = {str(f): f.locate().read_bytes() for f in libs}
    files["demo/libanswer.so"] = (tmp_path / "libanswer.so").read_bytes()
    whl = _wheel(tmp_path / "demo-1.0-py3-none-any.whl", files)

    lost, _ = _script().strip_debug(whl)
    assert lost > 0
    out = tmp_path / "installed"
    with zipfile.ZipFile(whl) as z:
        assert z.testzip() is None
        z.extractall(out)
    assert (out / "demo" / "libanswer.so").stat().st_size < len(files["demo/libanswer.so"])
    # the loader takes each one (scipy's find one another in their folder, as scipy's modules find them by
    # RPATH); in a process of its own, as OpenBLAS starts threads when loaded
    load = ("import ctypes, sys\n"
            "libs = [ctypes.CDLL(path) for path in sys.argv[1:]]\n"
            "print(libs[0].answer())\n")
    run = subprocess.run([sys.executable, "-c", load, str(out / "demo" / "libanswer.so"),
                          *[str(out / name) for name in files if name.startswith("scipy.libs/")]],
                         text=True, capture_output=True, env={**os.environ, "LD_LIBRARY_PATH": str(out / "scipy.libs")})
    assert run.returncode == 0 and run.stdout == "42\n", run.stderr[-2000:]


def _closure(names) -> list[importlib.metadata.Distribution]:
    """The installed distributions ``names`` need, themselves included (markers evaluated here)."""
    env, seen, todo, out = default_environment(), set(), list(names), []
    while todo:
        name = canonicalize_name(todo.pop())
        if name in seen:
            continue
        seen.add(name)
        try:
            dist = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            continue
        out.append(dist)
        for text in dist.requires or []:
            req = Requirement(text)
            if req.marker is None or req.marker.evaluate({**env, "extra": ""}):
                todo.append(req.name)
    return out


def _node(tmp_path) -> tuple[Path, Path]:
    """A venv that sees torch and transformers (with what they need) and nothing else, as a GPU node
    with its own builds of them does: their files, linked from this environment, on the venv's path."""
    base = tmp_path / "node-base"
    base.mkdir()
    for dist in _closure(NODE_OWN):
        site = Path(dist.locate_file(""))
        tops = {Path(str(f)).parts[0] for f in dist.files or [] if not str(f).startswith("..")}
        tops.add(Path(dist._path).name)  # the .dist-info folder
        for top in tops:
            if (site / top).exists() and not (base / top).exists():
                (base / top).symlink_to(site / top)
    venv = tmp_path / "node"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    purelib = subprocess.run([str(venv / "bin" / "python"), "-c",
                              "import sysconfig; print(sysconfig.get_path('purelib'))"],
                             check=True, text=True, capture_output=True).stdout.strip()
    Path(purelib, "node_base.pth").write_text(f"{base}\n")
    return venv / "bin" / "python", base


def _offline_pip_env() -> dict[str, str]:
    """This machine's pip settings (extra indexes, find-links, constraints) left out: the node has none."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env["PIP_CONFIG_FILE"] = os.devnull
    return env


def _pypi_reachable() -> bool:
    try:
        with urllib.request.urlopen("https://pypi.org/simple/gymnasium/", timeout=15):
            return True
    except OSError:
        return False


@pytest.mark.network
@pytest.mark.multiproc
@pytest.mark.timeout(1200)
def test_a_node_with_its_own_torch_installs_agentgym_from_the_wheelhouse_without_an_index(tmp_path):
    if not _pypi_reachable():
        pytest.skip("https://pypi.org is unreachable: building the wheelhouse downloads from it")
    python, base = _node(tmp_path)
    pip = [sys.executable, "-m", "pip", "--python", str(python)]
    listed = subprocess.run([*pip, "list", "--format=freeze"], check=True, text=True, capture_output=True,
                            env=_offline_pip_env()).stdout
    node = {canonicalize_name(line.split("==")[0]): line.split("==")[1] for line in listed.split()}
    # the simulation is honest: the node has torch and transformers, and none of what agentgym adds
    assert {"torch", "transformers"} <= node.keys()
    assert not {"gymnasium", "sacrebleu", "bm25s", "scipy", "tyro", "tensorboard", "textworld", "agentgym"} & node.keys()
    (tmp_path / "node-packages.txt").write_text(listed)

    wheelhouse = tmp_path / "wheelhouse"
    build = subprocess.run([sys.executable, str(ROOT / "scripts" / "wheelhouse.py"), "--out", str(wheelhouse),
                            "--extras", "train,alfworld", "--node-packages", str(tmp_path / "node-packages.txt")],
                           text=True, capture_output=True)
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    held = {canonicalize_name(w.name.split("-")[0]) for w in wheelhouse.glob("*.whl")}
    assert not held & {"torch", "transformers", "tokenizers", "nvidia-cublas-cu12"}, held
    assert {"gymnasium", "sacrebleu", "bm25s", "tyro", "textworld", "alfworld", "agentgym", "setuptools"} <= held
    # the node's own packages stay out, but for the build backend (setuptools, wheel and the packaging they
    # need): pip builds a checkout in an environment of its own, which sees none of the node's packages
    assert not held & (node.keys() - {"setuptools", "wheel", "packaging"}), held & node.keys()

    # an editable install of a checkout, as the README's: from a copy (this checkout gets no build files)
    src = tmp_path / "src"
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(".git", "*.egg-info", "build", "__pycache__", "runs",
                                                             "tests", "docs", "benchmarks"))
    install = subprocess.run([*pip, "install", "--no-index", "--find-links", str(wheelhouse),
                              "-e", f"{src}[train,alfworld]"], text=True, capture_output=True, env=_offline_pip_env())
    assert install.returncode == 0, install.stdout[-3000:] + install.stderr[-3000:]
    installed = re.search(r"Successfully installed (.*)", install.stdout).group(1).split()
    assert not [p for p in installed if p.startswith(("torch-", "transformers-", "tokenizers-"))], installed

    check = (
        "import torch, transformers, gymnasium as gym, agentgym, spacy, alfworld\n"
        # the wheelhouse's scipy, with its OpenBLAS (transformers imports scipy.optimize when a trainer starts)
        "import scipy.linalg, scipy.optimize\n"
        "assert abs(scipy.linalg.inv([[2.0]])[0][0] - 0.5) < 1e-12\n"
        f"assert torch.__file__.startswith({str(base)!r}) and transformers.__file__.startswith({str(base)!r})\n"
        "env = gym.make('ToolQA-v0')\n"
        "obs, info = env.reset(seed=0)\n"
        "obs, reward, terminated, truncated, info = env.step("
        "'<tool_call>{\"name\": \"search\", \"arguments\": {\"query\": \"Zuces Works industry\"}}</tool_call>')\n"
        "assert info['reward_terms']['format'] == 1.0, info\n"
        "env = gym.make('ALFWorld-v0')\n"
        "obs, info = env.reset(seed=0)\n"
        "assert 'You are in the middle of a room' in obs, obs[:200]\n"
        "print('ok', torch.__version__, transformers.__version__)\n")
    run = subprocess.run([str(python), "-c", check], text=True, capture_output=True, cwd=tmp_path)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-3000:]
    assert f"ok {node['torch']} {node['transformers']}" in run.stdout
    after = subprocess.run([*pip, "list", "--format=freeze"], check=True, text=True, capture_output=True,
                           env=_offline_pip_env()).stdout
    assert f"torch=={node['torch']}" in after.split() and f"transformers=={node['transformers']}" in after.split()

    # what the node is for: a training step (tiny model: cold start, GRPO step, held-out evaluation, checkpoint)
    train = subprocess.run([str(python), str(src / "trainers" / "grpo.py"), "--num-steps", "1",
                            "--cold-start.num-steps", "2", "--cold-start.num-episodes", "4", "--eval-episodes", "2",
                            "--num-groups", "1", "--group-size", "2", "--max-new-tokens", "8", "--cpu-threads", "1",
                            "--no-progress", "--output-dir", str(tmp_path / "run")],
                           text=True, capture_output=True, cwd=tmp_path,
                           env={**os.environ, "AGENTGYM_CACHE": str(tmp_path / "cache")})
    assert train.returncode == 0, train.stdout[-2000:] + train.stderr[-3000:]
    assert (tmp_path / "run" / "checkpoints" / "step_1").is_dir(), sorted(p.name for p in (tmp_path / "run").iterdir())
