"""Env presets: named env keyword arguments a run starts from, before ``--env-kwargs``.

A preset maps env ids to keyword arguments; an env it does not list is made with ``gym.make``'s
own defaults. Declared here once, and read by the trainers (``--preset``), ``agentgym eval``
(``--preset``) and the leaderboard:

- ``none``: every env's own defaults, what ``gym.make(env_id)`` gives.
- ``tiny``: settings the built-in tiny models can learn on CPU (short episodes, short prompts).
- ``tiny-rooms``: ALFWorld in tiny rooms with numbered admissible actions, sampled under the
  constraint, and a 128-game L0 pool (``l0_every``) for runs that train on ``--split L0``: the
  ``alfworld-l0`` recipe's env (:mod:`agentgym.train.config.recipes`).
- ``auto`` (the default): the env kwargs the ``--model`` directory records for the env (a
  cold start's or a trainer checkpoint's), else ``tiny`` for the built-in tiny models
  (:data:`TINY_MODELS`), else ``none``. So a real checkpoint trains on the env's own defaults
  unless told otherwise, and RL started from a cold start plays the env the cold start played.

``--env-kwargs`` merges over the preset key by key; a JSON ``null`` removes a key (the env's own
default applies).

>>> resolve_env_kwargs("ToolQA-v0", "tiny", overrides={"top_k": 2, "system_prompt": None})
('tiny', {'question_kinds': ['single_hop'], 'max_turns': 2, 'action_format': 'tags', 'top_k': 2})
>>> resolve_env_kwargs("ToolQA-v0", "/ckpt/Qwen2.5-1.5B-Instruct")
('none', {})
"""

from __future__ import annotations

import copy
import json
from collections.abc import Collection, Mapping
from typing import Any

from agentgym.envs.arguments import json_object
from agentgym.train.base.records import recorded_env_kwargs

TINY_MODELS = ("tiny", "tiny-small", "tiny-wide")
"""The built-in model names (``agentgym.agents.tiny``), built offline; ``auto`` gives them ``tiny``."""
AUTO = "auto"
RECORDED = "recorded"
"""What ``auto`` resolves to when the model directory records env kwargs for the env."""

TINY_TOOLQA_PROMPT = "Search with <search>query</search>, then reply <answer>answer</answer>."
TINY_ALFWORLD_PROMPT = "Solve the household task. Reply with the number of one admissible action."
TINY_ALFWORLD_SCORED_PROMPT = "Solve the household task. Reply with one admissible action."
TINY_FIND_PROMPT = "Find the thing the task names, focus on it, then move it where the task says. Reply with one action."
FIND_TASKS = ["find-living-thing", "find-plant", "find-animal"]
"""ScienceWorld's find tasks a learner can show progress on (``find-non-living-thing`` is left out:
a random valid agent scores 0.63 there)."""

PRESETS: dict[str, dict[str, dict[str, Any]]] = {
    "none": {},
    "tiny": {
        # single-hop questions, one search then the answer, `<search>` tags, one passage per search
        # and a one-line system prompt keep an episode near 200 tokens
        "ToolQA-v0": {"question_kinds": ["single_hop"], "max_turns": 2, "action_format": "tags", "top_k": 1,
                      "system_prompt": TINY_TOOLQA_PROMPT},
        # the task and the last steps in every observation and numbered admissible actions, so the
        # model copies no object name; small rooms keep the list short (docs/benchmarks.md)
        "ALFWorld-v0": {"observation": "history+admissible", "history": 2, "action_format": "choice",
                        "max_turns": 15, "data_path": "generated:4000:small", "system_prompt": TINY_ALFWORLD_PROMPT},
    },
    "tiny-rooms": {
        # tiny rooms (4 receptacles, 4 objects), the task and the numbered admissible actions with
        # the played ones marked, replies sampled only among those numbers, the searching expert a
        # policy can imitate, and L0 every 67th training game of each seen type: 128 games
        # (docs/benchmarks.md, "ALFWorld-v0: what RL learns at L0")
        "ALFWorld-v0": {"observation": "history+admissible", "history": 0, "action_format": "choice",
                        "mark_played": True, "constrained_choice": True, "l0_every": 67,
                        "data_path": "generated:16000:tiny", "expert_policy": "search", "max_turns": 15,
                        "system_prompt": TINY_ALFWORLD_PROMPT},
    },
    "tiny-rooms-scored": {
        # tiny-rooms' games, observations and marks, the actions listed in words, and the policy
        # choosing one whole by scoring each listed action (agentgym.agents.scoring) where
        # tiny-rooms has it sample a number
        "ALFWorld-v0": {"observation": "history+admissible", "history": 0, "action_format": "text",
                        "mark_played": True, "scored_actions": True, "l0_every": 67,
                        "data_path": "generated:16000:tiny", "expert_policy": "search", "max_turns": 15,
                        "system_prompt": TINY_ALFWORLD_SCORED_PROMPT},
    },
    "tiny-find-scored": {
        # ScienceWorld's find tasks with the easy simplifications (doors open, teleporting allowed),
        # the task and the last steps without the list (hundreds of actions: the policy scores each
        # one apart, agentgym.agents.scoring), and 15 turns, about twice the gold paths' length
        "ScienceWorld-v0": {"task": FIND_TASKS, "observation": "history", "history": 2, "scored_actions": True,
                            "max_turns": 15, "system_prompt": TINY_FIND_PROMPT},
    },
}

def preset_choices() -> tuple[str, ...]:
    """Every name ``--preset`` takes.

    >>> preset_choices()
    ('auto', 'none', 'tiny', 'tiny-rooms', 'tiny-rooms-scored', 'tiny-find-scored')
    """
    return (AUTO, *PRESETS)


def check_preset(name: str, flag: str = "--preset") -> None:
    """A ``ValueError`` naming the choices when ``name`` is not a preset."""
    if name not in preset_choices():
        raise ValueError(f"{flag} {name!r} is not a preset; choose one of {', '.join(preset_choices())}")


def preset_kwargs(name: str, env_id: str) -> dict[str, Any]:
    """A copy of preset ``name``'s kwargs for ``env_id`` ({} when the preset does not list the env).

    >>> preset_kwargs("tiny", "ScienceWorld-v0")
    {}
    """
    check_preset(name)
    if name == AUTO:
        raise ValueError("preset 'auto' depends on the model: use resolve_env_kwargs")
    return copy.deepcopy(PRESETS[name].get(env_id, {}))


def merge_env_kwargs(base: Mapping[str, Any], overrides: Mapping[str, Any] | None) -> dict[str, Any]:
    """``base`` with ``overrides`` set key by key; an override of ``None`` (JSON ``null``) removes the key.

    >>> merge_env_kwargs({"max_turns": 2, "top_k": 1}, {"top_k": 3, "max_turns": None, "history": 1})
    {'top_k': 3, 'history': 1}
    """
    out = copy.deepcopy(dict(base))
    for key, value in (overrides or {}).items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = copy.deepcopy(value)
    return out


def base_env_kwargs(env_id: str, model: str | None, preset: str = AUTO,
                    user_keys: Collection[str] = ()) -> tuple[str, dict[str, Any]]:
    """The env kwargs a run on ``env_id`` with ``model`` starts from, and what they are: the
    preset's name, or :data:`RECORDED` when ``auto`` found the ones the model directory records.

    What a model directory records is data: it may only set the keys that shape the task
    (:mod:`agentgym.envs.data_settings`), except those in ``user_keys``, which the caller sets
    itself and which are left out of the recorded ones."""
    check_preset(preset)
    if preset == AUTO:
        if model is not None and model not in TINY_MODELS:
            recorded = recorded_env_kwargs(model, env_id, user_keys)
            if recorded is not None:
                return RECORDED, recorded
        preset = "tiny" if model in TINY_MODELS else "none"
    return preset, preset_kwargs(preset, env_id)


def resolve_env_kwargs(env_id: str, model: str | None, preset: str = AUTO,
                       overrides: Mapping[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
    """``(what the base is, env kwargs)``: :func:`base_env_kwargs` with ``overrides`` (a run's
    ``--env-kwargs``) merged over it by :func:`merge_env_kwargs`."""
    name, base = base_env_kwargs(env_id, model, preset, user_keys=tuple(overrides or ()))
    return name, merge_env_kwargs(base, overrides)


def describe(env_id: str, name: str, kwargs: Mapping[str, Any], asked: str = AUTO) -> str:
    """The startup line's text: the env, the preset and the resolved kwargs.

    >>> describe("ToolQA-v0", "none", {"reward_mode": "prs"})
    'ToolQA-v0, preset none (auto), env kwargs {"reward_mode": "prs"}'
    """
    how = name if asked != AUTO else f"{name} (auto)"
    if asked == AUTO and name == RECORDED:
        how = "recorded (auto: the model directory's record)"
    return f"{env_id}, preset {how}, env kwargs {json.dumps(dict(kwargs), default=str)}"


def parse_env_kwargs(text: str | dict | None) -> dict[str, Any]:
    if not text:
        return {}
    if isinstance(text, dict):
        return dict(text)
    return json_object(text)
