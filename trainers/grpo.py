"""Multi-turn GRPO on any registered agentgym env, with a Hugging Face causal LM.

    python trainers/sft.py                                    # cold start: tiny model on expert ToolQA, CPU
    python trainers/grpo.py --model runs/sft/final            # then GRPO on ToolQA-v0, CPU, minutes
    python trainers/grpo.py --env-id ALFWorld-v0 --layout window --model /ckpt/Qwen2.5-1.5B-Instruct

Reads top to bottom: args, setup, then per step: rollout, advantages, update, log, checkpoint.
Metric names are listed in docs/trainers.md. ``main(args, extension=...)`` is the entry point that
VSPO/GCD-style trainers reuse with a :class:`agentgym.train.hooks.TrainerExtension`.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import Literal

import numpy as np


@dataclass
class Args:
    # ----- env -----
    env_id: str = "ToolQA-v0"
    """registered env id"""
    env_kwargs: str = '{"question_kinds": ["single_hop"], "max_turns": 4}'
    """JSON object of keyword arguments for each env"""
    split: str = "train"
    """env split to train on (sent as reset option)"""
    backend: Literal["sync", "process", "ray", "list"] = "sync"
    """make_vec backend (`list`: plain envs in this process)"""
    reward_mode: Literal["prs", "binary"] = "prs"
    """PRS shaped reward, or the papers' binary success baseline"""
    prs_schedule: Literal["none", "linear", "threshold", "constant"] = "none"
    """how the PRS stage moves over training (`none`: final stage, full reward)"""
    prs_start_stage: float = 0.0
    """first PRS stage of a schedule"""
    prs_schedule_steps: int = 100
    """linear schedule: steps from the start stage to the final stage"""
    prs_threshold: float = 0.8
    """threshold schedule: batch pass rate that advances the stage"""
    # ----- model and sampling -----
    model: str = "tiny"
    """local checkpoint directory, or `tiny` / `tiny-small` to build one offline"""
    max_new_tokens: int = 48
    """most tokens per model turn"""
    temperature: float = 1.0
    """sampling temperature (also applied to training logprobs)"""
    top_p: float = 1.0
    """nucleus sampling mass"""
    layout: Literal["concat", "window"] = "concat"
    """multi-turn token layout (docs/trainers.md)"""
    window: int = 2
    """window layout: past turns kept in the prompt"""
    max_prompt_tokens: int = 3072
    """an episode whose next prompt is longer is cut (truncated)"""
    # ----- GRPO -----
    num_steps: int = 30
    """optimizer steps (one rollout batch each)"""
    num_groups: int = 4
    """tasks per step"""
    group_size: int = 8
    """episodes per task (G)"""
    std_normalize: bool = True
    """divide advantages by the group std (False: Dr. GRPO)"""
    eps_low: float = 0.2
    """PPO clip range below 1"""
    eps_high: float = 0.2
    """PPO clip range above 1"""
    beta: float = 0.001
    """k3 KL weight to the frozen initial model (0: no reference model)"""
    aggregation: Literal["token-mean", "seq-mean"] = "token-mean"
    """how token losses are averaged"""
    num_epochs: int = 1
    """passes over each rollout batch"""
    num_minibatches: int = 1
    """optimizer steps per pass"""
    micro_batch_size: int = 8
    """sequences per forward pass (gradient accumulation)"""
    learning_rate: float = 5e-4
    """AdamW learning rate (5e-4 suits the tiny model; real models want ~1e-6)"""
    weight_decay: float = 0.0
    """AdamW weight decay"""
    max_grad_norm: float = 1.0
    """gradient clipping (0: off)"""
    # ----- run -----
    seed: int = 0
    """seed of weights-independent randomness: task stream, sampling"""
    device: str = "auto"
    """`auto`, `cpu` or `cuda[:N]`"""
    cpu_threads: int = 1
    """torch intra-op threads on CPU (small models run fastest on 1; 0: torch's default)"""
    bf16: bool = True
    """bf16 autocast on GPU (ignored on CPU)"""
    gradient_checkpointing: bool = True
    """activation checkpointing on GPU (ignored on CPU)"""
    output_dir: str = "runs/grpo"
    """where metrics.jsonl, tensorboard/ and checkpoints/ go"""
    save_every: int = 10
    """checkpoint every this many steps (and at the end)"""
    resume: str | None = None
    """resume from a checkpoint: a path, or `auto` for OUTPUT_DIR's latest"""
    tensorboard: bool = True
    """also log to TensorBoard"""
    progress: bool = True
    """show a progress bar"""
    quiet: bool = False
    """do not print the per-step summary line"""
    # ----- cold start and evaluation -----
    cold_start_steps: int = 100
    """with `--model tiny`/`tiny-small`: SFT steps on expert episodes first (trainers/sft.py; 0: none)"""
    eval_episodes: int = 64
    """episodes evaluated before and after training on `eval_split` (0: no evaluation)"""
    eval_split: str = "valid"
    """split for the before/after evaluation"""


def main(args: Args, extension=None) -> list[dict]:
    import torch
    from tqdm.auto import tqdm

    from agentgym.agents import HFPolicy, SamplingConfig
    from agentgym.agents.tiny import resolve_model_path
    from agentgym.rewards.prs import PRSSchedule
    from agentgym.train.advantages import group_advantages
    from agentgym.train.chat import ChatEncoder
    from agentgym.train.checkpoint import find_checkpoint, load_trainer_state, save_checkpoint
    from agentgym.train.hooks import StepContext, TrainerExtension
    from agentgym.train.loss import LossConfig
    from agentgym.train.metrics import MetricsLogger
    from agentgym.train.rollout import RolloutConfig, collect_episodes
    from agentgym.train.samples import episode_samples
    from agentgym.train.setup import (load_model, load_tokenizer, make_env_batch, parse_env_kwargs, resolve_device,
                                      seed_everything, task_seed)
    from agentgym.train.stats import episode_metrics
    from agentgym.train.update import autocast_context, sample_logprobs, train_step

    # ----- setup -----
    extension = extension or TrainerExtension()
    loss_cfg = LossConfig(args.eps_low, args.eps_high, args.beta, args.aggregation)
    rollout_cfg = RolloutConfig(layout=args.layout, window=args.window, max_prompt_tokens=args.max_prompt_tokens)
    sampling = SamplingConfig(max_new_tokens=args.max_new_tokens, temperature=args.temperature, top_p=args.top_p)
    if args.num_minibatches < 1 or args.num_epochs < 1:
        raise ValueError("num_minibatches and num_epochs must be >= 1")
    device = resolve_device(args.device)
    on_gpu = device.startswith("cuda")
    if not on_gpu and args.cpu_threads > 0:
        torch.set_num_threads(args.cpu_threads)
    bf16 = args.bf16 and on_gpu
    env_kwargs = {"reward_mode": args.reward_mode, **parse_env_kwargs(args.env_kwargs)}
    base_model = resolve_model_path(args.model, (args.env_id,))
    if args.model in ("tiny", "tiny-small") and args.cold_start_steps > 0:
        base_model = cold_start(args)
    checkpoint = None
    if args.resume:
        checkpoint = find_checkpoint(args.output_dir if args.resume == "auto" else args.resume)
        if checkpoint is None and args.resume != "auto":
            raise ValueError(f"no checkpoint found at {args.resume!r}")
    seed_everything(args.seed)
    tokenizer = load_tokenizer(base_model)
    model = load_model(str(checkpoint or base_model), device, args.gradient_checkpointing and on_gpu)
    ref_model = load_model(base_model, device, trainable=False) if args.beta > 0 else None
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.learning_rate, weight_decay=args.weight_decay)
    policy = HFPolicy(model, tokenizer, sampling)
    encoder = ChatEncoder(tokenizer)
    envs = make_env_batch(args.env_id, args.num_groups, args.group_size, args.backend, env_kwargs)
    probe = __import__("gymnasium").make(args.env_id, **env_kwargs).unwrapped
    schedule = PRSSchedule(probe.prs_spec, kind=args.prs_schedule if args.prs_schedule != "none" else "constant",
                           num_steps=args.prs_schedule_steps, threshold=args.prs_threshold,
                           start_stage=args.prs_start_stage)
    start_step, data_position = 0, 0
    if checkpoint is not None:
        state = load_trainer_state(checkpoint, optimizer)
        start_step, data_position = state["step"], state["extra"]["data_position"]
        schedule.load_state_dict(state["extra"]["prs_schedule"])
        extension.load_state_dict(state["extra"]["extension"])
    logger = MetricsLogger(args.output_dir, resume_step=start_step if checkpoint else None,
                           tensorboard=args.tensorboard)
    reset_options = {"split": args.split}

    def next_seeds(n: int) -> list[int]:
        nonlocal data_position
        seeds = [task_seed(args.seed, data_position + i) for i in range(n)]
        data_position += n
        return seeds

    def collect(seeds):
        seeds = list(seeds)
        if len(seeds) > args.num_groups:
            raise ValueError(f"collect() takes at most {args.num_groups} seeds per call")
        padded = seeds + seeds[-1:] * (args.num_groups - len(seeds))  # fill unused groups, drop them after
        with autocast_context(device, bf16):
            episodes, timing = collect_episodes(envs, policy, encoder, padded, rollout_cfg, sampling, reset_options)
        collect.timing = timing
        return [ep for ep in episodes if ep.group < len(seeds)]

    evaluation = {}
    if args.eval_episodes > 0 and checkpoint is None:
        evaluation["before"] = run_eval(args, policy, env_kwargs)

    history = []
    bar = tqdm(range(start_step, args.num_steps), initial=start_step, total=args.num_steps, disable=not args.progress,
               desc="grpo", dynamic_ncols=True)
    for step in bar:
        t_step = time.perf_counter()
        # ----- rollout -----
        stage = None if args.prs_schedule == "none" else schedule.stage_at(step)
        envs.set_prs_stage(stage)
        ctx = StepContext(step, collect, next_seeds, policy, tokenizer, args.group_size)
        episodes = collect(next_seeds(args.num_groups))
        timing = dict(collect.timing)
        episodes = extension.after_rollout(ctx, episodes)

        # ----- advantages -----
        returns = np.array([ep.ret for ep in episodes])
        group_ids = [(ep.group_key, ep.group) for ep in episodes]
        advantages = group_advantages(returns, group_ids, normalize_std=args.std_normalize)
        advantages = extension.transform_advantages(advantages, episodes)
        samples = episode_samples(episodes, advantages, args.layout) + extension.extra_samples(ctx, episodes)

        # ----- update -----
        t_update = time.perf_counter()
        ref_lp = (sample_logprobs(ref_model, samples, tokenizer.pad_token_id, args.micro_batch_size,
                                  args.temperature, bf16) if ref_model is not None else None)
        multi = args.num_epochs * args.num_minibatches > 1
        old_lp = (sample_logprobs(model, samples, tokenizer.pad_token_id, args.micro_batch_size, args.temperature, bf16)
                  if multi else None)
        update_metrics: dict[str, float] = {}
        for _ in range(args.num_epochs):
            order = np.random.permutation(len(samples)) if multi else np.arange(len(samples))
            for chunk in np.array_split(order, args.num_minibatches):
                if len(chunk) == 0:
                    continue
                pick = [int(i) for i in chunk]
                m = train_step(model, optimizer, [samples[i] for i in pick], loss_cfg, tokenizer.pad_token_id,
                               args.micro_batch_size, args.temperature,
                               ref_logprobs=[ref_lp[i] for i in pick] if ref_lp is not None else None,
                               old_logprobs=[old_lp[i] for i in pick] if old_lp is not None else None,
                               loss_weights=extension.loss_weights, max_grad_norm=args.max_grad_norm, bf16=bf16)
                update_metrics = m  # the last optimizer step's numbers
        update_time = time.perf_counter() - t_update

        # ----- log -----
        metrics = episode_metrics(episodes, advantages)
        metrics.update(update_metrics)
        gen_tokens = sum(ep.num_generated_tokens for ep in episodes)
        metrics.update({
            "prs/stage": schedule.spec.final_stage if stage is None else stage,
            "tokens/generated": gen_tokens,
            "tokens_per_second": gen_tokens / max(timing["time/generate"], 1e-9),
            **timing, "time/update": update_time, "time/step": time.perf_counter() - t_step,
            "lr": optimizer.param_groups[0]["lr"], "data/position": data_position,
            **extension.metrics(),
        })
        if args.prs_schedule == "threshold":
            schedule.update(metrics["prs/pass_rate"])
        logger.log(step + 1, metrics)
        history.append({"step": step + 1, **metrics})
        line = (f"step {step + 1:4d}  reward {metrics['reward/mean']:.3f}  success {metrics['success/mean']:.2f}  "
                f"format {metrics.get('terms/format', float('nan')):.2f}  loss {metrics['loss/policy']:+.4f}  "
                f"kl {metrics.get('kl', 0.0):.4f}  tok/s {metrics['tokens_per_second']:.0f}  "
                f"{metrics['time/step']:.1f}s")
        if not args.quiet:
            bar.write(line)

        # ----- checkpoint -----
        done = step + 1 == args.num_steps
        if (args.save_every > 0 and (step + 1) % args.save_every == 0) or done:
            save_checkpoint(args.output_dir, step + 1, model, tokenizer, optimizer,
                            extra={"data_position": data_position, "prs_schedule": schedule.state_dict(),
                                   "extension": extension.state_dict(), "args": asdict(args)})
    bar.close()
    if args.eval_episodes > 0:
        evaluation["after"] = run_eval(args, policy, env_kwargs)
        logger.log(args.num_steps, {f"eval/{k}/{when}": v for when, r in evaluation.items()
                                    for k, v in (("success", r["success_rate"]), ("return", r["prs_return"]))})
        if "before" in evaluation and not args.quiet:
            b, a = evaluation["before"], evaluation["after"]
            print(f"{args.env_id} [{args.eval_split}], {args.eval_episodes} episodes: success "
                  f"{b['success_rate']:.3f} -> {a['success_rate']:.3f}   PRS return {b['prs_return']:.3f} -> "
                  f"{a['prs_return']:.3f}")
    logger.close()
    envs.close()
    return history


def cold_start(args: Args) -> str:
    """The tiny model after trainers/sft.py's cold start on this env's expert (reused if already there)."""
    import os
    import sys

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import sft

    final = os.path.join(args.output_dir, "sft", "final")
    if os.path.isfile(os.path.join(final, "config.json")):
        return final
    return sft.main(sft.Args(env_id=args.env_id, env_kwargs=args.env_kwargs, model=args.model,
                             num_steps=args.cold_start_steps, seed=args.seed, device=args.device,
                             cpu_threads=args.cpu_threads, output_dir=os.path.join(args.output_dir, "sft"),
                             quiet=args.quiet))


def run_eval(args: Args, policy, env_kwargs: dict) -> dict:
    """Success rate and PRS return of the current policy on held-out tasks (the same tasks every time)."""
    import torch

    from agentgym.agents import SamplingConfig
    from agentgym.train.checkpoint import rng_state, set_rng_state
    from agentgym.train.evaluate import evaluate

    sampling = SamplingConfig(max_new_tokens=args.max_new_tokens, temperature=args.temperature, top_p=args.top_p)
    saved = rng_state()  # evaluation must not shift the training run's random streams (CPU and CUDA)
    torch.manual_seed(args.seed + 1_000_003)
    try:
        return evaluate(policy, args.env_id, env_kwargs, args.eval_split, args.eval_episodes,
                        batch_size=min(32, args.eval_episodes), seed=10_000, sampling=sampling)
    finally:
        set_rng_state(saved)


if __name__ == "__main__":
    import tyro

    main(tyro.cli(Args))
