"""Data-parallel RL training on ``torch.distributed``: one process per device, launched by
``torchrun`` or ``accelerate launch`` (both set ``WORLD_SIZE``, ``RANK``, ``LOCAL_RANK``,
``MASTER_ADDR`` and ``MASTER_PORT``). docs/trainers.md, "Scaling out", has the commands.

What each rank does, and why the update is the one-process update on the same global batch:

- **Groups.** ``--num-groups`` is the global batch; each of the ``W`` ranks plays
  ``num_groups / W`` whole groups (a group is never split: its advantages compare its own
  episodes). Every rank advances the task stream by the global count and takes its own slice of
  positions, so ranks play disjoint tasks and the data position is the same on every rank.
  Extra tasks an extension asks for (VSPO's resampling, DAPO's oversampling) come from positions
  strided by rank after the batch's; at the end of the step every rank skips past the most any
  rank took. With ``W = 1`` both rules are exactly the one-process stream.
- **Loss.** ``train_step`` all-reduces each sample kind's loss-token count (sequence count for
  ``seq-mean``) before the backward passes and divides by the global count, so each rank's loss is
  its share of the global token-mean; gradients are then *summed* across ranks (:func:`all_reduce_grads`).
  Clipping and AdamW then see identical gradients and take identical steps on every rank.
- **Metrics** are reduced with :func:`reduce_metrics` (the rules are there); the update's own
  metrics are already global (``train_step`` all-reduces its sums).
- **Rank 0** writes metrics.jsonl, TensorBoard, checkpoints and the printed lines, and runs the
  held-out evaluation (its result is broadcast); the others wait.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping, Sequence
from datetime import timedelta
from typing import Any

import numpy as np

from agentgym.train.base.world import Dist, launched_world_size

# Metrics that count things on a rank: summed across ranks. Extensions add their own through
# ``TrainerExtension.summed_metrics``.
SUMMED = frozenset({"batch/groups", "batch/episodes", "episodes/played", "episodes/faulted",
                    "groups/dropped_for_faults", "tokens_per_second"})
SUMMED_PREFIXES = ("rollout/groups_", "tokens/")
# The same on every rank (the run's position, schedule, learning rate): rank 0's value as it is.
SHARED = frozenset({"lr", "data/position", "data/excluded_tasks", "data/task_pool", "prs/stage", "episodes/total"})
SHARED_PREFIXES = ("eval/",)
# Rates over model turns rather than episodes: weighted by the rank's turns.
PER_TURN_PREFIXES = ("action/", "completion/")



def init_distributed(device: str, fsdp: bool = False) -> Dist:
    """Join the process group torchrun / accelerate set up the environment for (gloo on CPU, nccl
    on CUDA with ``cuda:LOCAL_RANK``); a plain one-process run gets an inactive :class:`Dist`.

    ``device`` is the resolved ``--device``; under a launcher a CUDA run uses the local rank's GPU
    whatever index was asked for.
    """
    world = launched_world_size()
    if world == 1 and not fsdp:
        return Dist(device=device)
    if "RANK" not in os.environ:
        raise ValueError("WORLD_SIZE is set but RANK is not: launch with torchrun or accelerate launch")
    import torch
    import torch.distributed as td

    rank = int(os.environ["RANK"])
    local = int(os.environ.get("LOCAL_RANK", rank))
    if device.startswith("cuda"):
        device = f"cuda:{local}"
        torch.cuda.set_device(local)
    owns = not td.is_initialized()
    if owns:
        # long: rank 0 alone runs the cold start and the held-out evaluations while the others wait
        td.init_process_group("nccl" if device.startswith("cuda") else "gloo", timeout=timedelta(hours=2))
    return Dist(rank=td.get_rank(), world_size=td.get_world_size(), local_rank=local, active=True, owns_group=owns,
                device=device)


def all_reduce_grads(dist: Dist, params: Iterable, bucket_numel: int = 1 << 24) -> None:
    """Sum every trainable parameter's gradient over ranks, in flat buckets.

    A parameter with no gradient on a rank counts as zeros there; one with no gradient on any
    rank keeps ``grad = None``, as in one process (AdamW then leaves it alone).
    """
    if not dist.active:
        return
    import torch

    params = [p for p in params if p.requires_grad]
    if not params:
        return
    has = torch.tensor([float(p.grad is not None) for p in params], dtype=torch.float32, device=dist.device)
    dist.sum_(has)
    for p in params:
        if p.grad is None:
            p.grad = torch.zeros_like(p)
    bucket: list = []
    size = 0

    def flush():
        flat = torch.cat([p.grad.reshape(-1) for p in bucket])
        dist.sum_(flat)
        offset = 0
        for q in bucket:
            q.grad.copy_(flat[offset:offset + q.grad.numel()].view_as(q.grad))
            offset += q.grad.numel()

    for p in params:
        if bucket and (size + p.numel() > bucket_numel or p.grad.dtype != bucket[0].grad.dtype):
            flush()
            bucket, size = [], 0
        bucket.append(p)
        size += p.numel()
    flush()
    for p, seen in zip(params, has.tolist()):
        if seen == 0:
            p.grad = None


def stream_seed(run_seed: int, rank: int, step: int) -> int:
    """A seed for the random streams of a rank that a checkpoint has none for (a resume with more
    ranks than saved it).

    >>> stream_seed(0, 1, 5) == stream_seed(0, 1, 5) != stream_seed(0, 2, 5)
    True
    """
    return int(np.random.SeedSequence([int(run_seed), int(rank), int(step), 0xD1]).generate_state(1)[0])


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def reduce_metrics(per_rank: Sequence[Mapping[str, Any]], summed: Iterable[str] = ()) -> dict[str, Any]:
    """One step's metrics over all ranks, from each rank's own (``per_rank``, in rank order).

    - counts (:data:`SUMMED`, keys starting with ``rollout/groups_`` or ``tokens/``, and the
      extensions' ``summed``): the sum; ``tokens_per_second`` too (the run's throughput);
    - the run's shared state (:data:`SHARED`, ``eval/*``): rank 0's value;
    - ``*/max``, ``*_max``, ``*/rounds`` and ``time/*`` (the slowest rank bounds the step): the maximum;
      ``*/min``, ``*_min``: the minimum;
    - ``reward/std``: the pooled standard deviation of every rank's episodes (exact);
    - everything else: the mean weighted by the rank's episodes (``batch/episodes``), or by its
      model turns for per-turn rates (``action/*``, ``completion/*``), or by the episodes it played
      for what every played episode counts in (``reward/played_mean``...). A rank without the key,
      or with a NaN, does not count.

    >>> a = {"batch/episodes": 2, "reward/mean": 1.0, "reward/std": 0.0, "reward/max": 1.0, "lr": 0.1}
    >>> b = {"batch/episodes": 6, "reward/mean": 0.0, "reward/std": 0.0, "reward/max": 0.0, "lr": 0.1}
    >>> m = reduce_metrics([a, b])
    >>> m["batch/episodes"], m["reward/mean"], m["reward/max"], m["lr"], round(m["reward/std"], 4)
    (8.0, 0.25, 1.0, 0.1, 0.433)
    """
    summed = SUMMED | set(summed)
    weights = [float(m.get("batch/episodes", 0.0) or 0.0) for m in per_rank]
    played = [float(m.get("episodes/played", 0.0) or 0.0) for m in per_rank]  # for `*/played_*`: a rank's whole rollout
    turns = [w * float(m.get("episode/turns", 0.0) or 0.0) for w, m in zip(weights, per_rank)]
    keys: list[str] = []
    for m in per_rank:
        keys += [k for k in m if k not in keys]
    out: dict[str, Any] = {}
    for key in keys:
        values = [(r, m[key]) for r, m in enumerate(per_rank) if key in m]
        finite = [(r, float(v)) for r, v in values if _finite(v)]
        if key in SHARED or key.startswith(SHARED_PREFIXES) or not finite:
            out[key] = values[0][1]
        elif key in summed or key.startswith(SUMMED_PREFIXES):
            out[key] = float(sum(v for _, v in finite))
        elif key.endswith(("/max", "_max", "/rounds")) or key.startswith("time/"):
            out[key] = max(v for _, v in finite)
        elif key.endswith(("/min", "_min")):
            out[key] = min(v for _, v in finite)
        else:
            w = turns if key.startswith(PER_TURN_PREFIXES) else played if "/played_" in key else weights
            total = sum(w[r] for r, _ in finite)
            out[key] = (sum(w[r] * v for r, v in finite) / total if total > 0
                        else sum(v for _, v in finite) / len(finite))
    if "reward/std" in out and "reward/mean" in out and sum(weights) > 0:
        # pooled over episodes: E[x^2] from each rank's mean and (population) std
        second = sum(w * (float(m.get("reward/std", 0.0)) ** 2 + float(m.get("reward/mean", 0.0)) ** 2)
                     for w, m in zip(weights, per_rank) if w > 0) / sum(weights)
        out["reward/std"] = math.sqrt(max(second - float(out["reward/mean"]) ** 2, 0.0))
    return out
