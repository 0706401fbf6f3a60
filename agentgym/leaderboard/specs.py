"""Agents named on the command line.

    expert                 the env's expert/oracle
    random                 a random admissible action
    tiny, tiny-small       the project's tiny model, built offline (HFPolicy)
    PATH                   a local Hugging Face checkpoint directory (HFPolicy)
    openai:URL#MODEL       any OpenAI-compatible endpoint (OpenAIPolicy), e.g. openai:http://127.0.0.1:8000/v1#qwen
    vllm:PATH              an in-process vLLM engine (VLLMPolicy; needs agentgym[vllm])
    module:Class           a user's agent class (see agentgym.leaderboard.agents)

Any of them may be prefixed with ``NAME=`` to name its rows (``grpo=runs/grpo/final``).
"""

from __future__ import annotations

import importlib
import os
import re
from dataclasses import dataclass

from agentgym.leaderboard.agents import Agent, ExpertAgent, PolicyAgent, RandomAgent, UserAgent
from agentgym.leaderboard.errors import BoardError

_NAMED = re.compile(r"^([A-Za-z0-9_.+-]+)=(.+)$")
_NAME_ONLY = re.compile(r"^[A-Za-z0-9_.+-]+=$")
_KNOWN = "expected expert, random, tiny, a checkpoint directory, openai:URL#MODEL, vllm:PATH or module:Class"
_CLASS = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")


@dataclass
class ModelOptions:
    """How model agents are sampled and prompted (shared by every model agent of a run)."""

    temperature: float = 0.0
    """0: greedy."""
    top_p: float = 1.0
    """Nucleus sampling mass."""
    max_new_tokens: int = 256
    """Most tokens one reply may have."""
    window: int | None = None
    """Past turns kept in the prompt (None: the whole episode)."""
    device: str = "cpu"
    """Device for local checkpoints."""
    api_key: str | None = None
    """Bearer token for ``openai:`` endpoints."""


def split_name(spec: str) -> tuple[str, str]:
    """``NAME=SPEC`` -> (NAME, SPEC); a bare spec is its own name."""
    match = _NAMED.match(spec)
    return (match.group(1), match.group(2)) if match else (spec, spec)


def check_spec(spec: str) -> None:
    """BoardError for a spec that names no agent at all (empty, or ``NAME=`` and nothing)."""
    if not isinstance(spec, str) or not spec.strip():
        raise BoardError(f"an agent spec is empty: {_KNOWN}")
    if _NAME_ONLY.match(spec):
        raise BoardError(f"agent {spec!r} names no agent after '=': {_KNOWN}")


def make_agent(spec: str, env_ids=("ToolQA-v0",), options: ModelOptions | None = None) -> Agent:
    """The agent a command-line spec names (see the module docstring)."""
    from agentgym.agents.base import Policy, SamplingConfig

    options = options or ModelOptions()
    check_spec(spec)
    name, body = split_name(spec)
    sampling = SamplingConfig(max_new_tokens=options.max_new_tokens, temperature=options.temperature,
                              top_p=options.top_p)
    if body == "expert":
        agent = ExpertAgent()
    elif body == "random":
        agent = RandomAgent()
    elif body.startswith("openai:"):
        from agentgym.agents import OpenAIPolicy

        url, _, model = body[len("openai:"):].partition("#")
        if not url or not model:
            raise BoardError(f"an endpoint agent is openai:URL#MODEL (the model name after '#'), got {body!r}")
        policy = OpenAIPolicy(url, model, api_key=options.api_key, sampling=sampling)
        agent = PolicyAgent(policy, name, sampling, options.window, stamp={"endpoint": url, "model": model})
    elif body.startswith("vllm:"):
        from agentgym.agents import VLLMPolicy

        path = body[len("vllm:"):]
        policy = VLLMPolicy(path, sampling=sampling)
        agent = PolicyAgent(policy, name, sampling, options.window, stamp=_checkpoint_stamp(path, policy.tokenizer),
                            checkpoint=path)
    elif body == "tiny" or (body.startswith("tiny-") and ":" not in body) or os.path.isdir(body):
        agent = _hf_agent(name, body, env_ids, sampling, options)
    elif _CLASS.match(body):
        obj = _user_object(body)
        if isinstance(obj, Policy):
            agent = PolicyAgent(obj, name, sampling, options.window)
        elif callable(getattr(obj, "act", None)):
            agent = obj if isinstance(obj, Agent) else UserAgent(obj, name)
        else:
            raise BoardError(f"{body} is neither an agentgym Policy nor an object with act(episodes)")
    else:
        raise BoardError(f"unknown agent {spec!r}: {_KNOWN}")
    try:
        agent.name = name
    except Exception:  # noqa: BLE001  a user's Agent whose name cannot be set is named by the wrapper
        agent = UserAgent(agent, name)
    return agent


def _user_object(body: str):
    """``module:Class()``, with one line naming what went wrong."""
    from agentgym.leaderboard.calls import describe

    module, _, cls_name = body.partition(":")
    try:
        found = importlib.import_module(module)
    except Exception as e:  # noqa: BLE001  a missing module, or one that fails as it loads
        raise BoardError(f"agent {body!r}: cannot import {module!r}: {describe(e)}") from None
    cls = getattr(found, cls_name, None)
    if cls is None:
        raise BoardError(f"agent {body!r}: module {module!r} has no {cls_name!r}")
    try:
        return cls()
    except Exception as e:  # noqa: BLE001  the user's constructor
        raise BoardError(f"agent {body!r}: {cls_name}() raised {describe(e)}") from None


def _checkpoint_stamp(path: str, tokenizer) -> dict:
    from agentgym.leaderboard.stamps import chat_template_hash, checkpoint_hash

    path = os.path.abspath(path)
    return {"checkpoint": path, "checkpoint_hash": checkpoint_hash(path),
            "chat_template_hash": chat_template_hash(tokenizer)}


def _hf_agent(name: str, body: str, env_ids, sampling, options: ModelOptions) -> PolicyAgent:
    from agentgym.agents import HFPolicy, load_model_and_tokenizer
    from agentgym.agents.tiny import resolve_model_path

    path = resolve_model_path(body, tuple(env_ids))
    if not os.path.isdir(path):
        raise BoardError(f"unknown agent {body!r}: not a checkpoint directory")
    model, tokenizer = load_model_and_tokenizer(path, options.device)
    model.eval()
    policy = HFPolicy(model, tokenizer, sampling)
    return PolicyAgent(policy, name, sampling, options.window, stamp=_checkpoint_stamp(path, tokenizer),
                       checkpoint=path, model=body)
