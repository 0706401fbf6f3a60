"""The trainer's rollout collector: plays any number of group requests, keeps one step's cost.

A :class:`Collector` wraps the env batch and the policy. Calling it with group requests plays
them in rounds of the env batch's size (only the groups asked for are reset and stepped), gives
each group an id unique within the step, and leaves out episodes that ended in an env fault
(``info["error"]``: a dead JVM is not the model's failure, so it must not get a negative
advantage); a group left with fewer than two episodes is dropped whole (groups of one episode, as
PPO plays, only when that episode faulted). Every call's time and
tokens are added to the step's totals, per request tag, so resampling and oversampling are costed.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from agentgym.train.base.device import autocast_context
from agentgym.train.rollout.episodes import Episode, GroupRequest, as_request, collect_episodes

if TYPE_CHECKING:
    from agentgym.train.config.rollout import RolloutConfig


class Collector:
    """Group requests in, fault-free episodes out; :meth:`stats` is the step's rollout cost."""

    def __init__(self, envs, policy, encoder, cfg: RolloutConfig, sampling, reset_options: dict | None = None,
                 device: str = "cpu", bf16: bool = False, system_prompt_hook: Callable[[str], str] | None = None):
        self.envs, self.policy, self.encoder, self.cfg, self.sampling = envs, policy, encoder, cfg, sampling
        self.reset_options = dict(reset_options or {})
        self.device, self.bf16, self.hook = device, bf16, system_prompt_hook
        self.trace = None
        """When set (anything with ``append``), every policy call and env wait is appended to it (``collect_episodes``'s ``trace``)."""
        self.start_step()

    def start_step(self) -> None:
        """Reset the step's group ids and cost counters."""
        self.next_group = 0
        self.totals: dict[str, float] = defaultdict(float)
        self.played: list[Episode] = []
        """Every fault-free episode of the step, also those an extension then drops."""

    def __call__(self, requests: Sequence[GroupRequest | int]) -> list[Episode]:
        requests = [as_request(r) for r in requests]
        out: list[Episode] = []
        n = self.envs.num_groups
        for start in range(0, len(requests), n):
            chunk = requests[start:start + n]
            with autocast_context(self.device, self.bf16):
                episodes, timing = collect_episodes(self.envs, self.policy, self.encoder, chunk, self.cfg,
                                                    self.sampling, self.reset_options, self.hook, self.trace)
            for ep in episodes:
                ep.group += self.next_group
            self.next_group += len(chunk)
            for key, value in timing.items():
                self.totals[key] += value
            for req in chunk:
                self.totals[f"rollout/groups_{req.tag}"] += 1
            self.totals["episodes/played"] += len(episodes)
            for ep in episodes:
                self.totals[f"tokens/generated_{ep.tag}"] += ep.num_generated_tokens
                self.totals["tokens/generated"] += ep.num_generated_tokens
            if any(req.tag != "batch" for req in chunk):
                self.totals["time/rollout_extra"] += timing["time/rollout"]
            kept = self._without_faults(episodes)
            self.played += kept
            out += kept
        return out

    def _without_faults(self, episodes: list[Episode]) -> list[Episode]:
        faulted = [ep for ep in episodes if ep.error]
        if not faulted:
            return episodes
        self.totals["episodes/faulted"] += len(faulted)
        kept = [ep for ep in episodes if not ep.error]
        sizes: dict[int, int] = defaultdict(int)
        for ep in kept:
            sizes[ep.group] += 1
        # a group of several left with one episode has nothing to compare it with; groups of one
        # episode (PPO) are whole as long as that episode is
        small = {g for g, k in sizes.items() if k < min(2, self.envs.group_size)}
        self.totals["groups/dropped_for_faults"] += len(small) + len({ep.group for ep in faulted} - set(sizes))
        return [ep for ep in kept if ep.group not in small]

    def stats(self) -> dict[str, float]:
        """The step's rollout cost: times, generated tokens (per tag too) and tokens per second."""
        out = dict(self.totals)
        for key in ("time/rollout", "time/generate", "time/env", "tokens/generated", "episodes/played", "episodes/faulted",
                    "groups/dropped_for_faults", "rollout/groups_batch"):
            out.setdefault(key, 0.0)
        out["tokens_per_second"] = out["tokens/generated"] / max(out["time/generate"], 1e-9)
        return out
