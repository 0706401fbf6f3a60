"""Any agentgym env as a TRL ``environment_factory`` (``pip install "agentgym[trl]"``, trl >= 1.0).

TRL's ``GRPOTrainer`` (and ``AsyncGRPOTrainer``) makes one environment object per rollout, calls
``reset(**row)`` with the dataset row and appends what it returns to the prompt, and exposes the
object's public methods to the model as tools. :class:`EnvironmentFactory` builds such objects over
any registered env::

    from trl import GRPOConfig, GRPOTrainer
    from agentgym.integrations.trl import EnvironmentFactory, prs_reward

    envs = EnvironmentFactory("ToolQA-v0")
    trainer = GRPOTrainer(model="path/to/checkpoint", reward_funcs=prs_reward,
                          train_dataset=envs.dataset("train"), environment_factory=envs,
                          args=GRPOConfig(max_steps=100, max_completion_length=512))
    trainer.train()

(docs/integrations.md has a version that runs as written on a CPU, with the built-in tiny model.)

- Tools: one method per tool of the env's action schema (ToolQA: ``search``, ``open``,
  ``calculate``), made from its OpenAI function schemas; each call is one env step, sent as the
  env's ``<tool_call>`` action. Embodied envs (no tools) get one ``act(command)`` tool.
- The model's last message (the one with no tool call) is its last action: :func:`prs_reward`
  steps the env with it (ToolQA: ``<answer>...</answer>`` ends the episode), then returns each
  episode's PRS return (the sum of its step rewards; 0/1 with ``reward_mode="binary"``). It logs the
  PRS terms of the episodes that ended as ``prs/<term>``, with ``prs/ended`` and ``prs/success``.
- Rows of :meth:`EnvironmentFactory.dataset` hold the env's system prompt and a ``task_id``, so
  the ``num_generations`` rollouts of a row play the same task (a GRPO group). That system prompt
  lists the tools; the tiny models' chat template renders TRL's tool calls and results in the env's
  syntax and does not list ``tools=`` again (:data:`agentgym.agents.tiny.CHAT_TEMPLATE`), so the
  tools are listed once. A model whose template lists ``tools=`` itself wants an env
  ``system_prompt`` without the list.

The factory and :func:`prs_reward` pickle, as ``AsyncGRPOTrainer``
(``from trl.experimental.async_grpo import AsyncGRPOTrainer``) requires.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Mapping
from typing import Any

import gymnasium as gym

_JSON_TYPES = {"string": str, "integer": int, "number": float, "boolean": bool, "array": list, "object": dict}
_CLASSES: dict[str, type] = {}  # one tool class per env id and kwargs, made on first use


def _unwrap_tool_response(text: str) -> str:
    """A tool env's observation without its ``<tool_response>`` wrapper: the chat template adds its own."""
    stripped = text.strip()
    if stripped.startswith("<tool_response>") and stripped.endswith("</tool_response>"):
        return stripped[len("<tool_response>"):-len("</tool_response>")].strip("\n")
    return text


class AgentGymToolEnv:
    """One agentgym episode per rollout. Subclasses made by :func:`environment_class` add the tools;
    everything else here is ``reset`` (TRL calls it) or private (TRL would expose it as a tool)."""

    _env_id: str = ""
    _tool_names: tuple[str, ...] = ()

    def __init__(self, env_kwargs: Mapping[str, Any] | None = None, seed: int | None = None):
        import agentgym  # noqa: F401  registers the envs

        self._env = gym.make(self._env_id, **dict(env_kwargs or {}))
        self._seed = seed
        self._info: dict[str, Any] = {}
        self._return = 0.0
        self._done = True
        self._turns = 0

    def reset(self, prompt: Any = None, task_id: Any = None, split: str | None = None, seed: int | None = None,
              prs_stage: float | None = None, **_other_columns: Any) -> str:
        """Start an episode: the row's ``task_id`` (else one drawn from the env's seed), in ``split``.
        Returns the first observation, after the env's system prompt when the row's prompt has none."""
        options = {k: v for k, v in (("task_id", task_id), ("split", split), ("prs_stage", prs_stage)) if v is not None}
        if seed is None:
            seed, self._seed = self._seed, None  # the factory's seed starts this object's draws, once
        obs, info = self._env.reset(seed=seed, options=options or None)
        self._info, self._return, self._done, self._turns = dict(info), 0.0, False, 0
        has_system = isinstance(prompt, list) and any(m.get("role") == "system" for m in prompt)
        return obs if has_system else f"{info['system_prompt']}\n\n{obs}"

    def _step(self, action: str) -> str:
        if self._done:
            raise RuntimeError("the episode is over: this call is not played")
        obs, reward, terminated, truncated, info = self._env.step(action)
        self._info, self._return, self._turns = dict(info), self._return + float(reward), self._turns + 1
        self._done = bool(terminated or truncated)
        return obs

    def _finish(self, final_text: str | None) -> None:
        """The model stopped calling tools: its last message, if any, is its last action."""
        if final_text is not None and not self._done:
            self._step(final_text)


def _tool_method(name: str, schema: Mapping[str, Any]):
    """A method named ``name`` whose signature, type hints and Google-style docstring say what the
    OpenAI function ``schema`` says (TRL and transformers read tools from exactly those)."""
    params = schema.get("parameters", {})
    properties, required = params.get("properties", {}), set(params.get("required", []))

    def call(self, **arguments):
        action = json.dumps({"name": name, "arguments": arguments})
        return _unwrap_tool_response(self._step(f"<tool_call>{action}</tool_call>"))

    parameters = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    annotations: dict[str, Any] = {}
    args_doc = []
    for arg in sorted(properties, key=lambda a: a not in required):
        hint = _JSON_TYPES.get(properties[arg].get("type"), str)
        if arg not in required:
            hint = hint | None
        annotations[arg] = hint
        parameters.append(inspect.Parameter(arg, inspect.Parameter.KEYWORD_ONLY, annotation=hint,
                                            default=inspect.Parameter.empty if arg in required else None))
        args_doc.append(f"    {arg}: {properties[arg].get('description', arg)}")
    annotations["return"] = str
    call.__name__ = call.__qualname__ = name
    call.__annotations__ = annotations
    call.__signature__ = inspect.Signature(parameters, return_annotation=str)
    call.__doc__ = schema.get("description", name) + ("\n\nArgs:\n" + "\n".join(args_doc) if args_doc else "")
    return call


def _act(self, command: str) -> str:
    """Do one thing in the world, e.g. "go to countertop 1" or "open door to kitchen".

    Args:
        command: the action, in the words the environment understands
    """
    return self._step(f"<action>{command}</action>")


def environment_class(env_id: str, env_kwargs: Mapping[str, Any] | None = None) -> type:
    """The :class:`AgentGymToolEnv` subclass for ``env_id``: its tools come from the env's schemas."""
    key = json.dumps([env_id, dict(env_kwargs or {})], sort_keys=True, default=str)
    if key in _CLASSES:
        return _CLASSES[key]
    import agentgym  # noqa: F401  registers the envs

    probe = gym.make(env_id, **dict(env_kwargs or {}))
    try:
        unwrapped = probe.unwrapped
        tools = list(getattr(unwrapped, "tools", []) or [])
        if tools and getattr(unwrapped, "action_format", "json") != "json":
            raise ValueError(f"{env_id} with action_format={unwrapped.action_format!r}: TRL's tool calls are JSON, "
                             "make it with action_format='json'")
    finally:
        probe.close()
    methods: dict[str, Any] = {}
    for tool in tools:
        function = tool.get("function", tool)
        if function["name"] in ("reset", "get_reward") or function["name"].startswith("_"):
            raise ValueError(f"{env_id}'s tool name {function['name']!r} is reserved by TRL")
        methods[function["name"]] = _tool_method(function["name"], function)
    if not tools:
        methods["act"] = _act
    name = "".join(ch for ch in env_id if ch.isalnum())
    cls = type(name, (AgentGymToolEnv,), {"_env_id": env_id, "_tool_names": tuple(methods), **methods,
                                          "__module__": __name__, "__doc__": f"{env_id} as a TRL environment."})
    _CLASSES[key] = cls
    return cls


class EnvironmentFactory:
    """``environment_factory=`` for TRL: each call makes one :class:`AgentGymToolEnv` for ``env_id``.

    ``seed``: object ``i`` starts its task draws at ``seed + i`` (rows with a ``task_id`` or
    ``seed`` column choose for themselves). Picklable: it holds only the id, kwargs and seed.
    """

    def __init__(self, env_id: str, env_kwargs: Mapping[str, Any] | None = None, seed: int = 0):
        self.env_id = env_id
        self.env_kwargs = dict(env_kwargs or {})
        self.seed = int(seed)
        self._made = 0
        environment_class(env_id, self.env_kwargs)  # fail here on a bad id or kwargs

    def __call__(self) -> AgentGymToolEnv:
        env = environment_class(self.env_id, self.env_kwargs)(self.env_kwargs, seed=self.seed + self._made)
        self._made += 1
        return env

    def __getstate__(self) -> dict:
        return {"env_id": self.env_id, "env_kwargs": self.env_kwargs, "seed": self.seed, "_made": self._made}

    def dataset(self, split: str | None = None, limit: int | None = None):
        """A ``datasets.Dataset`` of the split's tasks: ``prompt`` (the env's system prompt and an
        empty user turn that ``reset`` fills with the task), ``task_id`` and ``split``."""
        from datasets import Dataset

        env = gym.make(self.env_id, **self.env_kwargs)
        try:
            unwrapped = env.unwrapped
            split = split or getattr(unwrapped, "split", None)
            task_ids = unwrapped.task_ids(split)
            if task_ids is None:
                raise ValueError(f"{self.env_id} cannot list its tasks; train without a dataset (max_steps=...)")
            system = unwrapped.system_prompt
        finally:
            env.close()
        task_ids = list(task_ids)[:limit]
        prompt = [{"role": "system", "content": system}, {"role": "user", "content": ""}]
        return Dataset.from_dict({"prompt": [prompt] * len(task_ids), "task_id": [str(t) for t in task_ids],
                                  "split": [split] * len(task_ids)})


def _final_text(completion: Any) -> str | None:
    """The content of the model's last message when it called no tool (a conversational completion),
    the completion itself when it is plain text, else None."""
    if isinstance(completion, str):
        return completion
    if completion and isinstance(completion[-1], Mapping):
        last = completion[-1]
        if last.get("role") == "assistant" and not last.get("tool_calls"):
            content = last.get("content")
            return content if isinstance(content, str) else None
    return None


def prs_reward(completions: list, environments: list | None = None, log_metric=None, **_: Any) -> list[float]:
    """TRL reward function: each rollout's PRS return from its env, after the model's last message
    is played as its last action. Logs ``prs/<term>`` (mean over the episodes that ended),
    ``prs/ended``, ``prs/success`` and ``prs/turns``."""
    if environments is None:
        raise ValueError("prs_reward needs TRL's environments: pass environment_factory=EnvironmentFactory(...)")
    rewards, ended = [], []
    for completion, env in zip(completions, environments, strict=True):
        env._finish(_final_text(completion))
        rewards.append(env._return)
        if env._done:
            ended.append(env._info)
    if log_metric is not None:
        log_metric("prs/ended", len(ended) / max(len(rewards), 1))
        log_metric("prs/turns", sum(env._turns for env in environments) / max(len(environments), 1))
        if ended:
            log_metric("prs/success", sum(bool(i.get("success")) for i in ended) / len(ended))
            for term in ended[0].get("episode_terms", {}):
                log_metric(f"prs/{term}", sum(i["episode_terms"].get(term, 0.0) for i in ended) / len(ended))
    return rewards
