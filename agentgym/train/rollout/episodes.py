"""Rollout collection: play grouped episodes with a policy and keep every token.

Each group is asked for by a :class:`GroupRequest` (a reset seed and, optionally, reset options
such as a ``task_id``). The collector resets only the requested groups' envs, then steps all
unfinished episodes together: it builds each episode's prompt ids in the chosen layout (:mod:`chat`), asks
the policy for one completion per episode in one batched call, and sends the completion's text to
the env. That is the ``lockstep`` mode, where every turn waits for the slowest env; in the
``overlapped`` mode the episodes whose env step is back are generated for while the envs of the
others still step (:func:`_play_overlapped`). Everything the trainer needs later (prompt ids,
sampled ids, the concat sequence and its loss mask, rewards, PRS terms) is recorded on the
:class:`Episode`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agentgym.agents.base import Completion, Policy, SamplingConfig, reply_lists
from agentgym.prompts import cut_action, episode_to_messages, observations_carry_history
from agentgym.train.rollout.chat import ChatEncoder, check_layout, window_prompt_ids
from agentgym.train.rollout.envs import EnvBatch, StepResult

if TYPE_CHECKING:
    from agentgym.train.config.rollout import RolloutConfig


@dataclass(frozen=True)
class GroupRequest:
    """One group to play: every env of the group is reset with this seed and these options."""

    seed: int
    options: dict = field(default_factory=dict)
    """Reset options of this group (e.g. ``{"task_id": ...}``), merged over the call's options."""
    tag: str = "batch"
    """Who asked for it (``batch``, ``resample``...), for logging rollout cost per purpose."""


def as_request(item: int | GroupRequest) -> GroupRequest:
    """A request from a bare seed (the older calling convention) or a request."""
    return item if isinstance(item, GroupRequest) else GroupRequest(int(item))


@dataclass
class Turn:
    """One model turn: what the model was conditioned on and what it sampled."""

    prompt_ids: list[int]
    """Empty when the policy was given chat messages."""
    completion: Completion


@dataclass
class Episode:
    """One played episode."""

    group: int
    """Its group: an id unique within a training step (within one call of :func:`collect_episodes`
    it is the request's index)."""
    task_id: str
    group_key: str
    system_prompt: str
    seed: int = 0
    """The reset seed of its group."""
    reset_options: dict = field(default_factory=dict)
    """The reset options it started with (split, task_id...)."""
    tag: str = "batch"
    """The tag of the request it was played for."""
    observations: list[str] = field(default_factory=list)
    actions: list[str] = field(default_factory=list)
    """The history: each turn's text as the env received it, cut to
    :attr:`RolloutConfig.max_action_chars` (:func:`agentgym.prompts.cut_action`); the turn's whole
    completion is in :attr:`turns`."""
    turns: list[Turn] = field(default_factory=list)
    rewards: list[float] = field(default_factory=list)
    terminated: bool = False
    truncated: bool = False
    success: bool = False
    episode_terms: dict[str, float] = field(default_factory=dict)
    metrics: dict[str, float] = field(default_factory=dict)
    step_infos: list[dict] = field(default_factory=list)
    """The info dict of every step (reward_terms, action_valid, parse_error, ...)."""
    concat_ids: list[int] = field(default_factory=list)
    """``concat`` layout: the whole episode as one sequence, as the model generated from it."""
    concat_mask: list[int] = field(default_factory=list)
    """1 on ids the model sampled, 0 on ids from the template and the env."""
    state_keys: list = field(default_factory=list)
    """Per observation, ``info["state_key"]`` where the env gives one (None elsewhere): a state
    identity for step grouping when different states print the same text."""
    turn_spans: list[tuple[int, int]] = field(default_factory=list)
    """``concat`` layout: ``[start, end)`` of each turn's sampled ids within ``concat_ids``."""
    cut_by_length: bool = False
    """Ended by the collector because the next prompt would exceed ``max_prompt_tokens``."""
    instruction: str = ""
    """The task in words (``info["instruction"]`` at reset; empty when the env gives none)."""
    error: str | None = None
    """The env fault that ended it (``info["error"]``): not the model's failure, so trainers
    leave it out of advantages and loss."""
    history_in_observation: bool = False
    """The env's observations carry the task and the last steps (``observation="history+admissible"``):
    each prompt is the system prompt and the latest observation."""
    allowed_replies: list[str] | None = None
    """The replies the next turn may produce (the latest ``info["allowed_replies"]``, an env's
    ``constrained_choice=True``), which the policy is asked to keep to; None: any reply."""
    scored_replies: list[str] | None = None
    """The replies the next turn chooses among whole (the latest ``info["scored_replies"]``, an
    env's ``scored_actions=True``): the policy scores each (:mod:`agentgym.agents.scoring`)."""
    raw_observations: list[str] = field(default_factory=list)
    """Per observation, the engine's own text (``info["raw_observation"]`` where the env wraps it,
    else the observation): what step grouping and revisit labels compare, since a wrapped
    observation also holds history and so never repeats."""
    signals: dict[str, Any] = field(default_factory=dict)
    """What the training method says of the whole episode, by name (``vspo/task_value``...): never
    read by training, kept in the saved episodes (``--log-episodes``) for ``agentgym view``."""
    turn_signals: dict[str, list] = field(default_factory=dict)
    """What the method says of each turn, by name, one value per turn (``gigpo/step_advantage``,
    ``gcd/label``...): as :attr:`signals`, for the saved episodes only."""

    @property
    def done(self) -> bool:
        return self.terminated or self.truncated

    @property
    def ret(self) -> float:
        """The episode return: the sum of its step rewards (the PRS return in PRS mode)."""
        return float(sum(self.rewards))

    @property
    def num_generated_tokens(self) -> int:
        return sum(len(t.completion.token_ids) for t in self.turns)


def collect_episodes(envs: EnvBatch, policy: Policy, encoder: ChatEncoder | None,
                     requests: Sequence[int | GroupRequest], cfg: RolloutConfig,
                     sampling: SamplingConfig | None = None, reset_options: dict | None = None,
                     system_prompt_hook: Callable[[str], str] | None = None,
                     trace: list | None = None) -> tuple[list[Episode], dict[str, float]]:
    """Play one episode in every env of the requested groups; request g (a seed, or a
    :class:`GroupRequest`) picks the task of the envs of group slot g. Slots past the last request
    are neither reset nor stepped.

    ``encoder=None`` sends the policy chat histories (the ``window`` layout's messages) instead of
    token ids, for policies without a tokenizer (evaluation through an OpenAI-compatible server).
    ``system_prompt_hook`` rewrites each episode's system prompt before its first turn.
    ``trace``: when a list, ``("generate" | "env", start, end)`` is appended for every policy call
    and every wait on the envs (``time.perf_counter`` seconds), for a timeline of the rollout.

    Returns the episodes (env order: group-major) and timing stats.
    """
    if encoder is None and cfg.layout == "concat":
        raise ValueError("the concat layout needs a ChatEncoder (token ids); use layout='window' without one")
    requests = [as_request(r) for r in requests]
    if not requests:
        return [], {"time/rollout": 0.0, "time/generate": 0.0, "time/env": 0.0}
    if len(requests) > envs.num_groups:
        raise ValueError(f"{len(requests)} group requests for an env batch of {envs.num_groups} groups")
    t0 = time.perf_counter()
    base = dict(reset_options or {})
    starts = envs.reset_groups([r.seed for r in requests], base, [dict(r.options) for r in requests])
    episodes = []
    for i, (obs, info) in enumerate(starts):
        req = requests[i // envs.group_size]
        system_prompt = info.get("system_prompt", "")
        if system_prompt_hook is not None:
            system_prompt = system_prompt_hook(system_prompt)
        ep = Episode(group=i // envs.group_size, task_id=str(info.get("task_id", "")),
                     group_key=str(info.get("group_key", info.get("task_id", ""))),
                     system_prompt=system_prompt, observations=[obs], state_keys=[info.get("state_key")],
                     seed=req.seed,
                     reset_options={**base, **req.options}, tag=req.tag,
                     instruction=str(info.get("instruction", "")),
                     history_in_observation=observations_carry_history(info),
                     raw_observations=[info.get("raw_observation", obs)],
                     allowed_replies=info.get("allowed_replies"), scored_replies=info.get("scored_replies"))
        check_layout(cfg.layout, ep.history_in_observation)
        if cfg.layout == "concat":
            ep.concat_ids = encoder.prompt_ids(episode_to_messages(ep.system_prompt, [obs], []))
            ep.concat_mask = [0] * len(ep.concat_ids)
        episodes.append(ep)
    if trace is not None:
        trace.append(("env", t0, time.perf_counter()))  # the resets
    play = _play_overlapped if cfg.rollout_mode == "overlapped" else _play_lockstep
    gen_time, env_time = play(envs, policy, encoder, episodes, cfg, sampling, trace)
    stats = {"time/rollout": time.perf_counter() - t0, "time/generate": gen_time, "time/env": env_time}
    return episodes, stats


def _next_prompt(ep: Episode, encoder: ChatEncoder | None, cfg: RolloutConfig):
    """The prompt of the episode's next turn (ids, or messages without an encoder), or None when
    the prompt would be too long: the episode is then cut, as truncated."""
    if encoder is None:
        return episode_to_messages(ep.system_prompt, ep.observations, ep.actions, window=cfg.window,
                                   history_in_observation=ep.history_in_observation,
                                   max_action_chars=cfg.max_action_chars)
    if cfg.layout == "concat":
        ids = list(ep.concat_ids)
    else:
        ids = window_prompt_ids(encoder, ep.system_prompt, ep.observations, ep.actions, cfg.window,
                                ep.history_in_observation, cfg.max_action_chars)
    if len(ids) > cfg.max_prompt_tokens:
        ep.truncated = ep.cut_by_length = True
        return None
    return ids


def _generate(policy: Policy, encoder: ChatEncoder | None, episodes: list[Episode], prompts: dict[int, Any],
              sampling: SamplingConfig | None) -> dict[int, Completion]:
    """One batched policy call for the prompts (env index -> prompt), each turn recorded on its
    episode. An episode whose env lists its allowed replies has the policy keep to them; one whose
    env lists replies to score has it choose one of those."""
    order = list(prompts)
    lists = reply_lists([episodes[i].allowed_replies for i in order], [episodes[i].scored_replies for i in order])
    completions = policy.generate([prompts[i] for i in order], sampling, **lists)
    for i, c in zip(order, completions):
        prompt = prompts[i] if encoder is not None else (c.prompt_ids or [])
        episodes[i].turns.append(Turn(prompt_ids=list(prompt), completion=c))
    return dict(zip(order, completions))


def _record_step(ep: Episode, c: Completion, result: StepResult, encoder: ChatEncoder | None,
                 cfg: RolloutConfig) -> None:
    """Add one env step (the answer to completion ``c``) to the episode."""
    obs, reward, terminated, truncated, info = result
    if cfg.layout == "concat":
        # the sequence holds the sampled ids whole; the cut past actions only render the text
        # around this turn, identically before and after it
        messages = episode_to_messages(ep.system_prompt, ep.observations, ep.actions,
                                       max_action_chars=cfg.max_action_chars)
        ep.turn_spans.append((len(ep.concat_ids), len(ep.concat_ids) + len(c.token_ids)))
        ep.concat_ids += c.token_ids
        ep.concat_mask += [1] * len(c.token_ids)
        if not (terminated or truncated):
            # only an emitted end-of-turn token stands in for the template's own
            stopped = bool(c.token_ids) and c.token_ids[-1] == encoder.tokenizer.eos_token_id
            env_ids = encoder.env_turn_ids(messages, c.text, obs, stopped=stopped)
            ep.concat_ids += env_ids
            ep.concat_mask += [0] * len(env_ids)
    ep.actions.append(cut_action(c.text, cfg.max_action_chars))
    ep.observations.append(obs)
    ep.raw_observations.append(info.get("raw_observation", obs))
    ep.state_keys.append(info.get("state_key"))
    ep.allowed_replies, ep.scored_replies = info.get("allowed_replies"), info.get("scored_replies")
    ep.rewards.append(reward)
    ep.step_infos.append(info)
    ep.terminated, ep.truncated = terminated, truncated
    if cfg.max_turns is not None and len(ep.turns) >= cfg.max_turns and not ep.done:
        ep.truncated = True
    if terminated or truncated:
        ep.success = bool(info.get("success", False))
        ep.episode_terms = dict(info.get("episode_terms", {}))
        ep.metrics = dict(info.get("metrics", {}))
        if info.get("error"):
            ep.error = str(info["error"])


def _span(trace: list | None, what: str, start: float) -> float:
    """Seconds since ``start``, recorded on ``trace`` as ``(what, start, now)`` when there is one."""
    end = time.perf_counter()
    if trace is not None:
        trace.append((what, start, end))
    return end - start


def _play_lockstep(envs: EnvBatch, policy: Policy, encoder: ChatEncoder | None, episodes: list[Episode],
                   cfg: RolloutConfig, sampling: SamplingConfig | None, trace: list | None = None) -> tuple[float, float]:
    """Every turn: generate for every unfinished episode, then step all their envs; (generate s, env s)."""
    gen_time = env_time = 0.0
    while True:
        prompts = {}
        for i, ep in enumerate(episodes):
            if not ep.done:
                prompt = _next_prompt(ep, encoder, cfg)
                if prompt is not None:
                    prompts[i] = prompt
        if not prompts:
            return gen_time, env_time
        t = time.perf_counter()
        completions = _generate(policy, encoder, episodes, prompts, sampling)
        gen_time += _span(trace, "generate", t)
        t = time.perf_counter()
        results = envs.step_some({i: c.text for i, c in completions.items()})
        env_time += _span(trace, "env", t)
        for i, c in completions.items():
            _record_step(episodes[i], c, results[i], encoder, cfg)


def _play_overlapped(envs: EnvBatch, policy: Policy, encoder: ChatEncoder | None, episodes: list[Episode],
                     cfg: RolloutConfig, sampling: SamplingConfig | None, trace: list | None = None) -> tuple[float, float]:
    """Generate for the episodes whose env step is back while the envs of the others still step.

    The actions of each generated batch are sent at once; then whatever results are ready (at
    least one when nothing else is waiting, then those that come back within ``cfg.batch_wait``
    times the last policy call's time) are taken, and their episodes form the next batch (at most
    ``cfg.max_generate_batch``), in env order. An episode's own turns come in the same order as in
    lockstep, so with greedy decoding its turns are the same. Time spent generating is
    ``time/generate``; ``time/env`` is only the time spent waiting on envs, so env time hidden
    behind generation does not count. Returns (generate s, env s).
    """
    try:
        return _overlapped_turns(envs, policy, encoder, episodes, cfg, sampling, trace)
    except BaseException:
        # leave no step in flight: the env batch must be usable by the next call (a reset)
        if envs.pending:
            envs.recv_some(len(envs.pending))
        raise


def _overlapped_turns(envs: EnvBatch, policy: Policy, encoder: ChatEncoder | None, episodes: list[Episode],
                      cfg: RolloutConfig, sampling: SamplingConfig | None, trace: list | None) -> tuple[float, float]:
    gen_time = env_time = 0.0
    waiting: dict[int, Completion] = {}  # env index -> the completion its env is stepping on
    ready = [i for i, ep in enumerate(episodes) if not ep.done]  # turn due, in env order
    cap = cfg.max_generate_batch or len(episodes)
    last_call = 0.0  # seconds the last policy call took
    while ready or waiting:
        prompts = {}
        while ready and len(prompts) < cap:
            i = ready.pop(0)
            prompt = _next_prompt(episodes[i], encoder, cfg)
            if prompt is not None:
                prompts[i] = prompt
        if prompts:
            t = time.perf_counter()
            completions = _generate(policy, encoder, episodes, prompts, sampling)
            last_call = _span(trace, "generate", t)
            gen_time += last_call
            t = time.perf_counter()
            envs.send_some({i: c.text for i, c in completions.items()})
            env_time += _span(trace, "env", t)
            waiting.update(completions)
        if not waiting:
            continue
        t = time.perf_counter()
        # with episodes still to generate for, take only what is ready now; else wait for one,
        # then up to cfg.batch_wait policy calls' time for the rest, which would otherwise need
        # a call of their own; an env slower than that no longer holds up the others
        results = envs.recv_some(0 if ready else 1)
        if not ready and len(waiting) > len(results) and cfg.batch_wait > 0:
            results.update(envs.recv_some(len(waiting) - len(results), timeout=cfg.batch_wait * last_call))
        env_time += _span(trace, "env", t)
        for i in sorted(results):
            ep = episodes[i]
            _record_step(ep, waiting.pop(i), results[i], encoder, cfg)
            if not ep.done:
                ready.append(i)
        ready.sort()
    return gen_time, env_time


def by_group(episodes: Sequence[Episode]) -> dict[int, list[Episode]]:
    """Episodes by group id, groups in order of first appearance."""
    out: dict[int, list[Episode]] = {}
    for ep in episodes:
        out.setdefault(ep.group, []).append(ep)
    return out
