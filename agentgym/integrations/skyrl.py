"""Any agentgym env, with its PRS terms, as a SkyRL-gym text env (``pip install skyrl-gym``).

SkyRL's generator makes one env per dataset row with ``skyrl_gym.make(env_class, env_config=...,
extras=row)``, calls ``init(prompt)`` for the first chat messages, then ``step(action_text)``
until ``done``, appending each step's ``observations`` messages to the conversation. Register
the adapter once, then name it in the dataset's ``env_class`` column::

    from agentgym.integrations.skyrl import register
    register()                                   # skyrl_gym id "agentgym"
    env = skyrl_gym.make("agentgym", extras={"env_id": "ToolQA-v0", "seed": 3,
                                             "env_kwargs": {"question_kinds": ["single_hop"]},
                                             "reset_options": {"split": "train"}})

The agentgym env writes the prompt: ``init`` ignores the row's prompt and returns the env's system
prompt and first observation (the row only chooses the task through ``seed`` / ``reset_options``,
e.g. ``{"task_id": ...}``). Each step's reward is the env's PRS reward, so an episode's rewards sum
to its PRS return; ``metadata`` carries the step's PRS terms, and ``get_metrics`` the episode's
terms, return and success, which SkyRL averages across episodes; the last step's ``metadata`` also
has the episode's ``reward_components`` (agentgym.rewards.components).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gymnasium as gym

try:
    from skyrl_gym.envs.base_text_env import BaseTextEnv, BaseTextEnvStepOutput
except ImportError as e:  # pragma: no cover - exercised only without the extra
    raise ImportError('the SkyRL adapter needs skyrl-gym: pip install "agentgym[skyrl]"') from e

SKYRL_ID = "agentgym"


def _config_setting(env_config: Any, key: str, default: Any = None) -> Any:
    """A setting of the env config alone (a dict or an OmegaConf node), else ``default``."""
    if env_config is None:
        return default
    try:
        return env_config.get(key, default)
    except AttributeError:
        return getattr(env_config, key, default)


def _setting(env_config: Any, extras: Mapping[str, Any], key: str, default: Any = None) -> Any:
    """A setting from the row's extras, else from the env config (a dict or an OmegaConf node)."""
    return extras[key] if key in extras else _config_setting(env_config, key, default)


def make_agentgym_env(env_id: str, kwargs: Any) -> gym.Env:
    """``gym.make(env_id, **kwargs)`` for an agentgym text env, or a one-line ValueError: the
    adapter needs the system prompt and PRS terms only agentgym envs give."""
    import agentgym  # noqa: F401  registers the envs
    from agentgym.envs.arguments import json_object
    from agentgym.envs.base import AgentEnv

    if isinstance(kwargs, str):
        kwargs = json_object(kwargs, "env_kwargs")
    if not isinstance(kwargs, Mapping):
        raise ValueError(f"env_kwargs is not a JSON object: {kwargs!r:.100}")
    try:
        spec = gym.spec(env_id)
    except gym.error.Error as e:
        raise ValueError(f"unknown env_id {env_id!r} ({e}); `agentgym list` shows the agentgym env ids") from None
    env = gym.make(spec.id, **dict(kwargs))
    if not isinstance(env.unwrapped, AgentEnv):
        env.close()
        raise ValueError(f"{env_id} is not an agentgym env (it is {type(env.unwrapped).__name__}); the SkyRL "
                         "adapter serves agentgym's text envs, e.g. ToolQA-v0, ALFWorld-v0, ScienceWorld-v0")
    return env




def _as_kwargs(value: Any, where: str) -> dict[str, Any]:
    from agentgym.envs.arguments import json_object

    if value is None:
        return {}
    if isinstance(value, str):
        value = json_object(value, where)
    if not isinstance(value, Mapping):
        raise ValueError(f"{where} is not a JSON object: {value!r:.100}")
    return dict(value)


def row_env_kwargs(env_config: Any, extras: Mapping[str, Any]) -> dict[str, Any]:
    """The env kwargs of one episode: the env config's (the user's own), with the dataset row's
    ``extras.env_kwargs`` under them. A row is data: it may only set keys that shape the task
    (:mod:`agentgym.envs.data_settings`), and one that asks for any other is refused."""
    from agentgym.envs.data_settings import check_data_env_kwargs

    config = _as_kwargs(_config_setting(env_config, "env_kwargs"), "env_config.env_kwargs")
    row = _as_kwargs(extras.get("env_kwargs"), "the row's extras.env_kwargs")
    return {**check_data_env_kwargs(row, "the row's extras.env_kwargs", user_keys=config), **config}


class AgentGymSkyRLEnv(BaseTextEnv):
    """One agentgym episode behind SkyRL-gym's ``init`` / ``step`` / ``close``.

    Settings (row ``extras`` first, then ``env_config``): ``env_id`` (required), ``seed``,
    ``reset_options`` (a dict, e.g. ``{"split": "valid"}``); ``env_kwargs`` (a dict or JSON
    object) from both, the env config's over the row's, the row's limited to the keys that shape
    the task (:func:`row_env_kwargs`).
    """

    def __init__(self, env_config: Any = None, extras: Mapping[str, Any] | None = None):
        super().__init__()
        extras = dict(extras or {})
        env_id = _setting(env_config, extras, "env_id")
        if not env_id:
            raise ValueError("AgentGymSkyRLEnv needs an env_id (in the row's extras or the env config)")
        self.env = make_agentgym_env(env_id, row_env_kwargs(env_config, extras))
        self.seed = _setting(env_config, extras, "seed")
        self.reset_options = dict(_setting(env_config, extras, "reset_options") or {})
        self.max_turns = int(getattr(self.env.unwrapped, "max_turns", 1) or 1)
        self.info: dict[str, Any] = {}
        self.done = False

    def init(self, prompt: Any = None) -> tuple[list[dict[str, str]], dict[str, Any]]:
        obs, info = self.env.reset(seed=self.seed, options=self.reset_options or None)
        self.info, self.done, self.turns = dict(info), False, 0
        messages = [{"role": "system", "content": info["system_prompt"]}, {"role": "user", "content": obs}]
        return messages, {"task_id": info.get("task_id"), "group_key": info.get("group_key")}

    def step(self, action: str) -> BaseTextEnvStepOutput:
        if self.done:
            raise RuntimeError("the episode is over: SkyRL makes a new env for the next one")
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.turns += 1
        self.info, self.done = dict(info), bool(terminated or truncated)
        metadata = {"reward_terms": dict(info.get("reward_terms", {})), "action_valid": info.get("action_valid"),
                    "truncated": bool(truncated)}
        if self.done:
            metadata.update(success=bool(info.get("success", False)),
                            episode_return=float(info.get("episode_return", 0.0)),
                            episode_terms=dict(info.get("episode_terms", {})),
                            reward_components=list(info.get("reward_components", [])))
        observations = [] if self.done else [{"role": "user", "content": obs}]
        return BaseTextEnvStepOutput(observations=observations, reward=float(reward), done=self.done,
                                     metadata=metadata, postprocessed_action=None)

    def get_metrics(self) -> dict[str, Any]:
        terms = self.info.get("episode_terms", {})
        return {"success": float(bool(self.info.get("success", False))),
                "episode_return": float(self.info.get("episode_return", 0.0)),
                "turns": self.turns, **{f"terms/{k}": float(v) for k, v in terms.items()}}

    def close(self) -> None:
        self.env.close()


def register(env_class: str = SKYRL_ID) -> str:
    """Register the adapter with skyrl_gym under ``env_class`` (once; again is a no-op)."""
    import skyrl_gym
    from skyrl_gym.envs.registration import registry

    if env_class not in registry:
        skyrl_gym.register(id=env_class, entry_point=f"{__name__}:AgentGymSkyRLEnv")
    return env_class
