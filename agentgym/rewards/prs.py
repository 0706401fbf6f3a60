"""Progressive Reward Shaping (PRS): staged reward terms and how they combine into a return.

An env measures named terms in [0, 1] at each step (``format``, ``tool``, ``answer`` for ToolQA;
``format``, ``valid``, ``progress``, ``success`` for the embodied envs). A :class:`PRSTracker`
aggregates them into episode-level terms and combines those into the episode return::

    R = w_fmt * format + gate(format >= tau_fmt) * sum_k w_k * term_k

The per-step scalar reward is the change in that return since the previous step (the return as if
the episode ended now), so the rewards of an episode sum to its return exactly, while a step that
breaks the format or makes a useless call is paid less at that very step.

Stages: the terms are ordered into stages (format first, then tool use or validity, then answer
quality or task progress). At stage ``k`` only the terms of stages ``0..k`` pay, with their weights
rescaled to sum to one, so the return stays in [0, 1] at every stage. A fractional stage (e.g. 1.5)
interpolates the weights of the two stages around it, which is how a linear schedule moves weight
from the early terms to the later ones. :class:`PRSSchedule` gives the stage for a training step.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, get_args

Aggregate = Literal["mean", "last", "max"]
AGGREGATES: tuple[Aggregate, ...] = get_args(Aggregate)


@dataclass(frozen=True)
class PRSSpec:
    """The terms of one env family: their stage, default weight and how steps aggregate."""

    stages: tuple[tuple[str, ...], ...]
    """Term names per stage; stage 0 must be ``("format",)``."""
    weights: Mapping[str, float]
    """Default weight of each term at the final stage."""
    aggregate: Mapping[str, Aggregate]
    """How step values become the episode value: ``mean`` over the steps that measured the term,
    ``last`` measured value, or ``max``."""
    tau_fmt: float = 1.0
    """The format gate: later stages pay only when the episode format value reaches it."""

    def __post_init__(self) -> None:
        if not self.stages or self.stages[0] != ("format",):
            raise ValueError("PRSSpec.stages must start with the ('format',) stage")
        names = [t for stage in self.stages for t in stage]
        if set(names) != set(self.weights) or set(names) != set(self.aggregate):
            raise ValueError(f"PRSSpec terms {names} must match weights {sorted(self.weights)} "
                             f"and aggregate {sorted(self.aggregate)}")
        if any(w < 0 for w in self.weights.values()):
            raise ValueError(f"PRS weights must be non-negative, got {dict(self.weights)}")

    @property
    def terms(self) -> tuple[str, ...]:
        return tuple(t for stage in self.stages for t in stage)

    @property
    def final_stage(self) -> int:
        return len(self.stages) - 1

    def with_weights(self, weights: Mapping[str, float] | Sequence[float] | None = None,
                     tau_fmt: float | None = None) -> PRSSpec:
        """A copy with other weights (a mapping, or a sequence in term order) or format gate."""
        new_weights = dict(self.weights)
        if weights is not None:
            if isinstance(weights, Mapping):
                unknown = set(weights) - set(self.terms)
                if unknown:
                    raise ValueError(f"unknown PRS terms {sorted(unknown)}; known: {list(self.terms)}")
                new_weights.update({k: float(v) for k, v in weights.items()})
            else:
                weights = list(weights)
                if len(weights) != len(self.terms):
                    raise ValueError(f"expected {len(self.terms)} PRS weights for {list(self.terms)}, "
                                     f"got {len(weights)}")
                new_weights = dict(zip(self.terms, map(float, weights)))
        return PRSSpec(self.stages, new_weights, self.aggregate,
                       self.tau_fmt if tau_fmt is None else float(tau_fmt))

    def with_aggregate(self, aggregate: Mapping[str, str] | None = None) -> PRSSpec:
        """A copy in which the terms ``aggregate`` names combine their steps another way
        (``mean``, ``last`` or ``max``); the others keep theirs.

        >>> EMBODIED_PRS.with_aggregate({"progress": "max"}).aggregate["progress"]
        'max'
        """
        if not aggregate:
            return self
        if not isinstance(aggregate, Mapping):
            raise ValueError(f"PRS aggregate must be a mapping of term -> one of {list(AGGREGATES)}, "
                             f"got {aggregate!r}")
        unknown = set(aggregate) - set(self.terms)
        if unknown:
            raise ValueError(f"unknown PRS terms {sorted(unknown)}; known: {list(self.terms)}")
        bad = {t: how for t, how in aggregate.items() if how not in AGGREGATES}
        if bad:
            raise ValueError(f"PRS aggregate must be one of {list(AGGREGATES)} per term, got {bad}")
        return PRSSpec(self.stages, self.weights, {**self.aggregate, **aggregate}, self.tau_fmt)

    def stage_weights(self, stage: float | None = None) -> dict[str, float]:
        """Term weights at ``stage`` (None: the final stage), renormalized to sum to one."""
        if stage is None:
            stage = self.final_stage
        stage = min(max(float(stage), 0.0), float(self.final_stage))
        lo = int(stage)
        hi = min(lo + 1, self.final_stage)
        frac = stage - lo
        w_lo, w_hi = self._discrete_weights(lo), self._discrete_weights(hi)
        return {t: (1 - frac) * w_lo[t] + frac * w_hi[t] for t in self.terms}

    def _discrete_weights(self, stage: int) -> dict[str, float]:
        active = {t for s in self.stages[: stage + 1] for t in s}
        raw = {t: (self.weights[t] if t in active else 0.0) for t in self.terms}
        total = sum(raw.values())
        if total <= 0:
            return {t: float(t == "format") for t in self.terms}
        return {t: w / total for t, w in raw.items()}

    def combine(self, episode_terms: Mapping[str, float], stage: float | None = None) -> float:
        """The episode return for aggregated episode terms at a stage."""
        w = self.stage_weights(stage)
        fmt = episode_terms.get("format", 0.0)
        gated = sum(w[t] * episode_terms.get(t, 0.0) for t in self.terms if t != "format")
        # rounded so 0.1 + 0.2 + 0.7 reads as 1.0, not 0.9999999999999999
        return round(w["format"] * fmt + (gated if fmt >= self.tau_fmt - 1e-9 else 0.0), 12)


TOOLQA_PRS = PRSSpec(
    stages=(("format",), ("tool",), ("answer",)),
    weights={"format": 0.1, "tool": 0.2, "answer": 0.7},
    aggregate={"format": "mean", "tool": "mean", "answer": "last"},
)

EMBODIED_PRS = PRSSpec(
    stages=(("format",), ("valid",), ("progress", "success")),
    weights={"format": 0.1, "valid": 0.1, "progress": 0.3, "success": 0.5},
    aggregate={"format": "mean", "valid": "mean", "progress": "last", "success": "max"},
)


@dataclass
class PRSTracker:
    """Aggregates one episode's step terms and pays each step the change in the PRS return."""

    spec: PRSSpec
    stage: float | None = None
    _sums: dict[str, float] = field(default_factory=dict)
    _counts: dict[str, int] = field(default_factory=dict)
    _last: dict[str, float] = field(default_factory=dict)
    _max: dict[str, float] = field(default_factory=dict)
    _return: float = 0.0

    def reset(self, stage: float | None = None) -> None:
        self.stage = stage
        self._sums.clear()
        self._counts.clear()
        self._last.clear()
        self._max.clear()
        self._return = 0.0

    def add(self, step_terms: Mapping[str, float]) -> float:
        """Record one step's measured terms and return that step's reward."""
        for name, value in step_terms.items():
            if name not in self.spec.aggregate:
                raise KeyError(f"term {name!r} is not in this env's PRS terms {list(self.spec.terms)}")
            value = min(max(float(value), 0.0), 1.0)
            self._sums[name] = self._sums.get(name, 0.0) + value
            self._counts[name] = self._counts.get(name, 0) + 1
            self._last[name] = value
            self._max[name] = max(self._max.get(name, 0.0), value)
        new_return = self.spec.combine(self.episode_terms(), self.stage)
        reward, self._return = new_return - self._return, new_return
        return reward

    def episode_terms(self) -> dict[str, float]:
        """The episode value of every term so far (0.0 for a term never measured)."""
        out = {}
        for name in self.spec.terms:
            how = self.spec.aggregate[name]
            if name not in self._counts:
                out[name] = 0.0
            elif how == "mean":
                out[name] = self._sums[name] / self._counts[name]
            elif how == "last":
                out[name] = self._last[name]
            else:
                out[name] = self._max[name]
        return out

    @property
    def episode_return(self) -> float:
        return self._return


def stage_pass_rate(episode_terms: Sequence[Mapping[str, float]], spec: PRSSpec, stage: float) -> float:
    """The fraction of episodes that pass the gate of the PRS stage ``stage`` is in: stage 0's
    gate is the format gate (``format >= tau_fmt``); a later stage's gate is full marks on each of
    its terms. A threshold schedule advances when this reaches its threshold.

    >>> spec = PRSSpec(stages=(("format",), ("tool",), ("answer",)), weights={"format": .1, "tool": .2, "answer": .7},
    ...                aggregate={"format": "mean", "tool": "max", "answer": "last"})
    >>> terms = [{"format": 1.0, "tool": 0.5}, {"format": 1.0, "tool": 1.0}, {"format": 0.5, "tool": 1.0}]
    >>> stage_pass_rate(terms, spec, 0), stage_pass_rate(terms, spec, 1)
    (0.6666666666666666, 0.6666666666666666)
    """
    if not episode_terms:
        return 0.0
    k = min(int(stage), spec.final_stage)
    names = spec.stages[k]

    def passed(terms: Mapping[str, float]) -> bool:
        if k == 0:
            return terms.get("format", 0.0) >= spec.tau_fmt - 1e-9
        return all(terms.get(name, 0.0) >= 1.0 - 1e-9 for name in names)

    return sum(passed(t) for t in episode_terms) / len(episode_terms)


@dataclass
class PRSSchedule:
    """Which PRS stage a trainer should ask for at a given training step.

    ``kind="linear"`` moves from stage 0 to the final stage over ``num_steps`` training steps
    (fractional stages in between). ``kind="threshold"`` advances one whole stage each time the
    batch pass rate of the current stage's gate, reported through :meth:`update`, reaches
    ``threshold``. ``kind="constant"`` always returns ``start_stage``.
    """

    spec: PRSSpec
    kind: Literal["linear", "threshold", "constant"] = "linear"
    num_steps: int = 100
    """Linear: training steps from stage 0 to the final stage."""
    threshold: float = 0.8
    """Threshold: pass rate of the current stage that advances to the next."""
    start_stage: float = 0.0

    def __post_init__(self) -> None:
        if self.kind not in ("linear", "threshold", "constant"):
            raise ValueError(f"PRSSchedule.kind must be linear, threshold or constant, got {self.kind!r}")
        if self.kind == "linear" and self.num_steps <= 0:
            raise ValueError(f"PRSSchedule.num_steps must be positive, got {self.num_steps}")
        self._stage = float(self.start_stage)

    def stage_at(self, step: int) -> float:
        if self.kind == "linear":
            frac = min(max(step / self.num_steps, 0.0), 1.0)
            return self.start_stage + frac * (self.spec.final_stage - self.start_stage)
        return self._stage

    def update(self, pass_rate: float) -> float:
        """Report the batch pass rate of the current stage; returns the (maybe advanced) stage."""
        if self.kind == "threshold" and pass_rate >= self.threshold:
            self._stage = min(self._stage + 1.0, float(self.spec.final_stage))
        return self._stage

    def state_dict(self) -> dict:
        return {"stage": self._stage}

    def load_state_dict(self, state: Mapping) -> None:
        self._stage = float(state["stage"])
