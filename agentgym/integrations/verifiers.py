"""Any agentgym env as a verifiers environment (``pip install "agentgym[verifiers]"``, verifiers 0.3).

verifiers finds an environment as a module with a ``load_environment`` function; this is one::

    import verifiers as vf
    env = vf.load_environment("agentgym.integrations.verifiers", env="ToolQA-v0", split="test")
    # or: from agentgym.integrations.verifiers import load_environment
    #     env = load_environment(env_id="ToolQA-v0", split="test", limit=20)
    results = env.evaluate_sync(client=AsyncOpenAI(base_url=...), model="my-model")

Each row of the eval dataset is one task of the split (the leaderboard's task list, so a verifiers
eval and ``agentgym leaderboard`` play the same tasks). A rollout makes the env, resets it to the
row's task (the env's system prompt and first observation are the prompt), steps it with each
model message and ends when the episode does. The reward is the episode's PRS return; the
episode's ``success`` and each PRS term are metrics (weight 0), and ``reward_components`` are
kept in the rollout state.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import gymnasium as gym

try:
    import verifiers as vf
    from datasets import Dataset
except ImportError as e:  # pragma: no cover - exercised only without the extra
    raise ImportError('the verifiers adapter needs verifiers: pip install "agentgym[verifiers]"') from e
if not hasattr(vf, "MultiTurnEnv"):  # verifiers 0.4 keeps only its new `verifiers.v1` stack
    raise ImportError(f"the verifiers adapter needs verifiers 0.3 (its classic environment API); this is "
                      f'{vf.__version__}: pip install "agentgym[verifiers]"')

_ENV = "agentgym_env"  # where a rollout's env lives in its state


def prs_return(state) -> float:
    """The episode's PRS return (the sum of its step rewards)."""
    return float(state.get("agentgym_return", 0.0))


def success(state) -> float:
    return float(bool(state.get("agentgym_info", {}).get("success", False)))


def _term_metric(name: str):
    def term(state) -> float:
        return float(state.get("agentgym_info", {}).get("episode_terms", {}).get(name, 0.0))

    term.__name__ = name
    return term


class AgentGymEnv(vf.MultiTurnEnv):
    """One agentgym episode per rollout; see the module docstring."""

    def __init__(self, env_id: str, env_kwargs: Mapping[str, Any] | None = None, split: str | None = None,
                 limit: int | None = None, **kwargs: Any):
        import agentgym  # noqa: F401  registers the envs
        from agentgym.leaderboard.tasks import enumerate_tasks

        self.agentgym_env_id = env_id
        self.agentgym_kwargs = dict(env_kwargs or {})
        probe = gym.make(env_id, **self.agentgym_kwargs)
        try:
            unwrapped = probe.unwrapped
            split = split or getattr(unwrapped, "split", None) or "test"
            system, max_turns = unwrapped.system_prompt, unwrapped.max_turns
            terms = list(unwrapped.prs_spec.terms)
        finally:
            probe.close()
        tasks = enumerate_tasks(env_id, split, self.agentgym_kwargs, limit=limit)
        rows = {"prompt": [[{"role": "system", "content": system}]] * len(tasks), "answer": [""] * len(tasks),
                "info": [{"env_id": env_id, "task_id": t.task_id, "task_type": t.task_type,
                          "options": json.dumps(t.options)} for t in tasks]}
        rubric = vf.Rubric(funcs=[prs_return, success, *map(_term_metric, terms)],
                           weights=[1.0, 0.0, *[0.0] * len(terms)])
        super().__init__(eval_dataset=Dataset.from_dict(rows), rubric=rubric, max_turns=max_turns + 1, **kwargs)

    async def setup_state(self, state):
        env = gym.make(self.agentgym_env_id, **self.agentgym_kwargs)
        obs, info = env.reset(options=json.loads(state["info"]["options"]))
        state[_ENV], state["agentgym_info"], state["agentgym_return"] = env, dict(info), 0.0
        state["prompt"] = [*state["prompt"], {"role": "user", "content": obs}]
        return state

    async def env_response(self, messages, state, **kwargs):
        last = messages[-1] if messages else {}
        action = last.get("content") if isinstance(last, Mapping) else getattr(last, "content", "")
        obs, reward, terminated, truncated, info = state[_ENV].step(action if isinstance(action, str) else "")
        state["agentgym_return"] += float(reward)
        state["agentgym_info"] = dict(info)
        reply = [{"role": "user", "content": obs}]
        if terminated or truncated:
            state["agentgym_components"] = list(info.get("reward_components", []))
            state["final_env_response"] = reply
        return reply

    @vf.cleanup
    async def close_env(self, state) -> None:
        env = state.pop(_ENV, None)
        if env is not None:
            env.close()


def load_environment(env_id: str = "ToolQA-v0", env_kwargs: Mapping[str, Any] | None = None,
                     split: str | None = None, limit: int | None = None, env: str | None = None,
                     **kwargs: Any) -> AgentGymEnv:
    """verifiers' entry point: the env ``env_id`` (``env`` is the same, for ``vf.load_environment``,
    whose own first argument is named ``env_id``) on ``split``, the first ``limit`` tasks."""
    if isinstance(env_kwargs, str):
        env_kwargs = json.loads(env_kwargs)
    return AgentGymEnv(env or env_id, env_kwargs, split, limit, **kwargs)
