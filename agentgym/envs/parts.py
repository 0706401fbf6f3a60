"""The parts of an env besides its dynamics, each with its own keyword arguments and its own checks.

:class:`~agentgym.envs.base.AgentEnv` is made of them, and ``gym.make`` takes their keywords as it
always has (``gym.make("ALFWorld-v0", reward_mode="binary", observation="history+admissible")``):

- :class:`RewardSettings`: how turns are paid (``reward_mode``, ``prs_weights``, ``tau_fmt``,
  ``prs_stage``, ``prs_aggregate``).
- :class:`TextLimits`: how long an episode, an action and an observation may be (``max_turns``,
  ``max_action_chars``, ``max_observation_chars``), and the text spaces they give.
- :class:`ChoiceSettings`: how the admissible actions an engine lists are shown and chosen
  (``observation``, ``history``, ``action_format``, ``mark_played``, ``constrained_choice``);
  only an env whose engine lists them (``lists_admissible_actions = True``) takes these.

An env family's own constructor names only its own arguments and hands the rest to the base, which
gives each part its keywords (:func:`take`); a keyword no part and no constructor takes is one
``TypeError`` naming the closest spelling. The turn limit a Gymnasium ``TimeLimit`` wrapper sets
lowers ``max_turns`` per episode (:mod:`agentgym.envs.time_limit`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agentgym.envs import arguments
from agentgym.envs.observations import DEFAULT_HISTORY, ObservationView, check_options
from agentgym.envs.spaces import text_spaces
from agentgym.rewards.prs import PRSSpec

REWARD_MODES = ("prs", "binary")


@dataclass(frozen=True)
class RewardSettings:
    """How an env pays its turns."""

    reward_mode: str = "prs"
    """``prs``: each step pays the change in the staged PRS return; ``binary``: 1 on success, else 0"""
    prs_weights: Mapping[str, float] | Sequence[float] | None = None
    """the PRS terms' weights (a mapping by term or a sequence in term order; None: the env's own)"""
    tau_fmt: float | None = None
    """the format gate (None: the env's own)"""
    prs_stage: float | None = None
    """the PRS stage episodes start at (None: the final stage, full reward)"""
    prs_aggregate: Mapping[str, str] | None = None
    """how a term's step values become its episode value, per term: ``mean``, ``last`` or ``max``
    (None: the env's own, e.g. ``{"progress": "max"}`` keeps the best progress an episode reached)"""

    def __post_init__(self) -> None:
        if self.reward_mode not in REWARD_MODES:
            raise ValueError(f"reward_mode must be one of {REWARD_MODES}, got {self.reward_mode!r}")
        object.__setattr__(self, "prs_stage", arguments.prs_stage(self.prs_stage))

    def spec(self, base: PRSSpec) -> PRSSpec:
        """The env's PRS terms (``base``) under these weights, format gate and aggregates (checked there)."""
        return base.with_weights(self.prs_weights, self.tau_fmt).with_aggregate(self.prs_aggregate)


@dataclass(frozen=True)
class TextLimits:
    """How long an episode, an action and an observation may be."""

    max_turns: int
    """turns before the episode is truncated"""
    max_action_chars: int = 100_000
    """a longer action is an invalid turn, not sent to the engine"""
    max_observation_chars: int = 1_000_000
    """the observation space's longest text"""

    def __post_init__(self) -> None:
        for name in keywords(TextLimits):
            object.__setattr__(self, name, arguments.positive_int(name, getattr(self, name)))

    def spaces(self):
        """``(observation_space, action_space)``: Gymnasium ``Text`` spaces of these lengths."""
        return text_spaces(self.max_observation_chars, self.max_action_chars)


@dataclass(frozen=True)
class ChoiceSettings:
    """How the admissible actions an engine lists are shown and chosen (envs/observations.py)."""

    observation: str = "raw"
    """``raw`` (the engine's text), ``history`` or ``history+admissible``"""
    history: int = DEFAULT_HISTORY
    """past turns the observation repeats"""
    action_format: str = "text"
    """``text`` (a command) or ``choice`` (a command or the number of a listed one)"""
    mark_played: bool = False
    """mark the listed actions the episode already played"""
    constrained_choice: bool = False
    """list the replies a policy may give (``info["allowed_replies"]``), which it samples token by
    token within; needs ``action_format="choice"``"""
    scored_actions: bool = False
    """list each admissible action in its own words as a reply to score (``info["scored_replies"]``):
    the policy picks one whole, by the softmax over their log-probabilities (agentgym.agents.scoring)"""

    def __post_init__(self) -> None:
        check_options(self.observation, self.history, self.action_format, self.mark_played)
        arguments.constrained_choice(self.constrained_choice, self.action_format)
        arguments.scored_actions(self.scored_actions, self.constrained_choice)
        object.__setattr__(self, "history", int(self.history))

    @property
    def asked(self) -> list[str]:
        """The settings that show admissible actions, as ``name=value``, where they differ from the default."""
        return [f"{f.name}={getattr(self, f.name)!r}" for f in dataclasses.fields(self)
                if f.name in ("observation", "action_format", "mark_played", "scored_actions")
                and getattr(self, f.name) != f.default]

    def view(self) -> ObservationView:
        return ObservationView(self.observation, self.history, self.action_format == "choice", self.mark_played)


def keywords(part: type) -> tuple[str, ...]:
    """The keyword arguments a part takes."""
    return tuple(f.name for f in dataclasses.fields(part))


def take(part: type, given: dict[str, Any], **fixed: Any):
    """The part made from ``fixed`` and its other keywords in ``given``, which are removed from it."""
    return part(**fixed, **{name: given.pop(name) for name in keywords(part) if name in given and name not in fixed})
