"""CPU thread count and OpenMP wait policy of a training process."""

import os
import subprocess
import sys

import pytest

from agentgym.train.base.threads import (
    available_cores,
    cgroup_cpu_limit,
    default_threads,
    prefer_passive_wait,
    set_cpu_threads,
)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_cgroup_quota_is_read_from_v2_and_v1_hierarchies(tmp_path):
    proc = tmp_path / "proc_cgroup"
    write(proc, "0::/job/step\n")
    write(tmp_path / "fs" / "job" / "step" / "cpu.max", "max 100000\n")
    assert cgroup_cpu_limit(tmp_path / "fs", proc) is None
    write(tmp_path / "fs" / "job" / "cpu.max", "150000 100000\n")  # an ancestor's quota binds its children
    assert cgroup_cpu_limit(tmp_path / "fs", proc) == 1.5
    write(proc, "4:memory:/x\n2:cpu,cpuacct:/box\n")
    write(tmp_path / "v1" / "cpu,cpuacct" / "box" / "cpu.cfs_quota_us", "300000\n")
    write(tmp_path / "v1" / "cpu,cpuacct" / "box" / "cpu.cfs_period_us", "100000\n")
    assert cgroup_cpu_limit(tmp_path / "v1", proc) == 3.0
    write(tmp_path / "v1" / "cpu,cpuacct" / "box" / "cpu.cfs_quota_us", "-1\n")
    assert cgroup_cpu_limit(tmp_path / "v1", proc) is None
    assert cgroup_cpu_limit(tmp_path / "v1", tmp_path / "missing") is None


def test_local_ranks_share_the_cores(monkeypatch):
    import torch

    cores = available_cores()
    assert 1 <= cores <= len(os.sched_getaffinity(0))
    monkeypatch.setenv("LOCAL_WORLD_SIZE", str(cores * 2))  # more ranks than cores: still one thread each
    assert default_threads() == 1
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "1")
    assert default_threads() == cores
    before = torch.get_num_threads()
    try:
        assert set_cpu_threads(0) == cores == torch.get_num_threads()
        assert set_cpu_threads(1) == 1 == torch.get_num_threads()  # --cpu-threads N still sets it outright
    finally:
        torch.set_num_threads(before)


@pytest.mark.parametrize("env,expected", [
    ({}, "PASSIVE"),                                # a trainer: idle OpenMP threads sleep
    ({"OMP_WAIT_POLICY": "active"}, "active"),      # the user's choice stands
])
def test_importing_the_trainer_package_asks_openmp_for_a_passive_wait(env, expected):
    code = "import os, sys, agentgym.train; print('torch' in sys.modules, os.environ.get('OMP_WAIT_POLICY'))"
    base = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    out = subprocess.run([sys.executable, "-c", code], env={**base, **env, "PYTHONPATH": ROOT}, capture_output=True,
                         text=True, timeout=120, check=True).stdout.split()
    assert out == ["False", expected]  # set before torch (and the OpenMP runtime it loads) is imported


def test_the_wait_policy_is_left_alone_once_torch_is_loaded(monkeypatch):
    monkeypatch.setenv("OMP_WAIT_POLICY", "recorded")  # so that monkeypatch restores the variable as it was
    monkeypatch.delenv("OMP_WAIT_POLICY")
    assert "torch" in sys.modules and not prefer_passive_wait()  # OpenMP read its settings already
    assert "OMP_WAIT_POLICY" not in os.environ
    monkeypatch.delitem(sys.modules, "torch")
    assert prefer_passive_wait() and os.environ["OMP_WAIT_POLICY"] == "PASSIVE"
