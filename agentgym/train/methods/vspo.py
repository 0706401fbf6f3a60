"""VSPO, value-based sampling policy optimization, as we read it (SPEC §4.3): its math, and
:class:`VSPO`, the extension that runs it on the GRPO loop.

Three pieces, each a small function or class the trainer composes:

1. **Task value.** A group of G episodes of one task with returns R has value
   ``V = (r_max - mean(R)) * s`` where ``s`` is the unbiased (n - 1) standard deviation of R (the
   one GRPO advantages divide by) or its variance (``sigma="var"``). The first factor is high for
   hard tasks, the second for tasks the policy sometimes solves and sometimes fails: V peaks for
   tasks that are hard but within reach and is 0 when every episode ties.
2. **Resampling.** A group whose returns tie (spread at most ``tol``) has all-zero advantages and
   no gradient. VSPO drops it (:func:`groups_to_replace`) and refills the batch with tasks seen
   before, drawn from a :class:`ValueBuffer` with probability proportional to their EMA-smoothed
   value. The paper's first version dropped every group below a value threshold instead
   (``replace_below_value``).
3. **Value-smoothing clipping.** A task reused n times has its advantages scaled by ``eta ** n``
   and all advantages are clipped to ``[-a_max, a_max]`` (:func:`smooth_advantages`), so a few
   high-value tasks replayed again and again cannot dominate the update.

The formula, the EMA and the two knobs are our reading of the paper's abstract, not its code.

>>> round(task_value([1.0, 0.0, 0.0, 1.0]), 6)   # mean .5, std sqrt(1/3)
0.288675
>>> groups_to_replace([[1.0, 1.0], [0.0, 1.0], [0.3, 0.3 + 1e-7]])
[0, 2]
>>> smooth_advantages([2.0, -5.0, 1.0], reuse_counts=[0, 0, 2]).round(4).tolist()
[2.0, -3.0, 0.49]

On the loop (:class:`VSPO`, flags ``--vspo.*``), each step, after the rollout:

1. Every group's returns update the value buffer (task value ``(r_max - mean) * std``,
   EMA-smoothed across visits).
2. Groups whose returns tie (spread within ``tol``; or, with ``replace_below_value``, whose value
   is below it) are dropped.
3. Replacements are played: tasks from the buffer drawn in proportion to their value (never one
   already in the batch), and fresh tasks from the run's stream for the rest. A replacement that
   ties again is dropped too, and another round is played, up to ``max_resample_rounds``; what is
   still missing then is logged as the shortfall (the batch is smaller), never raised.
4. Advantages of a task replayed from the buffer for the n-th time are scaled by ``eta ** n``, and
   every advantage is clipped to ``[-a_max, a_max]``.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

import numpy as np

from agentgym.train.base.errors import ConfigError
from agentgym.train.config.run import RunConfig
from agentgym.train.config.tree import TrainConfig
from agentgym.train.hooks import StepContext, TrainerExtension
from agentgym.train.methods.dapo import has_reward_spread
from agentgym.train.methods.registry import Method, register
from agentgym.train.rollout.episodes import Episode, GroupRequest, by_group

SIGMAS = ("std", "var")


def task_value(rewards: Sequence[float], r_max: float = 1.0, sigma: str = "std") -> float:
    """VSPO's value of a task from one group of returns: ``(r_max - mean(R)) * std(R)``.

    ``sigma="std"`` uses the unbiased (ddof=1) standard deviation, 0 for a single return;
    ``sigma="var"`` uses the unbiased variance instead.

    >>> round(task_value([1.0, 0.0, 0.0, 1.0], sigma="var"), 6)   # 0.5 * 1/3
    0.166667
    >>> task_value([0.0, 0.0, 0.0]), task_value([1.0])
    (0.0, 0.0)
    """
    if sigma not in SIGMAS:
        raise ValueError(f"sigma must be one of {SIGMAS}, got {sigma!r}")
    r = np.asarray(rewards, dtype=np.float64).reshape(-1)
    if r.size == 0:
        raise ValueError("task_value needs at least one reward, got none")
    if r.max() == r.min():
        # exact ties are worth exactly 0: float error in the mean would leave a ~1e-17 value that
        # makes the buffer treat a tied task as sampleable
        return 0.0
    var = float(r.var(ddof=1))
    s = var if sigma == "var" else float(np.sqrt(var))
    return float((r_max - r.mean()) * s)


def is_zero_advantage(rewards: Sequence[float], tol: float = 1e-6) -> bool:
    """Whether a group's returns tie: spread ``max - min`` at most ``tol`` (an empty group too).

    >>> is_zero_advantage([0.5, 0.5 + 1e-7]), is_zero_advantage([0.5, 0.6])
    (True, False)
    """
    return not has_reward_spread(rewards, tol)


def groups_to_replace(group_rewards: Sequence[Sequence[float]], tol: float = 1e-6,
                      replace_below_value: float | None = None, r_max: float = 1.0,
                      sigma: str = "std") -> list[int]:
    """Indices of the groups VSPO drops from the batch.

    By default the zero-advantage groups (see :func:`is_zero_advantage`). With
    ``replace_below_value`` set, every group whose :func:`task_value` is strictly below it (tied
    groups have value 0, so they go too whenever the threshold is positive); ``tol`` is then unused.

    >>> groups_to_replace([[1.0, 0.0], [0.0, 0.0, 0.0, 1.0]], replace_below_value=0.36)
    [0]
    """
    if replace_below_value is None:
        return [i for i, r in enumerate(group_rewards) if is_zero_advantage(r, tol)]
    return [i for i, r in enumerate(group_rewards)
            if task_value(r, r_max=r_max, sigma=sigma) < replace_below_value]


def reuse_scale(reuse_count: int, eta: float = 0.7) -> float:
    """Advantage scale of a task reused ``reuse_count`` times: ``eta ** reuse_count``.

    >>> reuse_scale(0), round(reuse_scale(2), 4)
    (1.0, 0.49)
    """
    if reuse_count < 0:
        raise ValueError(f"reuse_count must be >= 0, got {reuse_count}")
    if not 0 < eta <= 1:
        raise ValueError(f"eta must be in (0, 1], got {eta}")
    return float(eta ** reuse_count)


def smooth_advantages(advantages: Any, reuse_counts: Sequence[int], eta: float | None = 0.7,
                      a_max: float | None = 3.0) -> np.ndarray | list[np.ndarray]:
    """VSPO's value-smoothing clipping: scale by ``eta ** n``, then clip to ``[-a_max, a_max]``.

    Args:
        advantages: either a numpy array (or a flat list of floats) whose first axis is the
            episode, e.g. one float per episode or one row of token advantages per episode,
            returned as an array of the same shape; or a list/tuple of 1-D sequences, one per
            episode (e.g. per-step advantages of different lengths), returned as a list of arrays.
            A nested list is always read the second way: pass an array for a 2-D batch.
        reuse_counts: per episode, how many times its task had been reused from the value buffer
            (0 for a fresh task).
        eta: the per-reuse decay; None switches the scale off.
        a_max: the clip bound; None switches the clip off.

    >>> smooth_advantages(np.array([[1.0, 4.0], [1.0, 4.0]]), [0, 1], a_max=None).tolist()
    [[1.0, 4.0], [0.7, 2.8]]
    >>> [a.tolist() for a in smooth_advantages([np.array([1.0]), np.array([5.0, -1.0])], [1, 0], eta=0.5)]
    [[0.5], [3.0, -1.0]]
    """
    if a_max is not None and a_max <= 0:
        raise ValueError(f"a_max must be positive or None, got {a_max}")
    counts = list(reuse_counts)
    scales = [1.0 if eta is None else reuse_scale(int(n), eta) for n in counts]

    def one(a: np.ndarray, scale: float) -> np.ndarray:
        a = a * scale
        return a if a_max is None else np.clip(a, -a_max, a_max)

    ragged = isinstance(advantages, (list, tuple)) and any(np.ndim(a) > 0 for a in advantages)
    if ragged:
        if len(advantages) != len(counts):
            raise ValueError(f"need one reuse count per episode, got {len(counts)} for {len(advantages)} episodes")
        return [one(np.asarray(a, dtype=np.float64), s) for a, s in zip(advantages, scales)]
    adv = np.asarray(advantages, dtype=np.float64)
    if adv.ndim == 0 or adv.shape[0] != len(counts):
        raise ValueError(f"need one reuse count per episode, got {len(counts)} for advantages of shape {adv.shape}")
    # broadcast each episode's scale over its trailing axes (tokens, steps)
    scale = np.asarray(scales, dtype=np.float64).reshape((-1,) + (1,) * (adv.ndim - 1))
    return one(adv, scale)


@dataclass
class TaskRecord:
    """What the value buffer remembers of one task."""

    key: str
    """Identifies the task across visits (e.g. its env seed or task id as a string)."""
    request: dict
    """How to replay the task (e.g. ``{"seed": 3}`` or ``{"task_id": "t7"}``); opaque to the buffer."""
    mean: float
    """Mean return of the last visit's group."""
    std: float
    """Unbiased std of the last visit's returns."""
    value: float
    """Task value, EMA-smoothed across visits."""
    visits: int = 1
    """How many groups of this task were played."""
    reuses: int = 0
    """How many times the buffer handed the task back for a replay."""


@dataclass
class ValueBuffer:
    """Tasks seen so far with their EMA-smoothed VSPO value; replays sample ∝ value.

    ``update`` after every group; ``sample`` to pick replacements for dropped groups; ``mark_reused``
    once a sampled task was actually replayed (its advantages then get ``eta ** reuses``).

    >>> buf = ValueBuffer(alpha=0.5)
    >>> round(buf.update("t0", [1.0, 0.0, 0.0, 1.0], {"seed": 0}).value, 6)
    0.288675
    >>> round(buf.update("t0", [1.0, 1.0, 1.0, 0.0], {"seed": 0}).value, 6)   # (0.288675 + 0.125) / 2
    0.206838
    >>> [r.key for r in buf.sample(3, np.random.default_rng(0))]
    ['t0']
    """

    alpha: float = 0.5
    """EMA weight of the newest visit: ``value <- (1 - alpha) * old + alpha * new``; 1 keeps only the last."""
    r_max: float = 1.0
    """The best return the env can pay."""
    sigma: str = "std"
    """``std`` or ``var``: the spread factor of the task value."""
    capacity: int | None = None
    """Most tasks kept; past it the lowest-value task is evicted. None: unbounded."""
    _records: dict[str, TaskRecord] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        if not 0 < self.alpha <= 1:
            raise ValueError(f"alpha must be in (0, 1], got {self.alpha}")
        if self.sigma not in SIGMAS:
            raise ValueError(f"sigma must be one of {SIGMAS}, got {self.sigma!r}")
        if self.capacity is not None and self.capacity < 1:
            raise ValueError(f"capacity must be >= 1 or None, got {self.capacity}")

    def __len__(self) -> int:
        return len(self._records)

    def __contains__(self, key: str) -> bool:
        return key in self._records

    def get(self, key: str) -> TaskRecord | None:
        """The record of ``key``, or None if the task was never seen (or was evicted)."""
        return self._records.get(key)

    def update(self, key: str, rewards: Sequence[float], request: dict) -> TaskRecord:
        """Record one group of ``key``'s returns; returns the task's updated record.

        The first visit sets the value; later visits blend it with the EMA. ``mean``, ``std`` and
        ``request`` are the last visit's. With a capacity, the lowest-value task is evicted when
        the buffer overflows (the oldest among ties), which may be the task just added.
        """
        r = np.asarray(rewards, dtype=np.float64).reshape(-1)
        new = task_value(r, r_max=self.r_max, sigma=self.sigma)
        mean = float(r.mean())
        std = float(r.std(ddof=1)) if r.size > 1 else 0.0
        old = self._records.pop(key, None)
        if old is None:
            rec = TaskRecord(key, copy.deepcopy(request), mean, std, new)
        else:
            value = (1 - self.alpha) * old.value + self.alpha * new
            rec = TaskRecord(key, copy.deepcopy(request), mean, std, value, old.visits + 1, old.reuses)
        # re-inserting keeps the dict ordered from least to most recently updated (eviction ties)
        self._records[key] = rec
        if self.capacity is not None and len(self._records) > self.capacity:
            victim = min(self._records.values(), key=lambda x: x.value)
            del self._records[victim.key]
        return rec

    def sample(self, n: int, rng: np.random.Generator, exclude: Iterable[str] = ()) -> list[TaskRecord]:
        """Up to ``n`` distinct tasks drawn without replacement, each draw ∝ value.

        Only tasks with value > 0 and not in ``exclude`` (e.g. the tasks already in this batch)
        are eligible; fewer than ``n`` come back when fewer are eligible. The records returned are
        the buffer's own: read them, change them through :meth:`update` and :meth:`mark_reused`.
        """
        if n < 0:
            raise ValueError(f"n must be >= 0, got {n}")
        skip = set(exclude)
        pool = [r for r in self._records.values() if r.value > 0 and r.key not in skip]
        k = min(n, len(pool))
        if k == 0:
            return []
        w = np.array([r.value for r in pool], dtype=np.float64)
        picks = rng.choice(len(pool), size=k, replace=False, p=w / w.sum())
        return [pool[i] for i in picks]

    def mark_reused(self, key: str) -> None:
        """Count one replay of ``key``; a KeyError if the task is not in the buffer."""
        if key not in self._records:
            raise KeyError(f"task {key!r} is not in the value buffer")
        self._records[key].reuses += 1

    def stats(self) -> dict[str, float]:
        """Size and value / reuse summaries for logging (zeros when empty)."""
        recs = list(self._records.values())
        if not recs:
            return {"size": 0.0, "value_mean": 0.0, "value_max": 0.0, "reuse_mean": 0.0, "reuse_max": 0.0}
        values = np.array([r.value for r in recs])
        reuses = np.array([r.reuses for r in recs], dtype=np.float64)
        return {"size": float(len(recs)), "value_mean": float(values.mean()), "value_max": float(values.max()),
                "reuse_mean": float(reuses.mean()), "reuse_max": float(reuses.max())}

    def state_dict(self) -> dict:
        """The records as plain, picklable data (a list of dicts, in update order)."""
        return {"records": [asdict(r) for r in self._records.values()]}

    def load_state_dict(self, state: dict) -> None:
        """Replace the records with those of :meth:`state_dict`; the knobs stay the constructor's."""
        self._records = {}
        for d in state["records"]:
            rec = TaskRecord(**copy.deepcopy(d))
            self._records[rec.key] = rec


@dataclass
class VSPOConfig:
    """VSPO's own settings (flags ``--vspo.*``)."""

    resample: bool = True
    """replace zero-advantage groups with tasks from the value buffer (off: GRPO plus the clipping)"""
    tol: float = 1e-6
    """a group whose return spread is at most this counts as zero-advantage"""
    replace_below_value: float | None = None
    """instead, replace every group whose task value is below this (the paper's first version)"""
    max_resample_rounds: int = 2
    """extra rollout rounds per step at most; what is still missing is logged as the shortfall"""
    alpha: float = 0.5
    """EMA weight of a task's newest value across visits (1: only the last visit)"""
    value_sigma: Literal["std", "var"] = "std"
    """spread factor of the task value"""
    r_max: float = 1.0
    """the best return the env pays"""
    buffer_capacity: int | None = None
    """most tasks the value buffer keeps (None: all; past it the lowest-value task goes)"""
    smoothing: bool = True
    """scale advantages of a task reused n times by eta**n"""
    eta: float = 0.7
    """reuse decay of value-smoothing"""
    clip: bool = True
    """clip advantages to [-a_max, a_max]"""
    a_max: float = 3.0
    """advantage clip bound"""

    def validate(self) -> None:
        if not self.tol >= 0:
            raise ConfigError(f"--vspo.tol must be >= 0, got {self.tol}")
        if self.max_resample_rounds < 0:
            raise ConfigError(f"--vspo.max-resample-rounds must be >= 0, got {self.max_resample_rounds}")
        if not 0 < self.alpha <= 1:
            raise ConfigError(f"--vspo.alpha must be in (0, 1], got {self.alpha}")
        if not 0 < self.eta <= 1:
            raise ConfigError(f"--vspo.eta must be in (0, 1], got {self.eta}")
        if not self.a_max > 0:
            raise ConfigError(f"--vspo.a-max must be > 0, got {self.a_max}")
        if self.buffer_capacity is not None and self.buffer_capacity < 1:
            raise ConfigError(f"--vspo.buffer-capacity must be >= 1, got {self.buffer_capacity}")


def _returns(group: list[Episode]) -> list[float]:
    return [ep.ret for ep in group]


class VSPO(TrainerExtension):
    """The VSPO extension; pass ``VSPO(config.vspo)`` to :func:`agentgym.train.loop.train`."""

    name = "vspo"
    summed_metrics = frozenset({"vspo/groups_dropped", "vspo/groups_replaced", "vspo/shortfall", "vspo/extra_groups",
                                "vspo/from_buffer", "vspo/buffer_size"})

    def __init__(self, cfg: VSPOConfig | None = None):
        self.cfg = cfg or VSPOConfig()
        self.buffer = ValueBuffer(alpha=self.cfg.alpha, r_max=self.cfg.r_max, sigma=self.cfg.value_sigma,
                                  capacity=self.cfg.buffer_capacity)
        self.reuse_of_group: dict[int, int] = {}
        self._metrics: dict[str, float] = {}

    def _remember(self, groups: dict[int, list[Episode]]) -> None:
        for group in groups.values():
            ep = group[0]
            rec = self.buffer.update(ep.group_key, _returns(group), {"seed": ep.seed, "options": dict(ep.reset_options)})
            for member in group:  # for the saved episodes (--log-episodes)
                member.signals.update({"vspo/resampled": member.tag == "resample", "vspo/task_value": rec.value,
                                       "vspo/visits": rec.visits})

    def _to_drop(self, groups: dict[int, list[Episode]]) -> list[int]:
        ids = list(groups)
        picks = groups_to_replace([_returns(groups[g]) for g in ids], self.cfg.tol, self.cfg.replace_below_value,
                                  self.cfg.r_max, self.cfg.value_sigma)
        return [ids[k] for k in picks]

    def after_rollout(self, ctx: StepContext, episodes: list[Episode]) -> list[Episode]:
        groups = by_group(episodes)
        self.reuse_of_group = {}
        zero_before = [is_zero_advantage(_returns(g), self.cfg.tol) for g in groups.values()]
        self._remember(groups)
        m = {"vspo/zero_std_frac_before": float(np.mean(zero_before)) if zero_before else 0.0,
             "vspo/groups_replaced": 0.0, "vspo/groups_dropped": 0.0, "vspo/extra_groups": 0.0,
             "vspo/from_buffer": 0.0, "vspo/rounds": 0.0, "vspo/shortfall": 0.0}
        if self.cfg.resample:
            drop = self._to_drop(groups)
            m["vspo/groups_dropped"] = float(len(drop))
            kept = {g: eps for g, eps in groups.items() if g not in set(drop)}
            need, tried = len(drop), {eps[0].group_key for eps in groups.values()}
            while need > 0 and m["vspo/rounds"] < self.cfg.max_resample_rounds:
                m["vspo/rounds"] += 1
                records = self.buffer.sample(need, ctx.rng, exclude=tried)
                requests = [GroupRequest(int(r.request["seed"]), dict(r.request["options"]), "resample")
                            for r in records]
                requests += ctx.next_requests(need - len(requests), tag="resample")
                played = by_group(ctx.collect(requests))
                m["vspo/extra_groups"] += len(requests)
                m["vspo/from_buffer"] += len(records)
                reused = {r.key for r in records}
                for g, eps in played.items():
                    key = eps[0].group_key
                    tried.add(key)
                    if key in reused:
                        self.buffer.mark_reused(key)
                        self.reuse_of_group[g] = self.buffer.get(key).reuses if key in self.buffer else 1
                        for ep in eps:
                            ep.signals["vspo/reuses"] = self.reuse_of_group[g]
                self._remember(played)
                bad = set(self._to_drop(played))
                for g, eps in played.items():
                    if g not in bad and need > 0:
                        kept[g] = eps
                        need -= 1
                        m["vspo/groups_replaced"] += 1
            m["vspo/shortfall"] = float(need)
            groups = kept
        zero_after = [is_zero_advantage(_returns(g), self.cfg.tol) for g in groups.values()]
        m["vspo/zero_std_frac_after"] = float(np.mean(zero_after)) if zero_after else 0.0
        m.update({f"vspo/buffer_{k}": v for k, v in self.buffer.stats().items()})
        self._metrics = m
        return [ep for eps in groups.values() for ep in eps]

    def transform_advantages(self, ctx, advantages, episodes):
        reuse = [self.reuse_of_group.get(ep.group, 0) for ep in episodes]
        return list(smooth_advantages(list(advantages), reuse, eta=self.cfg.eta if self.cfg.smoothing else None,
                                      a_max=self.cfg.a_max if self.cfg.clip else None)) if episodes else advantages

    def metrics(self) -> dict[str, float]:
        return dict(self._metrics)

    def state_dict(self) -> dict:
        return {"buffer": self.buffer.state_dict()}

    def load_state_dict(self, state: dict) -> None:
        if "buffer" in state:
            self.buffer.load_state_dict(state["buffer"])


@dataclass
class VSPOTrainConfig(TrainConfig):
    vspo: VSPOConfig = field(default_factory=VSPOConfig)


VSPO_METHOD = register(Method(
    name="vspo", summary="VSPO: zero-advantage groups replaced by tasks drawn by value, value-smoothing clipping",
    description="""VSPO: GRPO that replaces zero-advantage groups with tasks drawn by value, plus value-smoothing
clipping (SPEC §4.3).

    python trainers/vspo.py                                   # tiny model on ToolQA-v0, CPU, minutes
    python trainers/vspo.py --model runs/sft/final --vspo.eta 0.5
    python trainers/vspo.py --env-id ALFWorld-v0 --layout window --model /ckpt/Qwen2.5-1.5B-Instruct

Every GRPO flag works here; VSPO's own are --vspo.* (--help lists them). The run prints one line
per step and, at the end, held-out success and PRS return before -> after training.
""",
    config=VSPOTrainConfig, defaults=lambda: VSPOTrainConfig(run=RunConfig(output_dir="runs/vspo")),
    extensions=lambda config: [VSPO(config.vspo)], extension=(VSPO, VSPOConfig), doc="docs/trainers.md#vspo"))
