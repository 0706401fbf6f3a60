"""The training loop every RL trainer shares: setup, then per step rollout, advantages, update,
log and checkpoint, then a held-out evaluation (SPEC §4.2).

``train(config, extensions)`` is GRPO with no extensions; VSPO, GiGPO, DAPO and GCD are
:class:`~agentgym.train.hooks.TrainerExtension` objects passed in by the scripts in
``trainers/``. Metric names are listed in docs/trainers.md. Under ``torchrun`` every rank runs
this loop on its own share of the groups (:mod:`agentgym.train.optim.distributed`).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from agentgym.rewards.prs import stage_pass_rate
from agentgym.train.base.state import RunState, split_scores
from agentgym.train.config.tree import TrainConfig
from agentgym.train.evaluate import evaluate, whole_split
from agentgym.train.hooks import TrainerExtension
from agentgym.train.methods.grpo import group_advantages
from agentgym.train.optim import fsdp
from agentgym.train.optim.distributed import reduce_metrics
from agentgym.train.rollout.pool import TaskSuccess
from agentgym.train.rollout.samples import episode_samples, per_turn
from agentgym.train.rollout.stats import episode_metrics, played_metrics
from agentgym.train.run.pipeline import make_rollouts
from agentgym.train.run.setup import (
    RunSetup,
    save,
    set_up,
)


@dataclass
class TrainResult:
    """What a run returns: one metrics dict per step trained in this call, and the evaluation."""

    history: list[dict[str, Any]] = field(default_factory=list)
    evaluation: dict[str, dict] = field(default_factory=dict)
    """``before`` / ``after``: :func:`agentgym.train.evaluate.evaluate` results on held-out tasks."""
    output_dir: str = ""
    curve: list[dict[str, float]] = field(default_factory=list)
    """held-out ``{"step", "episodes", "seconds", "success", "return"}`` at step 0, every
    ``--eval-every`` steps and at the end, over the whole run (resumed parts included); ``episodes``
    and ``seconds`` are the env episodes played and training seconds (evaluation excluded) so far"""
    timeline: list[dict[str, Any]] = field(default_factory=list)
    """who was busy when in this call's steps: ``{"who", "what", "start", "end"}`` in seconds since
    the first step began; ``who`` is ``rollout`` (``what``: ``generate``, ``env``) or ``learner``
    (``update``, ``wait`` for a batch, ``publish`` a version under ``--async-steps``)"""

    def __len__(self) -> int:
        return len(self.history)


def run_eval(config: TrainConfig, policy, env_kwargs: dict, system_prompt_hook=None, keep=None) -> dict:
    """Success rate and PRS return of the current policy on held-out tasks (the same tasks and
    sampling seed every time; the run's random streams are left as they were). A split with no
    more tasks than ``--eval-episodes`` is played whole (:func:`whole_split`). The return is the
    PRS return even when training uses ``--reward-mode binary``, so runs compare on one scale.
    ``system_prompt_hook``: the extensions' system-prompt rewrite, so the policy is evaluated with
    the prompt it is trained with (GCD's current "Common mistakes" list). With several
    ``--eval-split`` splits the result is the first one's, and ``splits`` holds each split's
    ``success_rate`` and ``prs_return`` (each split played from the same seeds as if alone).
    ``keep(split, episodes)``, when given, gets each split's played episodes (the saved episodes)."""
    import torch

    from agentgym.train.run.checkpoint import rng_state, set_rng_state

    r, e = config.rollout, config.eval
    results = {}
    saved = rng_state()
    try:
        for split in e.eval_splits:
            torch.manual_seed(config.run.seed + 1_000_003)
            played = [] if keep is not None else None
            results[split] = evaluate(policy, config.env.env_id, {**env_kwargs, "reward_mode": "prs"}, split,
                                      e.eval_episodes, batch_size=min(32, e.eval_episodes), seed=e.eval_seed,
                                      sampling=r.sampling, window=r.window if r.layout == "window" else None,
                                      system_prompt_hook=system_prompt_hook, keep_episodes=played,
                                      task_ids=whole_split(config.env.env_id, env_kwargs, split, e.eval_episodes))
            if keep is not None:
                keep(split, played)
    finally:
        set_rng_state(saved)
    headline = dict(results[e.eval_splits[0]])
    if len(results) > 1:
        headline["splits"] = {split: {"success_rate": res["success_rate"], "prs_return": res["prs_return"]}
                              for split, res in results.items()}
    return headline


def train(config: TrainConfig, extensions: Sequence[TrainerExtension] | TrainerExtension = (),
          name: str = "grpo") -> TrainResult:
    """Train ``config.model`` on ``config.env`` with GRPO and the given extensions."""
    # ----- setup (and the checkpoint's state, with --resume) -----
    run, state = set_up(config, extensions, name)
    result = TrainResult(output_dir=config.run.output_dir, evaluation=state.evaluation)
    rollouts = None
    try:
        _evaluate_before(run, state)
        end = _last_step(run, state)
        origin = time.perf_counter()
        # --async-steps K: a rollout thread plays up to K steps ahead (agentgym.train.run.pipeline)
        rollouts = make_rollouts(run, state, end)
        bar = _progress_bar(run, state, end, name)
        for step in bar:
            t_step = time.perf_counter()
            # ----- rollout (played now, or ahead by the rollout thread) -----
            batch = rollouts.next(step)

            # ----- advantages -----
            advantages, samples = _advantages(run, state, rollouts, batch)
            run.episode_log.step(step + 1, batch, advantages)  # --log-episodes: RUN_DIR/episodes/

            # ----- update -----
            update_metrics, update_time = _learner_update(run, rollouts, samples, step)

            # ----- log -----
            metrics = _step_metrics(run, state, batch, advantages, update_time, t_step)
            metrics.update(update_metrics)
            metrics.update(rollouts.metrics(batch))
            done = _count_step(run, state, step, metrics)
            _evaluate_during(run, state, rollouts, metrics, done)
            _log(run, state, result, bar, metrics)

            # ----- checkpoint -----
            if done or (config.run.save_every > 0 and state.step % config.run.save_every == 0):
                with rollouts.paused():
                    save(run, state)
            rollouts.step_done(step)
            if done:
                break
        bar.close()
        rollouts.close()
        result.timeline = rollouts.timeline.as_dicts(origin)
        if config.eval.eval_episodes > 0:
            _evaluate_after(run, state)
    finally:
        if rollouts is not None:
            rollouts.close()
        run.close()
    result.curve = state.curve
    return result


def _evaluate_before(run: RunSetup, state: RunState) -> None:
    """The held-out evaluation before training (once per run: a resumed run has it already)."""
    if run.config.eval.eval_episodes > 0 and "before" not in state.evaluation:
        state.evaluation["before"] = _held_out(run, state)
        state.add_curve_point(state.evaluation["before"], step=0)


def _last_step(run: RunSetup, state: RunState) -> int:
    """The step the loop stops after: ``--num-steps``, or where it is now if ``--max-episodes`` is
    spent. A run with steps to go drops a shorter run's end-of-run evaluation, now out of date."""
    config = run.config
    end = state.step if state.budget_spent(config.run.max_episodes) else config.run.num_steps
    if end > state.step:
        state.evaluation.pop("after", None)
    return end


def _progress_bar(run: RunSetup, state: RunState, end: int, name: str):
    """The steps from the current one to ``end``, as a progress bar on the main rank."""
    from tqdm.auto import tqdm

    return tqdm(range(state.step, end), initial=state.step, total=run.config.run.num_steps,
                disable=not (run.config.run.progress and run.dist.is_main), desc=name, dynamic_ncols=True)


def _advantages(run: RunSetup, state: RunState, rollouts, batch) -> tuple[list[np.ndarray], list]:
    """The batch's per-turn group advantages (after the extensions' rewrite) and its samples (the
    extensions' own added); records how far the data stream's hooks have read."""
    r, o, ext, episodes, ctx = run.config.rollout, run.config.optim, run.extensions, batch.episodes, batch.ctx
    with rollouts.paused() if ext.generates_in_hooks else contextlib.nullcontext():
        returns = np.array([ep.ret for ep in episodes])
        advantages = per_turn(episodes, group_advantages(returns, [ep.group for ep in episodes],
                                                         normalize_std=o.std_normalize))
        advantages = ext.transform_advantages(ctx, advantages, episodes)
        samples = episode_samples(episodes, advantages, r.layout) + ext.extra_samples(ctx, episodes)
    state.data_position = rollouts.hooks_done(batch)
    return advantages, samples


def _learner_update(run: RunSetup, rollouts, samples, step: int) -> tuple[dict[str, float], float]:
    """The update on the step's samples, between the rollouts' hooks around it; its metrics and
    how long it took."""
    rollouts.before_update()
    t_update = time.perf_counter()
    update_metrics = _update(run, samples, behaviour=rollouts.asynchronous)
    update_time = rollouts.timeline.add("learner", "update", t_update)
    update_metrics.update(rollouts.after_update(step + 1))
    return update_metrics, update_time


def _count_step(run: RunSetup, state: RunState, step: int, metrics: dict) -> bool:
    """Advance ``state`` past ``step`` (its episodes and seconds) and add ``episodes/total``;
    whether the run is done (``--num-steps`` or ``--max-episodes`` reached)."""
    config = run.config
    state.step, state.episodes = step + 1, state.episodes + int(metrics["episodes/played"])
    state.seconds += metrics["time/step"]
    metrics["episodes/total"] = state.episodes
    return state.step == config.run.num_steps or state.budget_spent(config.run.max_episodes)


def _evaluate_during(run: RunSetup, state: RunState, rollouts, metrics: dict, done: bool) -> None:
    """The held-out evaluation every ``--eval-every`` steps and at the end: a curve point, and in
    the step's metrics with ``--eval-every``."""
    every = run.config.eval.eval_every
    if run.config.eval.eval_episodes > 0 and (done or every > 0 and state.step % every == 0):
        # the end-of-run evaluation comes before the last checkpoint, so that checkpoint's
        # curve ends at its own step when a later run resumes from it
        with rollouts.paused():
            res = _held_out(run, state)
        if done:
            state.evaluation["after"] = res
        point = state.add_curve_point(res)
        if every > 0:
            metrics.update({f"eval/{k}": v for k, v in point.items() if k.endswith(("success", "return"))})


def _log(run: RunSetup, state: RunState, result: TrainResult, bar, metrics: dict) -> None:
    """The step's metrics to the PRS schedule (``--prs-schedule threshold``), the logger, the
    result's history and the summary line."""
    config = run.config
    if config.env.prs_schedule == "threshold":
        run.schedule.update(metrics["prs/pass_rate"])
    if run.logger is not None:
        run.logger.log(state.step, metrics)
    result.history.append({"step": state.step, **metrics})
    if not config.run.quiet and run.dist.is_main:
        bar.write(summary_line(state.step, metrics))


def _held_out(run: RunSetup, state: RunState) -> dict:
    """The held-out evaluation, on rank 0 (FSDP: on gathered weights), broadcast to every rank; its
    episodes saved with ``--log-episodes``."""
    with fsdp.gathered(run.model):
        res = run_eval(run.config, run.policy, run.env_kwargs, run.extensions.system_prompt,
                       run.episode_log.keeper(state.step)) if run.dist.is_main else None
    return run.dist.broadcast(res)


def _evaluate_after(run: RunSetup, state: RunState) -> None:
    """The end-of-run evaluation when the loop did not make it (a finished run resumed), its metrics
    and the before/after line."""
    if "after" not in state.evaluation:
        state.evaluation["after"] = _held_out(run, state)
        state.add_curve_point(state.evaluation["after"])
    if run.logger is not None:
        run.logger.log(state.step, {f"eval/{k}/{when}": v for when, res in state.evaluation.items()
                                    for k, v in split_scores(res).items()})
    if "before" in state.evaluation and not run.config.run.quiet and run.dist.is_main:
        print(final_line(run.config, state.evaluation))


def _step_metrics(run: RunSetup, state: RunState, batch, advantages, update_time: float, t_step: float) -> dict:
    """The step's logged metrics (docs/trainers.md), reduced over ranks under ``torchrun``: the
    batch's episodes and advantages, what was played, the PRS stage, times, the stream position."""
    spec, ext, episodes = run.spec, run.extensions, batch.episodes
    stage = spec.final_stage if batch.stage is None else batch.stage
    metrics = episode_metrics(episodes, [float(a.mean()) if len(a) else 0.0 for a in advantages])
    metrics.update(played_metrics(batch.played))
    metrics["batch/groups"] = float(len({ep.group for ep in episodes}))
    metrics["batch/episodes"] = float(len(episodes))
    metrics.update(batch.stats)
    metrics.update({
        "prs/stage": stage, "prs/pass_rate": stage_pass_rate([ep.episode_terms for ep in episodes], spec, stage),
        "time/update": update_time, "time/step": time.perf_counter() - t_step,
        "lr": run.optimizer.param_groups[0]["lr"], "data/position": state.data_position,
        "data/excluded_tasks": len(run.excluded),
        **({"data/task_pool": len(run.stream.pool)} if run.stream.pool is not None else {}),
        **ext.metrics(),
    })
    if run.stream.by_task_id:
        played = [(ep.task_id, bool(ep.success)) for ep in batch.played]
        if run.dist.active:
            played = [pair for rank in run.dist.all_gather(played) for pair in rank]
        record = TaskSuccess(state.tasks)
        record.update(played)
        pool = record.metrics(len(run.stream.pool))
    if not run.stream.by_task_id and run.excluded:
        excluded = set(run.excluded)
        metrics["data/cold_start_overlap"] = float(np.mean([ep.task_id in excluded for ep in episodes])
                                                   if episodes else 0.0)
    if run.dist.active:  # the update's metrics are global already
        metrics = reduce_metrics(run.dist.all_gather(metrics), ext.summed_metrics)
    if run.stream.by_task_id:
        metrics.update(pool)  # over every rank's episodes already
    return metrics


def _update(run: RunSetup, samples, behaviour: bool = False) -> dict[str, float]:
    """Optimizer steps on one batch of samples (epochs x minibatches). Metrics are the mean over the
    optimizer steps that measured them (a minibatch without policy samples has no policy loss),
    ``tokens/loss`` the loss tokens of one epoch. Data-parallel: ``samples`` are this rank's, and
    every rank takes the same optimizer steps (a rank with no samples of a minibatch joins it with none).
    ``behaviour``: the ratio's denominator is the log-probabilities recorded at sampling (the
    samples were played with older weights, ``--async-steps``); a sample without them (GCD's judge
    samples, drawn from the current weights) gets the current weights' own."""
    from agentgym.train.optim.update import behaviour_logprobs, sample_logprobs, train_step

    config, model, optimizer, dist, bf16 = run.config, run.model, run.optimizer, run.dist, run.bf16
    o, pad_id, temperature = config.optim, run.tokenizer.pad_token_id, config.rollout.sampling.temperature
    kinds = run.extensions.sample_kinds
    loss_cfg, loss_weights = o.loss_config(), {kind: k.weight for kind, k in kinds.items()}
    loss_configs = {kind: k.loss for kind, k in kinds.items() if k.loss is not None}
    loss_terms = run.extensions.loss_terms()
    if dist.sum_floats([len(samples)])[0] == 0:  # on every rank
        return {"update/skipped": 1.0}
    ref_lp = run.reference_logprobs(samples, o.micro_batch_size, temperature) if run.uses_reference else None
    multi = o.num_epochs * o.num_minibatches > 1
    missing = 0
    if behaviour:
        old_lp, missing = behaviour_logprobs(model, samples, pad_id, o.micro_batch_size, temperature, bf16)
    else:
        old_lp = sample_logprobs(model, samples, pad_id, o.micro_batch_size, temperature, bf16) if multi else None
    steps: list[dict[str, float]] = []
    for _ in range(o.num_epochs):
        order = np.random.permutation(len(samples)) if multi else np.arange(len(samples))
        for chunk in np.array_split(order, o.num_minibatches):
            if len(chunk) == 0 and not dist.active:
                continue
            pick = [int(i) for i in chunk]
            steps.append(train_step(model, optimizer, [samples[i] for i in pick], loss_cfg, pad_id, o.micro_batch_size,
                             temperature, ref_logprobs=[ref_lp[i] for i in pick] if ref_lp is not None else None,
                             old_logprobs=[old_lp[i] for i in pick] if old_lp is not None else None,
                             loss_weights=loss_weights, max_grad_norm=o.max_grad_norm, bf16=bf16,
                             loss_configs=loss_configs, dist=dist, loss_terms=loss_terms))
    out: dict[str, float] = {"update/skipped": 0.0, "update/optimizer_steps": float(len(steps))}
    if behaviour:
        out["async/samples_without_behaviour_logprobs"] = float(missing)
    for key in dict.fromkeys(k for m in steps for k in m):  # first-seen order, the same every run
        values = [m[key] for m in steps if key in m and not np.isnan(m[key])]
        if key == "tokens/loss":
            out[key] = sum(values) / o.num_epochs
        else:
            out[key] = float(np.mean(values)) if values else float("nan")
    return out


def summary_line(step: int, m: dict[str, float]) -> str:
    """The per-step line: training-batch numbers (not held-out ones), so it says "batch"; a step
    that trained on nothing says what it played and why."""
    nan = float("nan")
    if m.get("update/skipped"):
        if m.get("batch/episodes"):
            why = "no model turn to train on"  # every episode cut by --max-prompt-tokens before its first turn
        elif "reward/played_mean" not in m:
            why = f"no episode to train on ({m.get('episodes/faulted', 0):.0f} ended in an env fault)"
        else:
            why = "all groups tied" if m.get("groups/played_tied_frac") == 1 else "every group dropped"
        return (f"step {step:4d}  played reward {m.get('reward/played_mean', nan):.3f}  "
                f"played success {m.get('success/played_mean', nan):.2f}  update skipped: {why}  "
                f"tok/s {m['tokens_per_second']:.0f}  {m['time/step']:.1f}s")
    return (f"step {step:4d}  batch reward {m.get('reward/mean', nan):.3f}  "
            f"batch success {m.get('success/mean', nan):.2f}  format {m.get('terms/format', nan):.2f}  "
            f"loss {m.get('loss/policy', nan):+.4f}  kl {m.get('kl', 0.0):.4f}  "
            f"tok/s {m['tokens_per_second']:.0f}  {m['time/step']:.1f}s")


def final_line(config: TrainConfig, evaluation: dict) -> str:
    b, a = evaluation["before"], evaluation["after"]
    line = (f"{config.env.env_id} [{config.eval.eval_splits[0]}], {config.eval.eval_episodes} held-out episodes: "
            f"success {b['success_rate']:.3f} -> {a['success_rate']:.3f}   PRS return {b['prs_return']:.3f} -> "
            f"{a['prs_return']:.3f}")
    for split in config.eval.eval_splits[1:]:
        bs, as_ = b.get("splits", {}).get(split), a.get("splits", {}).get(split)
        if bs and as_:
            line += (f"\n{'':>{len(config.env.env_id) + 1}}[{split}] success {bs['success_rate']:.3f} -> "
                     f"{as_['success_rate']:.3f}   PRS return {bs['prs_return']:.3f} -> {as_['prs_return']:.3f}")
    return line
