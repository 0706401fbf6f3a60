"""The training loop every RL trainer shares: setup, then per step rollout, advantages, update,
log and checkpoint, then a held-out evaluation (SPEC §4.2).

``train(config, extensions)`` is GRPO with no extensions; VSPO, GiGPO, DAPO and GCD are
:class:`~agentgym.train.hooks.TrainerExtension` objects passed in by the scripts in
``trainers/``. Metric names are listed in docs/trainers.md. Under ``torchrun`` every rank runs
this loop on its own share of the groups (:mod:`agentgym.train.distributed`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from agentgym.train.collector import Collector
from agentgym.train.config import TINY_MODELS, TrainConfig, to_dict
from agentgym.train.hooks import Extensions, StepContext, TrainerExtension


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

    def __len__(self) -> int:
        return len(self.history)


def cold_start(config: TrainConfig) -> str:
    """The built-in tiny model after an SFT cold start on this env's expert, made with this run's
    env, layout and seed (a cached one is reused only when made with exactly the same recipe)."""
    import os

    from agentgym.train import sft

    sft_cfg = config.cold_start_config()
    final = os.path.join(sft_cfg.run.output_dir, "final")
    if sft.reusable(final, sft_cfg):
        return final
    return sft.run_sft(sft_cfg)


def run_eval(config: TrainConfig, policy, env_kwargs: dict, system_prompt_hook=None) -> dict:
    """Success rate and PRS return of the current policy on held-out tasks (the same tasks and
    sampling seed every time; the run's random streams are left as they were). The return is the
    PRS return even when training uses ``--reward-mode binary``, so runs compare on one scale.
    ``system_prompt_hook``: the extensions' system-prompt rewrite, so the policy is evaluated with
    the prompt it is trained with (GCD's current "Common mistakes" list)."""
    import torch

    from agentgym.train.checkpoint import rng_state, set_rng_state
    from agentgym.train.evaluate import evaluate

    r = config.rollout
    saved = rng_state()
    torch.manual_seed(config.run.seed + 1_000_003)
    try:
        e = config.eval
        return evaluate(policy, config.env.env_id, {**env_kwargs, "reward_mode": "prs"}, e.eval_split, e.eval_episodes,
                        batch_size=min(32, e.eval_episodes), seed=e.eval_seed, sampling=r.sampling,
                        window=r.window if r.layout == "window" else None, system_prompt_hook=system_prompt_hook)
    finally:
        set_rng_state(saved)


def _task_stream(config: TrainConfig, env, model_dir: str):
    """The RL task stream, without the tasks the model's cold start trained on."""
    from agentgym.train import sft
    from agentgym.train.tasks import TaskStream

    record = sft.read_record(model_dir) or {}
    excluded = []
    if record.get("env_id") == config.env.env_id and record.get("split") == config.env.split:
        excluded = list(record.get("task_ids", []))
    listed = env.task_ids(config.env.split) if hasattr(env, "task_ids") else None
    return TaskStream(config.run.seed, listed, excluded), excluded


def train(config: TrainConfig, extensions: Sequence[TrainerExtension] | TrainerExtension = (),
          name: str = "grpo") -> TrainResult:
    """Train ``config.model`` on ``config.env`` with GRPO and the given extensions."""
    import gymnasium as gym
    import torch
    from tqdm.auto import tqdm

    import agentgym  # noqa: F401  registers the envs
    from agentgym.agents.tiny import resolve_model_path
    from agentgym.locks import lock_dir
    from agentgym.rewards.prs import PRSSchedule, stage_pass_rate
    from agentgym.train import fsdp
    from agentgym.train.advantages import group_advantages
    from agentgym.train.chat import ChatEncoder
    from agentgym.train.checkpoint import load_trainer_state, resume_point, rng_state, save_checkpoint, set_rng_state
    from agentgym.train.distributed import init_distributed, reduce_metrics, stream_seed
    from agentgym.train.generators import make_generator
    from agentgym.train.metrics import MetricsLogger
    from agentgym.train.samples import episode_samples, per_turn
    from agentgym.train.setup import load_model, load_tokenizer, make_env_batch, resolve_device, seed_everything
    from agentgym.train.stats import episode_metrics, played_metrics
    from agentgym.train.threads import set_cpu_threads

    config.validate()
    ext = extensions if isinstance(extensions, Extensions) else Extensions(
        [extensions] if isinstance(extensions, TrainerExtension) else extensions)
    env_cfg, r, o, run = config.env, config.rollout, config.optim, config.run

    # ----- setup -----
    dist = init_distributed(resolve_device(config.model.device), config.model.fsdp)
    # one trainer per output directory: a second one would overwrite this one's checkpoints
    dir_lock = lock_dir(run.output_dir) if dist.is_main else None
    device = dist.device
    on_gpu = device.startswith("cuda")
    if not on_gpu:
        set_cpu_threads(config.model.cpu_threads)
    bf16 = config.model.bf16 and on_gpu
    env_kwargs = env_cfg.kwargs(config.model.model)
    if dist.is_main:
        print(f"env: {env_cfg.describe(config.model.model)}", flush=True)
    with dist.main_first():  # rank 0 builds the tiny model and the cold start, the others load them
        base_model = resolve_model_path(config.model.model, (env_cfg.env_id,))
        if config.model.model in TINY_MODELS and config.cold_start.resolved(env_cfg.env_id).num_steps > 0:
            base_model = cold_start(config)
    checkpoint, saved = None, None
    if run.resume:
        checkpoint, saved = resume_point(run.output_dir if run.resume == "auto" else run.resume,
                                         auto=run.resume == "auto")
    seed_everything(run.seed + dist.rank)  # ranks sample differently
    tokenizer = load_tokenizer(base_model)
    # FSDP: load on the CPU, then each rank moves only its shard to the device
    load_on = "cpu" if config.model.fsdp else device
    model = load_model(str(checkpoint or base_model), load_on, config.model.gradient_checkpointing and on_gpu)
    ref_model = load_model(base_model, load_on, trainable=False) if o.loss.beta > 0 else None
    if config.model.fsdp:
        model = fsdp.shard(model, device, dist.world_size)
        ref_model = fsdp.shard(ref_model, device, dist.world_size) if ref_model is not None else None
    optimizer = torch.optim.AdamW(model.parameters(), lr=o.learning_rate, weight_decay=o.weight_decay)
    generator = make_generator(config, model, tokenizer, r.sampling, str(checkpoint or base_model))
    policy = generator.policy
    probe = gym.make(env_cfg.env_id, **env_kwargs)
    try:
        spec = probe.unwrapped.prs_spec
        stream, excluded = _task_stream(config, probe.unwrapped, base_model)
    finally:
        probe.close()
    schedule = PRSSchedule(spec, kind=env_cfg.prs_schedule if env_cfg.prs_schedule != "none" else "constant",
                           num_steps=env_cfg.prs_schedule_steps, threshold=env_cfg.prs_threshold,
                           start_stage=env_cfg.prs_start_stage)
    local_groups = r.num_groups // dist.world_size  # config.validate() checked that it divides
    envs = make_env_batch(env_cfg.env_id, local_groups, r.group_size, env_cfg.backend_options(), env_kwargs)
    collector = Collector(envs, policy, ChatEncoder(tokenizer), r, r.sampling, {"split": env_cfg.split}, device, bf16,
                          ext.system_prompt)
    start_step, data_position, evaluation, curve, played, seconds = 0, 0, {}, [], 0, 0.0
    if checkpoint is not None:  # every rank loads the same checkpoint
        state = load_trainer_state(checkpoint, None if config.model.fsdp else optimizer, state=saved)
        if config.model.fsdp:
            fsdp.load_optimizer_state(model, optimizer, state["optimizer"])
        start_step, data_position = state["step"], state["extra"]["data_position"]
        schedule.load_state_dict(state["extra"]["prs_schedule"])
        # each rank's own extension state and random streams when the rank count is the same;
        # otherwise rank 0's extension state and fresh streams for the ranks past rank 0
        per_rank = state["extra"].get("per_rank") or [{}]
        mine = per_rank[dist.rank] if dist.rank < len(per_rank) else None
        ext.load_state_dict(mine["extension"] if mine and "extension" in mine else state["extra"]["extension"])
        if mine and "rng" in mine:
            set_rng_state(mine["rng"])
        elif dist.rank > 0:
            seed_everything(stream_seed(run.seed, dist.rank, start_step))
        evaluation = dict(state["extra"].get("evaluation", {}))
        curve = list(state["extra"].get("eval_curve", []))
        played = int(state["extra"].get("episodes_played", 0))
        seconds = float(state["extra"].get("train_seconds", 0.0))
    logger = (MetricsLogger(run.output_dir, resume_step=start_step if checkpoint else None, tensorboard=run.tensorboard)
              if dist.is_main else None)
    loss_cfg = o.loss_config()
    loss_configs = {kind: k.loss for kind, k in ext.sample_kinds.items() if k.loss is not None}
    loss_weights = {kind: k.weight for kind, k in ext.sample_kinds.items()}
    result = TrainResult(output_dir=run.output_dir, evaluation=evaluation)

    extra_taken = 0  # tasks the extensions took this step, on this rank

    def batch_requests():
        # every rank skips the whole global batch and plays its own slice of it
        nonlocal data_position
        first = data_position + dist.rank * local_groups
        data_position += r.num_groups
        return [stream.request(first + i) for i in range(local_groups)]

    def next_requests(n: int, tag: str = "batch"):
        # an extension's extra tasks: positions strided by rank, so ranks never share one (one
        # process: the next n positions)
        nonlocal extra_taken
        out = [stream.request(data_position + (extra_taken + i) * dist.world_size + dist.rank, tag)
               for i in range(n)]
        extra_taken += n
        return out

    def curve_point(step: int, res: dict) -> dict[str, float]:
        point = {"step": step, "episodes": played, "seconds": round(seconds, 3), "success": res["success_rate"],
                 "return": res["prs_return"]}
        curve.append(point)
        return point

    def evaluate_held_out() -> dict:
        # on rank 0 (FSDP: on gathered weights), the result broadcast to every rank
        with fsdp.gathered(model):
            res = run_eval(config, policy, env_kwargs, ext.system_prompt) if dist.is_main else None
        return dist.broadcast(res)

    if config.eval.eval_episodes > 0 and "before" not in evaluation:
        evaluation["before"] = evaluate_held_out()
        curve_point(0, evaluation["before"])

    end = start_step if 0 < run.max_episodes <= played else run.num_steps  # a budget already spent
    if end > start_step:
        evaluation.pop("after", None)  # a shorter run's end-of-run evaluation, now out of date
    last_step = start_step
    bar = tqdm(range(start_step, end), initial=start_step, total=run.num_steps,
               disable=not (run.progress and dist.is_main), desc=name, dynamic_ncols=True)
    try:
        for step in bar:
            t_step = time.perf_counter()
            # ----- rollout -----
            stage = None if env_cfg.prs_schedule == "none" else schedule.stage_at(step)
            envs.set_prs_stage(stage)
            collector.start_step()
            extra_taken = 0
            ctx = StepContext(step, collector, next_requests, policy, tokenizer, r.group_size, local_groups,
                              np.random.default_rng([run.seed, step, 0xE7] + ([dist.rank] if dist.active else [])),
                              config, dist=dist)
            generating = fsdp.gather(model)  # FSDP: ranks generate for episodes of different lengths
            episodes = collector(batch_requests())
            episodes = ext.after_rollout(ctx, episodes)

            # ----- advantages -----
            returns = np.array([ep.ret for ep in episodes])
            advantages = per_turn(episodes, group_advantages(returns, [ep.group for ep in episodes],
                                                             normalize_std=o.std_normalize))
            advantages = ext.transform_advantages(ctx, advantages, episodes)
            samples = episode_samples(episodes, advantages, r.layout) + ext.extra_samples(ctx, episodes)
            fsdp.release(generating)
            data_position += dist.max_int(extra_taken) * dist.world_size

            # ----- update -----
            generator.before_update()
            t_update = time.perf_counter()
            update_metrics = _update(model, ref_model, optimizer, samples, config, tokenizer.pad_token_id, bf16,
                                     loss_cfg, loss_configs, loss_weights, dist)
            update_time = time.perf_counter() - t_update
            update_metrics.update(generator.sync(step + 1, model, run.output_dir))

            # ----- log -----
            episode_adv = [float(a.mean()) if len(a) else 0.0 for a in advantages]
            metrics = episode_metrics(episodes, episode_adv)
            metrics.update(played_metrics(collector.played))
            metrics["batch/groups"] = float(len({ep.group for ep in episodes}))
            metrics["batch/episodes"] = float(len(episodes))
            metrics.update(collector.stats())
            metrics.update({
                "prs/stage": spec.final_stage if stage is None else stage,
                "prs/pass_rate": stage_pass_rate([ep.episode_terms for ep in episodes], spec,
                                                 spec.final_stage if stage is None else stage),
                "time/update": update_time, "time/step": time.perf_counter() - t_step,
                "lr": optimizer.param_groups[0]["lr"], "data/position": data_position,
                "data/excluded_tasks": len(excluded),
                **ext.metrics(),
            })
            if not stream.by_task_id and excluded:
                metrics["data/cold_start_overlap"] = float(np.mean([ep.task_id in set(excluded) for ep in episodes])
                                                           if episodes else 0.0)
            if dist.active:  # the update's metrics are global already
                metrics = reduce_metrics(dist.all_gather(metrics), ext.summed_metrics)
            metrics.update(update_metrics)
            played += int(metrics["episodes/played"])
            metrics["episodes/total"] = played
            seconds += metrics["time/step"]
            done = step + 1 == run.num_steps or 0 < run.max_episodes <= played
            every = config.eval.eval_every
            if config.eval.eval_episodes > 0 and (done or every > 0 and (step + 1) % every == 0):
                # the end-of-run evaluation comes before the last checkpoint, so that checkpoint's
                # curve ends at its own step when a later run resumes from it
                res = evaluate_held_out()
                if done:
                    evaluation["after"] = res
                point = curve_point(step + 1, res)
                if every > 0:
                    metrics.update({"eval/success": point["success"], "eval/return": point["return"]})
            if env_cfg.prs_schedule == "threshold":
                schedule.update(metrics["prs/pass_rate"])
            if logger is not None:
                logger.log(step + 1, metrics)
            result.history.append({"step": step + 1, **metrics})
            if not run.quiet and dist.is_main:
                bar.write(summary_line(step + 1, metrics))

            # ----- checkpoint -----
            if (run.save_every > 0 and (step + 1) % run.save_every == 0) or done:
                per_rank = dist.all_gather({"extension": ext.state_dict(), "rng": rng_state()})
                full = config.model.fsdp  # FSDP: gather the full weights and optimizer state (every rank)
                model_state = fsdp.full_model_state(model) if full else None
                optimizer_state = fsdp.full_optimizer_state(model, optimizer) if full else None
                if dist.is_main:
                    save_checkpoint(run.output_dir, step + 1, model, tokenizer, optimizer,
                                    extra={"data_position": data_position, "prs_schedule": schedule.state_dict(),
                                           "extension": ext.state_dict(), "config": to_dict(config),
                                           "env_kwargs": env_kwargs,
                                           "evaluation": dict(evaluation), "eval_curve": list(curve),
                                           "episodes_played": played, "train_seconds": seconds,
                                           "cold_start_tasks": excluded,
                                           "method": name, **({"per_rank": per_rank} if dist.active else {})},
                                    model_state=model_state, optimizer_state=optimizer_state)
                dist.barrier()
            last_step = step + 1
            if done:
                break
        bar.close()
        if config.eval.eval_episodes > 0:
            if "after" not in evaluation:  # a finished run resumed: evaluate what it left
                evaluation["after"] = evaluate_held_out()
                curve_point(last_step, evaluation["after"])
            if logger is not None:
                logger.log(last_step, {f"eval/{k}/{when}": v for when, res in evaluation.items()
                                        for k, v in (("success", res["success_rate"]), ("return", res["prs_return"]))})
            if "before" in evaluation and not run.quiet and dist.is_main:
                print(final_line(config, evaluation))
    finally:
        if logger is not None:
            logger.close()
        envs.close()
        dist.close()
    result.curve = curve
    if dir_lock is not None:
        dir_lock.release()
    return result


def _update(model, ref_model, optimizer, samples, config: TrainConfig, pad_id: int, bf16: bool, loss_cfg,
            loss_configs, loss_weights, dist=None) -> dict[str, float]:
    """Optimizer steps on one batch of samples (epochs x minibatches). Metrics are the mean over the
    optimizer steps that measured them (a minibatch without policy samples has no policy loss),
    ``tokens/loss`` the loss tokens of one epoch. Data-parallel: ``samples`` are this rank's, and
    every rank takes the same optimizer steps (a rank with no samples of a minibatch joins it with none)."""
    from agentgym.train.distributed import Dist
    from agentgym.train.update import sample_logprobs, train_step

    o = config.optim
    dist = dist or Dist()
    temperature = config.rollout.sampling.temperature
    if dist.sum_floats([len(samples)])[0] == 0:  # on every rank
        return {"update/skipped": 1.0}
    ref_lp = sample_logprobs(ref_model, samples, pad_id, o.micro_batch_size, temperature, bf16) if ref_model else None
    multi = o.num_epochs * o.num_minibatches > 1
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
                             loss_configs=loss_configs, dist=dist))
    out: dict[str, float] = {"update/skipped": 0.0, "update/optimizer_steps": float(len(steps))}
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
    return (f"{config.env.env_id} [{config.eval.eval_split}], {config.eval.eval_episodes} held-out episodes: success "
            f"{b['success_rate']:.3f} -> {a['success_rate']:.3f}   PRS return {b['prs_return']:.3f} -> "
            f"{a['prs_return']:.3f}")
