"""CPU threads for training: how many torch uses, and how its idle OpenMP threads wait.

Two things make CPU runs that share a machine (seeds side by side, an evaluation beside a trainer,
several ``torchrun`` ranks on one host) collapse rather than share:

- **More threads than cores.** Each run sizing its pool for the whole machine puts two threads on
  every core. :func:`default_threads` counts the cores this process may actually use (its CPU
  affinity and its cgroup's CPU quota, as in a container) and divides them among the local ranks
  of a ``torchrun`` launch.
- **Spinning.** OpenMP's default wait policy keeps an idle worker thread spinning for a while
  between parallel regions, burning a core another process needs; with two runs on two cores the
  spinners starve the workers (about 20x slower per step, docs/benchmarks.md). A ``PASSIVE``
  policy puts idle threads to sleep instead. OpenMP reads it once, when torch loads it, so
  :func:`prefer_passive_wait` sets ``OMP_WAIT_POLICY`` before torch is imported (importing
  :mod:`agentgym.train` does), unless the user set it.

``--cpu-threads N`` still sets the count outright; ``0`` (the default) chooses it as above.
"""

from __future__ import annotations

import math
import os
import sys
from pathlib import Path


def prefer_passive_wait() -> bool:
    """Set ``OMP_WAIT_POLICY=PASSIVE`` for the OpenMP runtime torch will load; False when it is too
    late (torch already imported) or the user chose a policy."""
    if "torch" in sys.modules or "OMP_WAIT_POLICY" in os.environ:
        return False
    os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
    return True


def _quota(text: str, period_text: str | None = None) -> float | None:
    """CPUs allowed by a cgroup v2 ``cpu.max`` line (``"200000 100000"``, ``"max 100000"``) or a
    v1 quota and period (``"-1"`` is none)."""
    parts = text.split()
    if not parts or parts[0] in ("max", "-1"):
        return None
    period = float(period_text if period_text is not None else parts[1] if len(parts) > 1 else 100000)
    quota = float(parts[0])
    return quota / period if quota > 0 and period > 0 else None


def cgroup_cpu_limit(root: str | os.PathLike = "/sys/fs/cgroup",
                     proc_cgroup: str | os.PathLike = "/proc/self/cgroup") -> float | None:
    """The CPU quota of this process's cgroup and its ancestors, in CPUs (``1.5``: one and a half
    cores' time); None when there is none or it cannot be read. Reads cgroup v2 (``cpu.max``) and
    v1 (``cpu.cfs_quota_us`` / ``cpu.cfs_period_us``)."""
    root = Path(root)
    try:
        lines = Path(proc_cgroup).read_text().splitlines()
    except OSError:
        return None
    limits: list[float] = []
    for line in lines:
        _, controllers, path = (line.split(":", 2) + ["", ""])[:3]
        rel = Path(path.strip().lstrip("/"))
        if controllers == "":  # v2: the unified hierarchy, mounted at root or root/unified
            candidates = [(base / d / "cpu.max", None) for base in (root, root / "unified")
                          for d in [rel, *rel.parents]]
        elif "cpu" in controllers.split(","):
            mounts = [root / name for name in ("cpu", "cpu,cpuacct", "cpuacct,cpu")]
            candidates = [(m / d / "cpu.cfs_quota_us", m / d / "cpu.cfs_period_us") for m in mounts
                          for d in [rel, *rel.parents]]
        else:
            continue
        for quota_file, period_file in candidates:
            try:
                limit = _quota(quota_file.read_text(), period_file.read_text() if period_file else None)
            except (OSError, ValueError, IndexError):
                continue
            if limit is not None:
                limits.append(limit)
    return min(limits) if limits else None


def available_cores() -> int:
    """Cores this process may use: its CPU affinity, capped by its cgroup's CPU quota (at least 1)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cores = os.cpu_count() or 1
    limit = cgroup_cpu_limit()
    if limit is not None:
        cores = min(cores, max(1, math.floor(limit)))
    return max(1, cores)


def local_ranks() -> int:
    """Training processes of this run on this host (``torchrun``'s ``LOCAL_WORLD_SIZE``; else 1)."""
    try:
        return max(1, int(os.environ.get("LOCAL_WORLD_SIZE", "1")))
    except ValueError:
        return 1


def default_threads() -> int:
    """Intra-op threads for one training process: its share of the available cores."""
    return max(1, available_cores() // local_ranks())


def set_cpu_threads(requested: int = 0) -> int:
    """Size torch's CPU thread pool: ``requested`` threads, or with 0 :func:`default_threads`;
    returns the count set."""
    import torch

    threads = requested if requested > 0 else default_threads()
    torch.set_num_threads(threads)
    return threads
