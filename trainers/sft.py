"""Cold start: supervised fine-tuning on an env's expert trajectories (SPEC §5).

    python trainers/sft.py                                    # tiny model, ToolQA-v0 single-hop, CPU
    python trainers/sft.py --env-id ALFWorld-v0 --layout window --model /ckpt/Qwen2.5-1.5B-Instruct

Plays the env's expert (``expert=True``) for ``num_episodes`` episodes, lays each one out as the
chat transcript the RL trainer will sample from, and trains on the assistant tokens only
(cross-entropy, token-mean). Saves ``OUTPUT_DIR/final`` (a model directory ``trainers/grpo.py
--model`` accepts) and logs ``loss/sft`` per step to metrics.jsonl.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Literal


@dataclass
class Args:
    env_id: str = "ToolQA-v0"
    """registered env id (its expert must be available)"""
    env_kwargs: str = '{"question_kinds": ["single_hop"], "max_turns": 4}'
    """JSON object of keyword arguments for each env"""
    split: str = "train"
    """split the expert plays"""
    model: str = "tiny"
    """local checkpoint directory, or `tiny` / `tiny-small` to build one offline"""
    num_episodes: int = 128
    """expert episodes to collect"""
    layout: Literal["concat", "window"] = "concat"
    """token layout, as in trainers/grpo.py"""
    window: int = 2
    """window layout: past turns kept in the prompt"""
    num_steps: int = 100
    """optimizer steps"""
    batch_size: int = 16
    """sequences per optimizer step"""
    micro_batch_size: int = 16
    """sequences per forward pass"""
    learning_rate: float = 3e-3
    """AdamW learning rate (constant after a short warmup)"""
    warmup_steps: int = 10
    """linear warmup steps"""
    max_grad_norm: float = 1.0
    """gradient clipping (0: off)"""
    seed: int = 0
    """seed of the episode stream, batching and weights-independent randomness"""
    device: str = "auto"
    """`auto`, `cpu` or `cuda[:N]`"""
    cpu_threads: int = 1
    """torch intra-op threads on CPU (0: torch's default)"""
    bf16: bool = True
    """bf16 autocast on GPU"""
    output_dir: str = "runs/sft"
    """where metrics.jsonl and final/ go"""
    log_every: int = 10
    """print a summary line every this many steps"""
    quiet: bool = False
    """print nothing per step"""


def main(args: Args) -> str:
    import gymnasium as gym
    import numpy as np
    import torch

    import agentgym  # noqa: F401  registers the envs
    from agentgym.agents.tiny import resolve_model_path
    from agentgym.train.chat import ChatEncoder
    from agentgym.train.expert import expert_episode
    from agentgym.train.metrics import MetricsLogger
    from agentgym.train.setup import (load_model, load_tokenizer, parse_env_kwargs, resolve_device, seed_everything,
                                      task_seed)
    from agentgym.train.update import autocast_context, pad_batch

    # ----- setup -----
    device = resolve_device(args.device)
    if not device.startswith("cuda") and args.cpu_threads > 0:
        torch.set_num_threads(args.cpu_threads)
    bf16 = args.bf16 and device.startswith("cuda")
    seed_everything(args.seed)
    base_model = resolve_model_path(args.model, (args.env_id,))
    tokenizer = load_tokenizer(base_model)
    model = load_model(base_model, device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.learning_rate)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min(1.0, (s + 1) / max(args.warmup_steps, 1)))
    encoder = ChatEncoder(tokenizer)
    logger = MetricsLogger(args.output_dir, tensorboard=False)

    # ----- expert data -----
    env = gym.make(args.env_id, expert=True, **parse_env_kwargs(args.env_kwargs))
    samples, successes = [], 0
    for k in range(args.num_episodes):
        got, info = expert_episode(env, encoder, task_seed(args.seed, k), args.layout, args.window,
                                   {"split": args.split})
        samples += got
        successes += bool(got)
    env.close()
    if not samples:
        raise ValueError(f"the expert of {args.env_id} solved none of {args.num_episodes} episodes; nothing to train on")
    if not args.quiet:
        print(f"sft: {successes}/{args.num_episodes} expert episodes kept, {len(samples)} samples, "
              f"{sum(s.num_loss_tokens for s in samples)} assistant tokens")

    # ----- train -----
    rng = np.random.default_rng(args.seed)
    order: list[int] = []
    model.train()
    for step in range(1, args.num_steps + 1):
        t0 = time.perf_counter()
        if len(order) < args.batch_size:
            order += rng.permutation(len(samples)).tolist()
        batch, order = [samples[i] for i in order[:args.batch_size]], order[args.batch_size:]
        n_tokens = sum(s.num_loss_tokens - s.loss_mask[0] for s in batch)
        optimizer.zero_grad(set_to_none=True)
        total, correct = 0.0, 0.0
        for j in range(0, len(batch), args.micro_batch_size):
            b = pad_batch(batch[j:j + args.micro_batch_size], tokenizer.pad_token_id, device)
            with autocast_context(device, bf16):
                logits = model(input_ids=b["input_ids"], attention_mask=b["attention_mask"]).logits[:, :-1].float()
            targets = b["input_ids"][:, 1:]
            nll = torch.nn.functional.cross_entropy(logits.transpose(1, 2), targets, reduction="none")
            loss = (nll * b["loss_mask"]).sum() / max(n_tokens, 1)
            loss.backward()
            total += float(loss.detach())
            correct += float(((logits.argmax(-1) == targets).float() * b["loss_mask"]).sum())
        if args.max_grad_norm > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), args.max_grad_norm)
        optimizer.step()
        schedule.step()
        metrics = {"loss/sft": total, "accuracy/token": correct / max(n_tokens, 1), "tokens/loss": n_tokens,
                   "lr": schedule.get_last_lr()[0], "time/step": time.perf_counter() - t0}
        logger.log(step, metrics)
        if not args.quiet and (step % args.log_every == 0 or step == args.num_steps):
            print(f"step {step:4d}  loss {total:.4f}  token acc {metrics['accuracy/token']:.3f}  "
                  f"{metrics['time/step']:.2f}s")
    logger.close()
    final = f"{args.output_dir}/final"
    model.save_pretrained(final)
    tokenizer.save_pretrained(final)
    if not args.quiet:
        print(f"saved {final}")
    return final


if __name__ == "__main__":
    import tyro

    main(tyro.cli(Args))
