"""Per-step episode statistics, under the metric names docs/trainers.md lists."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from agentgym.train.rollout.episodes import Episode


def episode_metrics(episodes: Sequence[Episode], advantages: Sequence[float] | None = None) -> dict[str, float]:
    """Reward, success, PRS terms, validity and length statistics of one batch of episodes;
    ``groups/tied_frac`` is the share of its groups whose returns tie (no group-relative signal)."""
    if not episodes:
        return {}
    returns = np.array([ep.ret for ep in episodes], dtype=np.float64)
    out = {
        "reward/mean": float(returns.mean()),
        "reward/std": float(returns.std()),
        "reward/max": float(returns.max()),
        "reward/min": float(returns.min()),
        "success/mean": float(np.mean([ep.success for ep in episodes])),
        "episode/turns": float(np.mean([len(ep.turns) for ep in episodes])),
        "episode/generated_tokens": float(np.mean([ep.num_generated_tokens for ep in episodes])),
        "episode/truncated": float(np.mean([ep.truncated for ep in episodes])),
        "episode/cut_by_length": float(np.mean([ep.cut_by_length for ep in episodes])),
    }
    steps = [info for ep in episodes for info in ep.step_infos]
    if steps:
        out["action/valid_rate"] = float(np.mean([bool(i.get("action_valid", False)) for i in steps]))
        out["action/parse_error_rate"] = float(np.mean([i.get("parse_error") is not None for i in steps]))
    out["groups/tied_frac"] = tied_frac(episodes)
    finished = [ep for ep in episodes if ep.episode_terms]
    names = sorted({k for ep in finished for k in ep.episode_terms})
    for name in names:
        out[f"terms/{name}"] = float(np.mean([ep.episode_terms.get(name, 0.0) for ep in finished]))
    stopped = [t.completion.finish_reason == "stop" for ep in episodes for t in ep.turns]
    if stopped:
        out["completion/stop_rate"] = float(np.mean(stopped))
    if advantages is not None:
        adv = np.asarray(advantages, dtype=np.float64)
        groups: dict = {}
        for ep, a in zip(episodes, adv):
            groups.setdefault((ep.group_key, ep.group), []).append(a)
        out["advantage/abs_mean"] = float(np.abs(adv).mean())
        out["groups/zero_advantage_frac"] = float(np.mean([np.all(np.abs(g) < 1e-9) for g in groups.values()]))
    return out


def played_metrics(episodes: Sequence[Episode], tol: float = 1e-6) -> dict[str, float]:
    """Reward and success of every episode a step played, the groups an extension dropped (VSPO's
    tied groups, DAPO's) included, so a step that trained on nothing still shows how it played;
    ``groups/played_tied_frac`` is the share of those groups whose returns tie (spread <= ``tol``)."""
    if not episodes:
        return {}
    return {"reward/played_mean": float(np.mean([ep.ret for ep in episodes])),
            "success/played_mean": float(np.mean([ep.success for ep in episodes])),
            "groups/played_tied_frac": tied_frac(episodes, tol)}


def tied_frac(episodes: Sequence[Episode], tol: float = 1e-6) -> float:
    """The share of the episodes' groups whose returns tie (spread <= ``tol``)."""
    groups: dict = {}
    for ep in episodes:
        groups.setdefault((ep.group_key, ep.group), []).append(ep.ret)
    return float(np.mean([np.ptp(r) <= tol for r in groups.values()]))
