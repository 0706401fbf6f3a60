"""The agents a leaderboard plays: the interface, the scripted baselines, and model policies.

An agent is any object with ``act(episodes) -> actions``: given the episodes that wait for an
action (:class:`EpisodeView`), it returns one action per episode, a ``str`` or an
:class:`agentgym.agents.Completion` (whose ``token_ids`` count as generated tokens). Optional
attributes, with the defaults of :class:`Agent`:

- ``env_kwargs``: keyword arguments every env is made with (the expert needs ``expert=True``).
- ``trained_env_kwargs(env_id) -> dict``: the env settings the agent was trained with on that env
  (a checkpoint's recorded observation and action options, prompt...), under ``--env-kwargs``.
- ``ready_first``: True to be called for each env as soon as it is ready (scripted agents, which
  cost nothing); False to be called once for every running env together (a model, which is
  fastest on one batch).
- ``fits(episode) -> bool``: False when the next prompt no longer fits the model's context; the
  episode then ends in the ``context_limit`` bucket.
- ``stamps() -> dict``: what a reviewer needs to reproduce the agent (sampling, layout, checkpoint).
- ``close()``.

Any of them may be missing or broken: a broken one costs the agent its own episodes (or, for
``env_kwargs`` no env can be made with, its rows on that env), never another agent's.

``module:Class`` on the command line names a user's class; it is made with no arguments. A
subclass of :class:`agentgym.agents.Policy` is wrapped in :class:`PolicyAgent`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from agentgym.agents.base import reply_lists
from agentgym.prompts import MAX_ACTION_CHARS, episode_to_messages

# Env kwargs a checkpoint's record does not carry onto a board: they choose what is played, for how
# long and how it is scored, which is the board's to say (the same tasks, turn limit, judge and
# success criterion for every agent of a row). Any other recorded key passes the allow-list of
# agentgym.envs.data_settings: one that reaches a process or a path outside the checkpoint is refused.
SCORING_KWARGS = frozenset({"reward_mode", "prs_weights", "tau_fmt", "prs_stage", "prs_aggregate", "judge",
                            "judge_kwargs", "success_threshold"})
"""Env settings that decide how an episode is scored: only the board sets them (``--env-kwargs``),
the same for every agent; an agent whose own ``env_kwargs`` set one does not play."""
BOARD_KWARGS = frozenset({"data_path", "split", "task", "task_types", "question_kinds", "dataset", "corpus",
                          "answer_form", "game", "max_turns", "expert", "tasks", "l0_every"}) | SCORING_KWARGS
"""Env settings the board chooses: never read from what an agent records it was trained with."""


@dataclass
class EpisodeView:
    """One running episode, as an agent sees it."""

    env_id: str
    split: str
    task_id: str
    repeat: int
    system_prompt: str
    observations: list[str] = field(default_factory=list)
    """The first observation, then one per action."""
    actions: list[str] = field(default_factory=list)
    """The actions sent, each cut to ``max_action_chars`` (:func:`agentgym.prompts.cut_action`)."""
    info: dict[str, Any] = field(default_factory=dict)
    """The env's latest info (``admissible_actions``, ``expert_action``, ``instruction`` ...)."""
    rng: np.random.Generator = field(default_factory=np.random.default_rng)
    """This episode's own random stream, seeded from its key, so a resumed run replays it."""
    task_type: str = ""
    """The task's type on the board (ALFWorld type, ScienceWorld task, question kind or data set)."""
    history_in_observation: bool = False
    """The env's observations state the task and the last steps (``observation="history+admissible"``)."""
    max_action_chars: int | None = MAX_ACTION_CHARS
    """How much of each past action the history keeps (the runner's setting)."""

    def messages(self, window: int | None = None) -> list[dict]:
        """The chat history in the layout evaluation and training share (with observations that
        carry their own history: the system prompt and the latest observation)."""
        return episode_to_messages(self.system_prompt, self.observations, self.actions, window=window,
                                   history_in_observation=self.history_in_observation,
                                   max_action_chars=self.max_action_chars)


class Agent:
    """Base class of leaderboard agents (see the module docstring for the interface)."""

    name = "agent"
    env_kwargs: dict[str, Any] = {}
    ready_first = True

    def act(self, episodes: Sequence[EpisodeView]) -> list:
        raise NotImplementedError

    def fits(self, episode: EpisodeView) -> bool:
        return True

    def stamps(self) -> dict[str, Any]:
        return {}

    def trained_env_kwargs(self, env_id: str) -> dict[str, Any]:
        return {}

    def close(self) -> None:
        pass


class ExpertAgent(Agent):
    """The env's own expert: ToolQA's oracle plan, ALFWorld's planner, ScienceWorld's gold path."""

    name = "expert"
    env_kwargs = {"expert": True}

    def act(self, episodes):
        # ScienceWorld's expert has no action once the world left the gold path; send a no-op.
        return [ep.info.get("expert_action") or "look" for ep in episodes]

    def stamps(self):
        return {"agent_kind": "expert"}


_WORD = re.compile(r"[A-Za-z][A-Za-z'-]+")


class RandomAgent(Agent):
    """A uniformly random admissible action; on envs that list none (ToolQA), a random search or a
    random word of the last observation as the answer."""

    name = "random"

    def act(self, episodes):
        out = []
        for ep in episodes:
            admissible = ep.info.get("admissible_actions")
            if admissible:
                out.append(f"<action>{admissible[int(ep.rng.integers(len(admissible)))]}</action>")
                continue
            words = _WORD.findall(ep.observations[-1]) or ["nothing"]
            picked = " ".join(words[int(ep.rng.integers(len(words)))] for _ in range(2))
            if ep.rng.random() < 0.5:
                out.append('<tool_call>{"name": "search", "arguments": {"query": "%s"}}</tool_call>' % picked)  # noqa: UP031 (JSON's braces)
            else:
                out.append(f"<answer>{picked.split()[0]}</answer>")
        return out

    def stamps(self):
        return {"agent_kind": "random"}


class PolicyAgent(Agent):
    """A model behind any :class:`agentgym.agents.Policy` (HF, vLLM, OpenAI-compatible), prompted
    with :func:`agentgym.episode_to_messages` exactly as in training.

    Args:
        policy: the policy.
        name: the row's agent name.
        sampling: the :class:`SamplingConfig` of every call.
        window: past turns kept in the prompt (None: all).
        max_context: prompt tokens plus ``max_new_tokens`` the model takes (None: no check, or
            the checkpoint's ``max_position_embeddings`` for an HF policy).
        stamp: extra stamps (checkpoint path and hash, chat template hash, endpoint).
        checkpoint: the local checkpoint directory, whose recorded env settings (an RL or cold-start
            run's env kwargs: observation and action options, prompt...) its episodes are
            played with, except those in :data:`BOARD_KWARGS` and those ``--env-kwargs`` sets (a
            record that sets a key data may not carry is refused: the agent skips that env).
        model: what the agent was named by (``tiny``, a directory; default ``checkpoint``): when
            the checkpoint records no env settings, ``--preset auto``'s pick for it applies
            (:mod:`agentgym.train.config.presets`: ``tiny`` for the built-in tiny models).
    """

    ready_first = False

    def __init__(self, policy, name: str, sampling=None, window: int | None = None,
                 max_context: int | None = None, stamp: dict[str, Any] | None = None,
                 checkpoint: str | None = None, model: str | None = None):
        self.policy, self.name, self.sampling, self.window = policy, name, sampling, window
        self.checkpoint, self.model_name = checkpoint, model if model is not None else checkpoint
        tokenizer = getattr(policy, "tokenizer", None)
        if max_context is None:
            config = getattr(getattr(policy, "model", None), "config", None)  # HF models only
            max_context = getattr(config, "max_position_embeddings", None)
        self.tokenizer, self.max_context = tokenizer, max_context
        self._stamp = dict(stamp or {})

    def act(self, episodes):
        prompts = [ep.messages(self.window) for ep in episodes]
        # an env made with constrained_choice=True lists the replies that name an action: keep to
        # them; one made with scored_actions=True lists the actions to score: choose among them
        lists = reply_lists([ep.info.get("allowed_replies") for ep in episodes],
                            [ep.info.get("scored_replies") for ep in episodes])
        return self.policy.generate(prompts, self.sampling, **lists)

    def trained_env_kwargs(self, env_id: str) -> dict[str, Any]:
        if self.checkpoint is None:
            return {}
        from agentgym.train.config.presets import resolve_env_kwargs

        # recorded, else the preset `auto` picks; the board's own keys are never read from the record
        # (an override of None removes the key, from the record and the preset alike)
        return resolve_env_kwargs(env_id, self.model_name, overrides=dict.fromkeys(BOARD_KWARGS))[1]

    def fits(self, episode):
        if self.tokenizer is None or self.max_context is None:
            return True
        from agentgym.agents.hf import render_prompt_ids

        new = self.sampling.max_new_tokens if self.sampling is not None else 0
        return len(render_prompt_ids(self.tokenizer, episode.messages(self.window))) + new <= self.max_context

    def stamps(self):
        sampling = self.sampling
        return {"agent_kind": "policy", "policy": type(self.policy).__name__, "window": self.window,
                "layout": "window" if self.window is not None else "full history",
                "max_context": self.max_context,
                "sampling": None if sampling is None else {k: getattr(sampling, k) for k in
                                                           ("max_new_tokens", "temperature", "top_p", "top_k")},
                **self._stamp}

    def close(self):
        close = getattr(self.policy, "close", None)
        if callable(close):
            close()


class UserAgent(Agent):
    """Adapts a user's object that has ``act`` but not every optional attribute."""

    def __init__(self, inner, name: str):
        self.inner, self.name = inner, name
        try:
            self.ready_first = bool(getattr(inner, "ready_first", True))
        except Exception:  # noqa: BLE001  a broken optional attribute takes its default
            self.ready_first = True

    @property
    def env_kwargs(self):
        # Read (and checked) when the board makes the agent's envs: a bad value costs only its rows.
        return getattr(self.inner, "env_kwargs", None) or {}

    def trained_env_kwargs(self, env_id: str) -> dict:
        # Checked when the board plans: a raising or non-dict answer costs only this agent's rows.
        method = getattr(self.inner, "trained_env_kwargs", None)
        return method(env_id) if callable(method) else {}

    def act(self, episodes):
        return self.inner.act(episodes)

    def fits(self, episode):
        fits = getattr(self.inner, "fits", None)
        return True if fits is None else bool(fits(episode))

    def stamps(self):
        stamps = getattr(self.inner, "stamps", None)
        out = dict(stamps()) if callable(stamps) else {}
        return {"agent_kind": "user", "class": f"{type(self.inner).__module__}:{type(self.inner).__qualname__}",
                **out}

    def close(self):
        close = getattr(self.inner, "close", None)
        if callable(close):
            close()
