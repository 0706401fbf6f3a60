"""Which env settings may come from data: the allow-list every file-borne env setting passes.

Env keyword arguments reach an env from two kinds of source. The user's own flags and code
(``gym.make(..., **kwargs)``, ``--env-kwargs``, a SkyRL ``env_config``, a board's flags) may set
anything the env takes. Settings read from data someone else may have written (a checkpoint's
``agentgym_sft.json`` recipe or ``trainer_state.json``, a task set's ``environment.yaml``, a SkyRL
dataset row's ``extras.env_kwargs``) may only set keys that **shape the task**: which tasks, how
they are shown, how long an episode runs, how the training reward is weighted
(:data:`TASK_SHAPING`). Anything that reaches a process (ScienceWorld's ``java_options`` reach the
JVM's command line, where ``-XX:OnOutOfMemoryError=<cmd>`` runs a shell command), a network
endpoint or another model (a judge), or the success criterion is the user's to choose, and a file
that asks for it is refused with one line naming the key. A path (``data_path``, ``dataset``,
``corpus``, ``game``, ``tasks``) is taken from data only when it lies inside the data's own folder
(an ALFWorld ``generated:N:ROOM`` set is not a path and is taken up to :data:`MAX_DATA_GENERATED`
games).

A key the user sets too is the user's: the file's value for it is never used, so it is not refused.

>>> check_data_env_kwargs({"max_turns": 5, "observation": "history+admissible"}, "recipe.json")
{'max_turns': 5, 'observation': 'history+admissible'}
>>> check_data_env_kwargs({"java_options": ["-Xmx1m"]}, "recipe.json")
Traceback (most recent call last):
...
agentgym.envs.data_settings.DataSettingError: recipe.json sets env setting 'java_options', which settings read from data may not carry (it reaches the JVM's command line); pass it with your own --env-kwargs or gym.make() arguments if you mean it
>>> check_data_env_kwargs({"java_options": ["-Xmx1m"], "max_turns": 5}, "recipe.json", user_keys={"java_options"})
{'max_turns': 5}
"""

from __future__ import annotations

import os
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

TASK_SHAPING = frozenset({
    # every env (agentgym.envs.base.AgentEnv)
    "max_turns", "reward_mode", "prs_weights", "tau_fmt", "prs_stage", "prs_aggregate", "expert", "render_mode",
    "max_action_chars", "max_observation_chars", "system_prompt", "observation", "history",
    "action_format", "mark_played", "constrained_choice", "scored_actions",
    # which tasks: every family's split and task selectors
    "split", "answer_form", "question_kinds", "top_k", "task_types", "task", "simplifications",
    "l0_every",
    # what the engine shows: ALFWorld's expert and its own translation cache switch, ScienceWorld's
    # valid-action list and its fixed identity hashes (a fixed JVM flag, not a free one)
    "expert_policy", "admissible_actions", "deterministic",
})
"""Env settings that only shape the task: data may carry them."""

DATA_PATHS = frozenset({"data_path", "dataset", "corpus", "game", "tasks"})
"""Env settings that name files: data may carry them when they lie inside the data's own folder."""

REFUSED_BECAUSE = {
    "java_options": "it reaches the JVM's command line",
    "java_path": "it names the program that runs",
    "engine_timeout": "it bounds the engine process",
    "judge": "it chooses the judge that scores answers (a model or a network endpoint)",
    "judge_kwargs": "it configures the judge that scores answers (a model or a network endpoint)",
    "success_threshold": "it sets the success criterion",
    "search_latency": "it makes every search sleep",
    "cache": "it names where translations are written and read",
}
"""Why each known setting outside the allow-list is refused (the error says it)."""

GENERATED_PREFIX = "generated"  # ALFWorld's offline sets, ``generated[:N][:ROOM]`` (agentgym.envs.alfworld.data)

MAX_DATA_GENERATED = 16_000
"""The most games an ALFWorld ``generated:N`` set named by data may ask for: the largest set
agentgym's own presets and recipes name (``generated:16000:tiny``, about 800 MB and a minute of one
core), so every checkpoint they record still loads; a larger set is the user's to ask for. Without a
bound, a file of a few bytes could start writing games until the disk is full."""


class DataSettingError(ValueError):
    """Env settings read from data asked for a key that only the user may set."""

    def __init__(self, source: str, key: str, why: str):
        self.source, self.key, self.why = source, key, why
        super().__init__(f"{source} sets env setting {key!r}, which settings read from data may not carry ({why}); "
                         "pass it with your own --env-kwargs or gym.make() arguments if you mean it")


def check_data_env_kwargs(kwargs: Mapping[str, Any], source: str, folder: str | os.PathLike | None = None,
                          user_keys: Collection[str] = ()) -> dict[str, Any]:
    """The env kwargs ``source`` (a file or row, named in errors) may set, or a
    :class:`DataSettingError` naming the first key it may not.

    Keys in ``user_keys`` (the caller sets them itself) are dropped, whatever the file says. A path
    setting is taken when it lies inside ``folder`` (the data's own folder; None: no path is taken)
    and is returned resolved, so the env reads it relative to the data, not the working directory.
    """
    if not isinstance(kwargs, Mapping):
        raise ValueError(f"{source}: env kwargs must be a mapping, got {type(kwargs).__name__}")
    out: dict[str, Any] = {}
    for key, value in kwargs.items():
        if key in user_keys:
            continue
        if key in TASK_SHAPING:
            out[key] = value
        elif key in DATA_PATHS:
            out[key] = _inside(value, key, source, folder)
        else:
            raise DataSettingError(source, str(key)[:80], REFUSED_BECAUSE.get(
                key, "it is not a setting that only shapes the task"))
    return out


def _inside(value: Any, key: str, source: str, folder: str | os.PathLike | None) -> Any:
    """``value`` (a path, a mapping of split to path, or ALFWorld's ``generated:...``) with each path
    resolved inside ``folder``, or a :class:`DataSettingError`."""
    if value is None:
        return None
    if key == "data_path" and isinstance(value, str) and value.split(":", 1)[0] == GENERATED_PREFIX:
        counts = [int(part) for part in value.split(":")[1:] if part.isdigit()]
        if counts and max(counts) > MAX_DATA_GENERATED:
            raise DataSettingError(source, key, f"it asks to generate {max(counts)} ALFWorld games, and data may ask "
                                                f"for at most {MAX_DATA_GENERATED}")
        return value
    if isinstance(value, Mapping):
        return {k: _inside(v, key, source, folder) for k, v in value.items()}
    if isinstance(value, (list, tuple)) and key == "game":
        return [_inside(v, key, source, folder) for v in value]
    if not isinstance(value, (str, os.PathLike)):
        raise DataSettingError(source, key, f"a path was expected, got {type(value).__name__}")
    text = os.fspath(value)
    if folder is None:
        raise DataSettingError(source, key, "it names a path, and this data has no folder of its own")
    if "$" in text or text.startswith("~"):
        raise DataSettingError(source, key, "it names a path through an environment variable or a home folder")
    root = Path(folder).resolve()
    path = (root / text).resolve()
    if not path.is_relative_to(root):
        raise DataSettingError(source, key, f"it names a path outside {root}")
    return str(path)
