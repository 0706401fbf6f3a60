"""The PRS terms of an episode as ``reward_components``: one schema every adapter emits.

Training frameworks that take a scalar reward plus its parts (OpenEnv's multi-component reward
proposal, GDPO-style per-component advantages, dashboards) read a list of components, each with a
``name``, a ``type``, a ``value`` and a ``weight``. Every agentgym env puts this list in the final
step's ``info["reward_components"]``; the OpenEnv server, the TRL, verifiers and SkyRL adapters
pass the same list on, so a component means the same thing wherever it is read.

One component per PRS term of the env, in stage order:

- ``name``: the term (``format``, ``tool``, ``answer``; ``format``, ``valid``, ``progress``, ``success``).
- ``type``: what kind of signal it is: ``shaping`` (format, tool use, validity: process terms that
  pay on the way), ``progress`` (a graded outcome in [0, 1]: answer quality, task progress) or
  ``success`` (the task was solved, 0 or 1).
- ``value``: the episode value of the term, in [0, 1] (``info["episode_terms"]``).
- ``weight``: its weight at the PRS stage the episode was played at (weights sum to 1).
- ``stage``: the PRS stage that introduces the term (0 is the format stage).
- ``gated``: whether the term pays only when the format gate passes (every term but ``format``).
- ``contribution``: what the term added to the episode's PRS return: ``weight * value``, or 0 for
  a gated term when the gate did not pass. The contributions sum to ``info["episode_return"]``.

>>> from agentgym.rewards.prs import TOOLQA_PRS
>>> parts = reward_components(TOOLQA_PRS, {"format": 1.0, "tool": 0.5, "answer": 1.0})
>>> [(c["name"], c["type"], c["weight"], round(c["contribution"], 2)) for c in parts]
[('format', 'shaping', 0.1, 0.1), ('tool', 'shaping', 0.2, 0.1), ('answer', 'progress', 0.7, 0.7)]
>>> round(sum(c["contribution"] for c in parts), 2) == TOOLQA_PRS.combine({"format": 1.0, "tool": 0.5, "answer": 1.0})
True
>>> [c["contribution"] for c in reward_components(TOOLQA_PRS, {"format": 0.5, "tool": 1.0, "answer": 1.0})][1:]
[0.0, 0.0]
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agentgym.rewards.prs import PRSSpec

# A term's kind, by name; a term of a user's own PRSSpec that is not listed here is ``shaping``.
COMPONENT_TYPES: dict[str, str] = {
    "format": "shaping", "tool": "shaping", "valid": "shaping",
    "answer": "progress", "progress": "progress",
    "success": "success",
}
COMPONENT_KEYS = ("name", "type", "value", "weight", "stage", "gated", "contribution")


def reward_components(spec: PRSSpec, episode_terms: Mapping[str, float],
                      stage: float | None = None) -> list[dict[str, Any]]:
    """The episode's PRS terms as ``reward_components`` (see the module docstring for the keys)."""
    weights = spec.stage_weights(stage)
    gate_passed = episode_terms.get("format", 0.0) >= spec.tau_fmt - 1e-9
    out = []
    for stage_index, names in enumerate(spec.stages):
        for name in names:
            value = float(episode_terms.get(name, 0.0))
            gated = name != "format"
            weight = float(weights[name])
            out.append({"name": name, "type": COMPONENT_TYPES.get(name, "shaping"), "value": value,
                        "weight": weight, "stage": stage_index, "gated": gated,
                        "contribution": 0.0 if gated and not gate_passed else weight * value})
    return out
