"""Supervised fine-tuning on an env's expert episodes: the cold start before RL (SPEC §5).

:func:`run_sft` plays the env's expert (``expert=True``) on ``num_episodes`` distinct tasks, lays
each episode out as the chat transcript the RL trainer will sample from (same template, same
layout), and trains on the assistant tokens only (cross-entropy, token-mean). A sample whose
prompt is longer than ``max_prompt_tokens`` is left out (and counted), as the RL rollout cuts such
an episode; a run left with none stops with a :class:`~agentgym.train.base.errors.ConfigError`.

The tasks come from :func:`agentgym.train.rollout.tasks.cold_start_tasks`, and the model directory it
writes records them in ``agentgym_sft.json``, so an RL run started from that directory leaves
them out of its task stream. The directory is written under a temporary name and renamed when
complete; the record is written last, so a folder without it is a half-written one and is rebuilt
rather than loaded.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import gymnasium as gym
import numpy as np

import agentgym.envs  # noqa: F401  registers the envs
from agentgym.agents.tiny import resolve_model_path
from agentgym.locks import lock_dir
from agentgym.train.base.device import autocast_context, resolve_device, seed_everything
from agentgym.train.base.errors import ConfigError
from agentgym.train.base.flags import to_dict
from agentgym.train.base.metrics import MetricsLogger
from agentgym.train.base.models import add_adapters, load_model, load_tokenizer, trainable_parameters
from agentgym.train.base.records import RECORD_FILE, is_complete, read_record
from agentgym.train.base.threads import set_cpu_threads
from agentgym.train.coldstart.expert import expert_episode
from agentgym.train.hooks import Extensions, TrainerExtension
from agentgym.train.rollout.chat import MAX_PROMPT_TOKENS, ChatEncoder
from agentgym.train.rollout.tasks import STREAM_COLD_START, cold_start_tasks, task_seed

if TYPE_CHECKING:
    from agentgym.train.config.tree import SFTRunConfig


def resolved(cfg: SFTRunConfig) -> SFTRunConfig:
    """``cfg`` with every SFT setting left None filled in from the env's recipe, and its env on the
    split the expert plays (``expert_split``, when set)."""
    out = replace(cfg, sft=cfg.sft.resolved(cfg.env.env_id))
    if out.sft.expert_split is not None:
        out = replace(out, env=replace(out.env, split=out.sft.expert_split))
    return out


def _recipe(cfg: SFTRunConfig) -> dict[str, Any]:
    """What decides the result: a cached cold start is reused only when all of it matches."""
    cfg = resolved(cfg)
    sft = to_dict(cfg.sft)
    sft.pop("log_every", None)  # printing does not change the model
    sft.pop("expert_split", None)  # the recipe's "split" is the split the expert played
    if cfg.chat.max_prompt_tokens != MAX_PROMPT_TOKENS:
        # the default cap is left out, so cold starts cached before it existed are still reused
        sft["max_prompt_tokens"] = cfg.chat.max_prompt_tokens
    if not sft.get("explore"):
        sft.pop("explore", None)  # likewise: no exploration is the recipe made before the setting
    if not sft.get("prompt_loss_weight"):
        sft.pop("prompt_loss_weight", None)  # replies only: the recipe made before the setting
    if not sft.get("scored_negatives"):
        sft.pop("scored_negatives", None)  # every listed action: likewise
    if not sft.get("judge_samples"):
        # without judge samples the run is the one made before the setting existed: keep its
        # recipe, so cold starts cached then are still reused
        sft.pop("judge_samples", None)
    recipe = {"env_id": cfg.env.env_id, "env_kwargs": cfg.env.kwargs(cfg.model.model), "split": cfg.env.split,
              "model": cfg.model.model, "layout": cfg.chat.layout, "window": cfg.chat.window, "seed": cfg.run.seed,
              "sft": sft}
    if cfg.lora.enabled:  # full fine-tuning is the recipe made before the setting
        recipe["lora"] = to_dict(cfg.lora)
    return recipe


def reusable(model_dir: str | os.PathLike, cfg: SFTRunConfig) -> bool:
    """Whether ``model_dir`` holds a complete SFT output made with exactly this recipe."""
    return is_complete(model_dir) and (read_record(model_dir) or {}).get("recipe") == json.loads(
        json.dumps(_recipe(cfg)))


def expert_samples(cfg: SFTRunConfig, encoder, progress: bool = False):
    """Expert samples on the cold start's tasks; returns (samples, tasks played, episodes solved)."""
    cfg = resolved(cfg)
    env = gym.make(cfg.env.env_id, expert=True, **cfg.env.kwargs(cfg.model.model))
    try:
        listed = env.unwrapped.task_ids(cfg.env.split) if hasattr(env.unwrapped, "task_ids") else None
        chosen = cold_start_tasks(listed, cfg.run.seed, cfg.sft.num_episodes) if listed is not None else None
        samples, played, solved, chatty = [], [], 0, 0
        for k in _bar(range(cfg.sft.num_episodes), progress, "expert episodes"):
            options = {"split": cfg.env.split}
            if chosen is not None:
                options["task_id"] = chosen[k]
            seed = task_seed(cfg.run.seed, k, STREAM_COLD_START)
            got, record = expert_episode(env, encoder, seed, cfg.chat.layout, cfg.chat.window, options,
                                         chatty=chats(seed, cfg.sft.chatty_answers), explore=cfg.sft.explore)
            samples += got
            solved += bool(got) and record["success"]
            chatty += bool(got) and record.get("chatty", False)
            played.append(str(record["task_id"]))
    finally:
        env.close()
    if cfg.sft.chatty_answers > 0 and solved and not chatty:
        raise ValueError(f"--chatty-answers rewrites an episode's final <answer>...</answer>, and no expert episode "
                         f"of {cfg.env.env_id} ends with one")
    return samples, played, solved, chatty


def chats(seed: int, fraction: float) -> bool:
    """Whether the cold-start episode of env seed ``seed`` gets a chatty answer (a fixed draw per
    episode, so a recipe always makes the same data).

    >>> sum(chats(s, 0.6) for s in range(1000))
    608
    >>> any(chats(s, 0.0) for s in range(1000))
    False
    """
    return bool(np.random.default_rng([int(seed), 0xC4A7]).random() < fraction)


def extension_samples(cfg: SFTRunConfig, encoder, extensions: Extensions) -> tuple[list, str]:
    """The samples a method adds to the cold start (GCD's judge samples: :meth:`~agentgym.train.hooks.
    TrainerExtension.cold_start_samples`), played on the cold start's own tasks so RL's task split
    stays as it is; returns (samples, the line that says what they are). No env is made when no
    extension defines the hook."""
    if not extensions.defining("cold_start_samples"):
        return [], ""
    cfg = resolved(cfg)
    env = gym.make(cfg.env.env_id, expert=True, **cfg.env.kwargs(cfg.model.model))
    try:
        listed = env.unwrapped.task_ids(cfg.env.split) if hasattr(env.unwrapped, "task_ids") else None
        chosen = cold_start_tasks(listed, cfg.run.seed, cfg.sft.num_episodes) if listed is not None else None
        requests = [(task_seed(cfg.run.seed, k, STREAM_COLD_START),
                     {"split": cfg.env.split, **({"task_id": chosen[k]} if chosen is not None else {})})
                    for k in range(cfg.sft.num_episodes)]
        return extensions.cold_start_samples(env, encoder, requests, cfg.sft, cfg.run.seed)
    finally:
        env.close()


def prompt_tokens(sample) -> int:
    """Tokens before a sample's last model turn: the longest prompt the model reads in it (the
    prompts of a ``concat`` sequence grow turn by turn).

    >>> from agentgym.train.rollout.samples import Sample
    >>> prompt_tokens(Sample([1, 2, 3, 4, 5, 6, 7], [0, 0, 1, 0, 0, 1, 1], 1.0))
    5
    """
    end = len(sample.loss_mask)
    while end > 0 and not sample.loss_mask[end - 1]:
        end -= 1
    start = end
    while start > 0 and sample.loss_mask[start - 1]:
        start -= 1
    return start


def within_prompt_cap(samples: list, max_prompt_tokens: int) -> tuple[list, list[int]]:
    """The samples whose :func:`prompt_tokens` fit ``max_prompt_tokens``, and the prompt lengths
    of those left out. The RL rollout cuts an episode whose next prompt is longer, so such a
    sample teaches a turn RL never plays; and one long system prompt times a batch is what runs a
    machine out of memory in attention."""
    kept, left_out = [], []
    for s in samples:
        n = prompt_tokens(s)
        if n <= max_prompt_tokens:
            kept.append(s)
        else:
            left_out.append(n)
    return kept, left_out


def lr_factor(step: int, num_steps: int, warmup_steps: int, schedule: str = "cosine", floor: float = 0.1) -> float:
    """The learning rate of optimizer step ``step`` (0-based) as a fraction of the peak: a linear
    warmup, then constant or a cosine decay to ``floor`` at the last step.

    >>> [round(lr_factor(s, 100, 10, "cosine"), 3) for s in (0, 9, 10, 55, 99)]
    [0.1, 1.0, 1.0, 0.542, 0.1]
    >>> lr_factor(99, 100, 10, "constant")
    1.0
    """
    warm = min(1.0, (step + 1) / max(warmup_steps, 1))
    if schedule == "constant" or step < warmup_steps:
        return warm
    progress = min(1.0, (step - warmup_steps) / max(num_steps - 1 - warmup_steps, 1))
    return warm * (floor + (1 - floor) * 0.5 * (1 + math.cos(math.pi * progress)))


def _bar(iterable, enabled: bool, desc: str):
    from tqdm.auto import tqdm

    return tqdm(iterable, desc=desc, disable=not enabled, dynamic_ncols=True, leave=False)


def run_sft(cfg: SFTRunConfig, extensions: Sequence[TrainerExtension] = ()) -> str:
    """Train, save ``OUTPUT_DIR/final`` and return its path; ``extensions`` may add samples of their
    own to the expert data (GCD's judge samples, ``--judge-samples``)."""
    import torch

    # ----- setup -----
    cfg = resolved(cfg)
    run = cfg.run
    if cfg.sft.prompt_loss_weight and cfg.sft.explore and cfg.chat.layout == "concat":
        # a concat sequence holds the explored turns' random actions, which a prompt loss would teach
        raise ConfigError("--prompt-loss-weight with --explore needs --layout window: a concat sequence "
                          "holds the explored turns' random actions, which the prompt loss would train on")
    dir_lock = lock_dir(run.output_dir)  # one run per output directory
    device = resolve_device(cfg.model.device)
    if not device.startswith("cuda"):
        set_cpu_threads(cfg.model.cpu_threads)
    seed_everything(run.seed)
    if not run.quiet:
        print(f"sft: env {cfg.env.describe(cfg.model.model)}", flush=True)
    base_model = resolve_model_path(cfg.model.model, (cfg.env.env_id,), cfg.env.kwargs(cfg.model.model))
    tokenizer = load_tokenizer(base_model)
    model = load_model(base_model, device, trainable=not cfg.lora.enabled)
    if cfg.lora.enabled:
        model = add_adapters(model, cfg.lora, base_model)
    optimizer = torch.optim.AdamW(trainable_parameters(model), lr=cfg.sft.learning_rate)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: lr_factor(s, cfg.sft.num_steps, cfg.sft.warmup_steps, cfg.sft.lr_schedule))
    logger = MetricsLogger(run.output_dir, report_to=run.trackers, run_name=Path(run.output_dir).resolve().name,
                           settings=to_dict(cfg))

    # ----- data, then training -----
    ext = extensions if isinstance(extensions, Extensions) else Extensions(list(extensions))
    samples, tasks, solved, too_long = training_samples(cfg, tokenizer, ext)
    rng = np.random.default_rng(run.seed)
    order: list[int] = []
    model.train()
    bar = _bar(range(1, cfg.sft.num_steps + 1), run.progress, "sft")
    for step in bar:
        t0 = time.perf_counter()
        if len(order) < cfg.sft.batch_size:
            order += rng.permutation(len(samples)).tolist()
        batch, order = [samples[i] for i in order[:cfg.sft.batch_size]], order[cfg.sft.batch_size:]
        metrics = sft_step(cfg, model, optimizer, batch, tokenizer.pad_token_id, device)
        schedule.step()
        metrics.update({"lr": schedule.get_last_lr()[0], "time/step": time.perf_counter() - t0})
        logger.log(step, metrics)
        if not run.quiet and (step % cfg.sft.log_every == 0 or step == cfg.sft.num_steps):
            bar.write(f"sft step {step:4d}  loss {metrics['loss/sft']:.4f}  token acc {metrics['accuracy/token']:.3f}  "
                      + (f"prompt loss {metrics['loss/prompt']:.4f}  " if "loss/prompt" in metrics else "")
                      + f"{metrics['time/step']:.2f}s")
    bar.close()
    logger.close()
    final = save_final(cfg, model, tokenizer, tasks, solved, len(too_long))
    dir_lock.release()
    if not run.quiet:
        print(f"sft: saved {final}")
    return final


def training_samples(cfg: SFTRunConfig, tokenizer, extensions: Extensions):
    """The cold start's data: expert samples, then the extensions' own, those whose prompt is longer
    than ``--max-prompt-tokens`` left out. Returns ``(samples, expert tasks, solved, left-out prompt
    lengths)``; says what it made unless ``--quiet``."""
    quiet = cfg.run.quiet
    samples, tasks, solved, chatty = expert_samples(cfg, ChatEncoder(tokenizer), cfg.run.progress and not quiet)
    if not samples:
        raise ValueError(f"the expert of {cfg.env.env_id} solved none of {len(tasks)} episodes; nothing to train on")
    extra, note = extension_samples(cfg, ChatEncoder(tokenizer), extensions)
    if cfg.sft.judge_samples > 0 and not extra:
        raise ConfigError(f"--judge-samples {cfg.sft.judge_samples}: judge samples come from GCD's extension "
                          "(trainers/gcd.py's cold start, or trainers/sft.py, which adds it), and this run has none")
    samples += extra
    if note and not quiet:
        print(f"sft: {note}")
    cap = cfg.chat.max_prompt_tokens
    samples, too_long = within_prompt_cap(samples, cap)
    if not samples:
        raise ConfigError(f"every one of {len(too_long)} cold-start samples has a prompt longer than "
                          f"--max-prompt-tokens {cap} (the shortest: {min(too_long)} tokens); shorten the env's "
                          f"system prompt or observations, or raise --max-prompt-tokens")
    if too_long and not quiet:
        print(f"sft: {len(too_long)} samples left out, their prompt longer than --max-prompt-tokens {cap} "
              f"(up to {max(too_long)} tokens)")
    if not quiet:
        print(f"sft: {solved}/{len(tasks)} expert episodes solved ({len(set(tasks))} distinct tasks)"
              + (f", {chatty} of them with a chatty answer" if cfg.sft.chatty_answers > 0 else "")
              + f", {len(samples)} samples, {sum(s.num_loss_tokens for s in samples)} assistant tokens")
    return samples, tasks, solved, too_long


def sft_step(cfg: SFTRunConfig, model, optimizer, batch: list, pad_id: int, device: str) -> dict[str, float]:
    """One optimizer step on ``batch``: the reply tokens' cross-entropy (a mean over the batch's reply
    tokens), plus ``--prompt-loss-weight`` times the other tokens' (a mean over those), in micro-batches."""
    import torch

    from agentgym.train.optim.update import (
        masked_next_token_logits,
        pad_batch,
        reply_and_prompt_logits,
        sampled_softmax_normalizers,
        scored_normalizers,
    )

    prompt_weight = cfg.sft.prompt_loss_weight
    bf16 = cfg.model.bf16 and device.startswith("cuda")
    n_tokens = sum(s.num_loss_tokens - s.loss_mask[0] for s in batch)
    n_prompt = sum(len(s.input_ids) - 1 for s in batch) - n_tokens
    optimizer.zero_grad(set_to_none=True)
    total, correct, prompt_total, scored_turns, scored_top = 0.0, 0.0, 0.0, 0, 0
    for j in range(0, len(batch), cfg.sft.micro_batch_size):
        b = pad_batch(batch[j:j + cfg.sft.micro_batch_size], pad_id, device)
        with autocast_context(device, bf16):
            if prompt_weight:
                (logits, targets), (p_logits, p_targets) = reply_and_prompt_logits(
                    model, b["input_ids"], b["attention_mask"], b["loss_mask"])
            else:
                logits, targets = masked_next_token_logits(model, b["input_ids"], b["attention_mask"], b["loss_mask"])
        loss = torch.nn.functional.cross_entropy(logits, targets, reduction="sum") / max(n_tokens, 1)
        if "scored" in b:
            # replies chosen whole among candidates: the reply's tokens' loss is -S(expert), and with
            # each candidate list's log-sum-exp it is -log pi(expert) under the candidates' softmax
            negatives = cfg.sft.scored_negatives
            with autocast_context(device, bf16):
                normalized = (sampled_softmax_normalizers(model, b["input_ids"], b["scored"], negatives) if negatives
                              else scored_normalizers(model, b["input_ids"], b["scored"]))
            loss = loss + sum(norm for norm, _ in normalized) / max(n_tokens, 1)
            scored_turns += len(normalized)
            # the expert's action scored above every candidate scored (with negatives: the drawn ones,
            # after the expert's action, which comes first)
            scored_top += sum(int(torch.argmax(c)) == (0 if negatives else reply.pick)
                              for (_, c), (_, reply) in zip(normalized, b["scored"]))
        total += float(loss.detach())
        if prompt_weight:
            # each side a mean over its own tokens, so the weight says how much reading counts
            # against replying whatever the prompts' length
            p_loss = torch.nn.functional.cross_entropy(p_logits, p_targets, reduction="sum") / max(n_prompt, 1)
            prompt_total += float(p_loss.detach())
            loss = loss + prompt_weight * p_loss
        loss.backward()
        correct += float((logits.argmax(-1) == targets).sum())
    if cfg.sft.max_grad_norm > 0:
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.sft.max_grad_norm)
    optimizer.step()
    metrics = {"loss/sft": total, "accuracy/token": correct / max(n_tokens, 1), "tokens/loss": n_tokens}
    if prompt_weight:
        metrics["loss/prompt"] = prompt_total
    if scored_turns:
        metrics["accuracy/scored_top1"] = scored_top / scored_turns
    return metrics


def save_final(cfg: SFTRunConfig, model, tokenizer, tasks: list[str], solved: int, too_long: int = 0) -> str:
    """Write ``OUTPUT_DIR/final`` atomically: a temporary folder, the record last, then a rename."""
    root = Path(cfg.run.output_dir)
    final, tmp = root / "final", root / ".final.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    record = {"env_id": cfg.env.env_id, "split": cfg.env.split, "task_ids": tasks, "solved": solved,
              "samples_too_long": too_long, "recipe": _recipe(cfg)}
    (tmp / RECORD_FILE).write_text(json.dumps(record, indent=1))
    shutil.rmtree(final, ignore_errors=True)
    os.replace(tmp, final)
    return str(final)
