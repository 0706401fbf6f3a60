"""This process's place in a run: how many processes ``torchrun`` launched, and :class:`Dist`, its rank
among them with the collectives the trainer uses (a no-op for one process). Setting up the process
group and reducing metrics is :mod:`agentgym.train.optim.distributed`."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


def launched_world_size() -> int:
    """The process count torchrun / accelerate launched (1 when run as a plain script)."""
    return int(os.environ.get("WORLD_SIZE", "1") or 1)


@dataclass
class Dist:
    """This process's place in the run; every method is a no-op (or the identity) in one process."""

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    active: bool = False
    """whether a process group is in use (collectives run)"""
    owns_group: bool = False
    """whether :func:`init_distributed` created the process group (and so destroys it)"""
    device: str = "cpu"

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    def barrier(self) -> None:
        if self.active:
            import torch.distributed as td

            td.barrier()

    @contextlib.contextmanager
    def main_first(self):
        """Rank 0 runs the block first (builds a model, runs the cold start), then the others, which
        find its output on disk."""
        if not self.is_main:
            self.barrier()
        yield
        if self.is_main:
            self.barrier()

    def all_gather(self, obj: Any) -> list[Any]:
        """Every rank's ``obj``, in rank order (picklable objects)."""
        if not self.active:
            return [obj]
        import torch.distributed as td

        out: list[Any] = [None] * self.world_size
        td.all_gather_object(out, obj)
        return out

    def broadcast(self, obj: Any) -> Any:
        """Rank 0's ``obj`` on every rank."""
        if not self.active:
            return obj
        import torch.distributed as td

        box = [obj if self.is_main else None]
        td.broadcast_object_list(box, src=0)
        return box[0]

    def sum_(self, tensor):
        """All-reduce (sum) ``tensor`` in place; returns it."""
        if self.active:
            import torch.distributed as td

            td.all_reduce(tensor, op=td.ReduceOp.SUM)
        return tensor

    def sum_floats(self, values: Sequence[float]) -> list[float]:
        """Element-wise sums over ranks of a list of floats, in float64 (counts stay exact)."""
        if not self.active:
            return [float(v) for v in values]
        import torch

        t = torch.tensor([float(v) for v in values], dtype=torch.float64, device=self.device)
        return [float(v) for v in self.sum_(t).cpu()]

    def max_int(self, value: int) -> int:
        if not self.active:
            return int(value)
        import torch
        import torch.distributed as td

        t = torch.tensor([int(value)], dtype=torch.int64, device=self.device)
        td.all_reduce(t, op=td.ReduceOp.MAX)
        return int(t.item())

    def close(self) -> None:
        if self.owns_group:
            import torch.distributed as td

            td.destroy_process_group()
            self.owns_group = self.active = False
