"""What a training run is built from, made once before its first step, and how a checkpoint saves
and restores it.

:func:`set_up` builds the model (after the tiny model's cold start), the reference model, the
optimizer, the generator, the env batch and its collector, the task stream and the PRS schedule,
and, with ``--resume``, restores the checkpoint into them; it returns them as a :class:`RunSetup`
and the run's :class:`~agentgym.train.base.state.RunState`. :func:`save` writes the run's
:class:`~agentgym.train.base.checkpoint_record.CheckpointRecord`; :func:`restore` reads one back.

The order of the steps is part of the contract: weights are loaded and the envs made before the
checkpoint's random streams are restored, so whatever randomness building them draws, a resumed run
continues exactly where the saved one stopped (SPEC §7).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import gymnasium as gym
import numpy as np

import agentgym.envs  # noqa: F401  registers the envs
from agentgym.agents.lora import adapter_base, adapters_off, is_adapter_dir, recorded_base
from agentgym.agents.tiny import resolve_model_path
from agentgym.locks import lock_dir
from agentgym.rewards.prs import PRSSchedule
from agentgym.train.base.checkpoint_record import CheckpointRecord
from agentgym.train.base.device import resolve_device, seed_everything
from agentgym.train.base.errors import ConfigError
from agentgym.train.base.flags import to_dict
from agentgym.train.base.memory import estimate, shape_of
from agentgym.train.base.metrics import MetricsLogger
from agentgym.train.base.models import add_adapters, load_adapters, load_model, load_tokenizer, trainable_parameters
from agentgym.train.base.records import read_record
from agentgym.train.base.state import RunState
from agentgym.train.base.threads import set_cpu_threads
from agentgym.train.base.world import launched_world_size
from agentgym.train.coldstart import sft
from agentgym.train.config.presets import TINY_MODELS
from agentgym.train.config.tree import TrainConfig
from agentgym.train.hooks import Extensions, StepContext, TrainerExtension
from agentgym.train.optim import fsdp
from agentgym.train.optim.distributed import init_distributed, stream_seed
from agentgym.train.rollout.chat import ChatEncoder
from agentgym.train.rollout.collector import Collector
from agentgym.train.rollout.envs import make_env_batch
from agentgym.train.rollout.generators import make_generator
from agentgym.train.rollout.pool import TaskSuccess
from agentgym.train.rollout.tasks import TaskStream
from agentgym.train.run.episode_log import EpisodeLog
from agentgym.train.view import RunView

TASK_SUCCESS_FILE = "task_success.json"
"""Per task of the training stream, episodes played and solved (written with each checkpoint)."""

if TYPE_CHECKING:
    import torch
    from transformers import PreTrainedTokenizerBase

    from agentgym.locks import DirLock
    from agentgym.rewards.prs import PRSSpec
    from agentgym.train.base.world import Dist
    from agentgym.train.rollout.envs import EnvBatch
    from agentgym.train.rollout.generators import Generator


@dataclass
class RunSetup:
    """The objects a run trains with (this rank's, under ``torchrun``)."""

    config: TrainConfig
    name: str
    """the trainer's name (progress bar, checkpoint record)"""
    dist: Dist
    """this process's place among torchrun's (rank, world size, collectives)"""
    device: str
    bf16: bool
    """bf16 autocast (on a GPU with ``--bf16``)"""
    env_kwargs: dict[str, Any]
    """the kwargs every env is made with, ``reward_mode`` included"""
    tokenizer: PreTrainedTokenizerBase
    model: torch.nn.Module
    """the trained policy (FSDP-sharded with ``--fsdp``)"""
    ref_model: torch.nn.Module | None
    """the frozen reference of the KL term (None with ``--beta 0``, and with LoRA, whose reference is
    ``model`` with its adapters off)"""
    optimizer: torch.optim.Optimizer
    generator: Generator
    """what samples the episodes: its policy plays them"""
    envs: EnvBatch
    collector: Collector
    stream: TaskStream
    """the training tasks, the cold start's left out"""
    excluded: list[str]
    """the cold start's tasks, left out of the stream"""
    spec: PRSSpec
    """the env's PRS terms and weights"""
    schedule: PRSSchedule
    extensions: Extensions
    view: RunView
    """what the extensions read of the run"""
    logger: MetricsLogger | None = None
    """metrics.jsonl and TensorBoard (rank 0 only)"""
    episode_log: EpisodeLog = field(default_factory=EpisodeLog.off)
    """the episodes kept on disk, ``--log-episodes`` (rank 0 only)"""
    dir_lock: DirLock | None = None
    """this run's hold on its output directory (rank 0 only)"""

    @property
    def uses_reference(self) -> bool:
        """Whether the update computes reference log-probabilities (a KL term)."""
        return self.config.optim.loss.beta > 0

    def reference_logprobs(self, samples, micro_batch_size: int, temperature: float):
        """Per-sample log-probabilities under the frozen reference: ``ref_model``, or with LoRA the
        trained model with its adapters switched off (no second copy of the weights)."""
        from agentgym.train.optim.update import sample_logprobs

        pad_id = self.tokenizer.pad_token_id
        if self.ref_model is not None:
            return sample_logprobs(self.ref_model, samples, pad_id, micro_batch_size, temperature, self.bf16)
        with adapters_off(self.model):
            return sample_logprobs(self.model, samples, pad_id, micro_batch_size, temperature, self.bf16)

    @property
    def policy(self):
        return self.generator.policy

    def prs_stage(self, step: int) -> float | None:
        """The PRS stage envs play at ``step`` (None: the final stage, no schedule)."""
        return None if self.config.env.prs_schedule == "none" else self.schedule.stage_at(step)

    def step_context(self, step: int, next_requests) -> StepContext:
        """What the extensions see during ``step``: the collector, the extra tasks, and a random
        stream of their own seeded by the run's seed, the step (and the rank under ``torchrun``)."""
        c = self.config
        rng = np.random.default_rng([c.run.seed, step, 0xE7] + ([self.dist.rank] if self.dist.active else []))
        return StepContext(step, self.collector, next_requests, self.policy, self.tokenizer, c.rollout.group_size,
                           c.rollout.num_groups // self.dist.world_size, rng, self.view)

    def close(self) -> None:
        """Close the logger, the envs and the process group, and release the output directory."""
        try:
            if self.logger is not None:
                self.logger.close()
            self.envs.close()
            self.dist.close()
        finally:
            if self.dir_lock is not None:
                self.dir_lock.release()


def cold_start(config: TrainConfig, extensions: Sequence[TrainerExtension] = ()) -> str:
    """The built-in tiny model after an SFT cold start on this env's expert, made with this run's
    env, layout and seed (a cached one is reused only when made with exactly the same recipe)."""
    sft_cfg = config.cold_start_config()
    final = os.path.join(sft_cfg.run.output_dir, "final")
    if sft.reusable(final, sft_cfg):
        return final
    return sft.run_sft(sft_cfg, extensions)


def _task_stream(config: TrainConfig, env, model_dir: str):
    """The RL task stream, without the tasks the model's cold start trained on."""
    record = read_record(model_dir) or {}
    excluded = []
    if record.get("env_id") == config.env.env_id and record.get("split") == config.env.split:
        excluded = list(record.get("task_ids", []))
    listed = env.task_ids(config.env.split) if hasattr(env, "task_ids") else None
    return TaskStream(config.run.seed, listed, excluded), excluded


def set_up(config: TrainConfig, extensions: Sequence[TrainerExtension] | TrainerExtension = (),
           name: str = "grpo") -> tuple[RunSetup, RunState]:
    """Build the run of ``config`` and where it starts: a fresh :class:`RunState`, or the one of the
    checkpoint ``--resume`` names, restored into the optimizer, schedule, extensions and random
    streams. Every rank calls it; rank 0 builds the tiny model and the cold start first."""
    from agentgym.train.run.checkpoint import resume_point  # torch

    config.validate()
    ext = extensions if isinstance(extensions, Extensions) else Extensions(
        [extensions] if isinstance(extensions, TrainerExtension) else extensions)
    env_cfg, r, run = config.env, config.rollout, config.run
    dist = init_distributed(resolve_device(config.model.device), config.model.fsdp)
    # one trainer per output directory: a second one would overwrite this one's checkpoints
    dir_lock = lock_dir(run.output_dir) if dist.is_main else None
    on_gpu = dist.device.startswith("cuda")
    if not on_gpu:
        set_cpu_threads(config.model.cpu_threads)
    env_kwargs = env_cfg.kwargs(config.model.model)
    if dist.is_main:
        print(f"env: {env_cfg.describe(config.model.model)}", flush=True)
    with dist.main_first():  # rank 0 builds the tiny model and the cold start, the others load them
        base_model = resolve_model_path(config.model.model, (env_cfg.env_id,), env_kwargs)
        if config.model.model in TINY_MODELS and config.cold_start.resolved(env_cfg.env_id).num_steps > 0:
            base_model = cold_start(config, ext)
    if dist.is_main:
        print(_memory_line(config, base_model, dist.world_size, on_gpu), flush=True)
    checkpoint, record = None, None
    if run.resume:
        checkpoint, record = resume_point(run.output_dir if run.resume == "auto" else run.resume,
                                          auto=run.resume == "auto")
    logger, episode_log = None, EpisodeLog.off()
    if dist.is_main:  # the run's own files, checked and cut back to the checkpoint before the model loads
        resume_step = record.step if record is not None else None
        logger = MetricsLogger(run.output_dir, resume_step=resume_step, report_to=run.trackers,
                               run_name=os.path.basename(os.path.abspath(run.output_dir)), settings=to_dict(config))
        episode_log = EpisodeLog(run.output_dir, run.log_episodes, resume_step=resume_step, sink=logger.log_episodes)
    seed_everything(run.seed + dist.rank)  # ranks sample differently
    bf16 = config.model.bf16 and on_gpu
    tokenizer, model, ref_model = _models(config, dist, base_model, checkpoint)
    view = RunView.of(config, tokenizer=tokenizer, device=dist.device, bf16=bf16, dist=dist)
    optimizer = _optimizer(config, ext, view, model, name)
    generator = make_generator(config, model, tokenizer, r.sampling, str(checkpoint or base_model))
    spec, stream, excluded = _tasks(config, env_kwargs, base_model, dist)
    schedule = PRSSchedule(spec, kind=env_cfg.prs_schedule if env_cfg.prs_schedule != "none" else "constant",
                           num_steps=env_cfg.prs_schedule_steps, threshold=env_cfg.prs_threshold,
                           start_stage=env_cfg.prs_start_stage)
    envs = make_env_batch(env_cfg.env_id, r.num_groups // dist.world_size, r.group_size,
                          env_cfg.backend_options(), env_kwargs)
    collector = Collector(envs, generator.policy, ChatEncoder(tokenizer), r, r.sampling, {"split": env_cfg.split},
                          dist.device, bf16, ext.system_prompt)
    setup = RunSetup(config, name, dist, dist.device, bf16, env_kwargs, tokenizer, model, ref_model, optimizer,
                     generator, envs, collector, stream, excluded, spec, schedule, ext, view, logger=logger,
                     episode_log=episode_log, dir_lock=dir_lock)
    state = restore(setup, record) if record is not None else RunState()
    return setup, state


def memory_estimate(config: TrainConfig, model_dir: str, world_size: int = 1, on_gpu: bool | None = None):
    """The predicted peak memory of one training process of ``config`` on the model in ``model_dir``
    (a model or adapter directory; read as a config only), for micro-batches of its longest samples
    (``--max-prompt-tokens`` + ``--max-new-tokens``): a :class:`~agentgym.train.base.memory.Estimate`."""
    from transformers import AutoConfig

    if on_gpu is None:
        on_gpu = resolve_device(config.model.device).startswith("cuda")
    r = config.rollout
    source = adapter_base(model_dir) if is_adapter_dir(model_dir) else model_dir
    shape = shape_of(AutoConfig.from_pretrained(source), config.lora)
    return estimate(shape, micro_batch=config.optim.micro_batch_size,
                    seq_len=r.max_prompt_tokens + r.sampling.max_new_tokens, reply_tokens=r.sampling.max_new_tokens,
                    reference=config.optim.loss.beta > 0, checkpointing=config.model.gradient_checkpointing and on_gpu,
                    bf16=config.model.bf16 and on_gpu, gpu=on_gpu, shards=world_size if config.model.fsdp else 1)


def _memory_line(config: TrainConfig, model_dir: str, world_size: int, on_gpu: bool | None = None) -> str:
    """The estimate's line, or why there is none: an architecture the count cannot build on the meta
    device costs the line, never the run."""
    try:
        return memory_estimate(config, model_dir, world_size, on_gpu).line()
    except Exception as e:  # noqa: BLE001  any model code may fail here; the run itself loads it below
        return f"memory: no estimate for {model_dir} ({type(e).__name__}: {str(e).splitlines()[0][:160]})"


def dry_run(config: TrainConfig) -> None:
    """``--dry-run``: check the settings and print the env and the memory estimate; nothing is
    trained and no model is loaded (a built-in tiny model is built, without its cold start)."""
    config.validate()
    env_kwargs = config.env.kwargs(config.model.model)
    print(f"env: {config.env.describe(config.model.model)}", flush=True)
    model_dir = resolve_model_path(config.model.model, (config.env.env_id,), env_kwargs)
    print(_memory_line(config, model_dir, launched_world_size()), flush=True)
    print("dry run: the settings check out; nothing was trained", flush=True)


def _models(config: TrainConfig, dist: Dist, base_model: str, checkpoint):
    """The tokenizer, the trained model (the checkpoint's weights on resume) and the frozen reference
    (None with ``--beta 0``, and with ``--lora.r``, where the reference is the model with its
    adapters off: :func:`reference_logprobs`); FSDP loads on the CPU, then each rank moves only its
    shard to the device."""
    on_gpu = dist.device.startswith("cuda")
    tokenizer = load_tokenizer(base_model)
    load_on = "cpu" if config.model.fsdp else dist.device
    checkpointing = config.model.gradient_checkpointing and on_gpu
    if config.lora.enabled:  # the run's base, frozen, and the adapters: new ones, or the checkpoint's
        if checkpoint is not None:
            _check_adapter_base(checkpoint, base_model)
        base = load_model(base_model, load_on, trainable=False)
        model = (add_adapters(base, config.lora, base_model, checkpointing) if checkpoint is None
                 else load_adapters(base, str(checkpoint), checkpointing))
        ref_model = None
    else:
        model = load_model(str(checkpoint or base_model), load_on, checkpointing)
        ref_model = load_model(base_model, load_on, trainable=False) if config.optim.loss.beta > 0 else None
    if config.model.fsdp:
        model = fsdp.shard(model, dist.device, dist.world_size)
        ref_model = fsdp.shard(ref_model, dist.device, dist.world_size) if ref_model is not None else None
    return tokenizer, model, ref_model


def _check_adapter_base(checkpoint, base_model: str) -> None:
    """A LoRA checkpoint resumes on the run's own base (``--model``); when the base it recorded is
    here and is another model, that is a mistake: say which ``--model`` it needs."""
    recorded = recorded_base(checkpoint)
    if os.path.isdir(recorded) and os.path.realpath(recorded) != os.path.realpath(base_model):
        raise ConfigError(f"--resume {checkpoint}: its LoRA adapters were trained on {recorded}, and this run's "
                          f"--model is {base_model}; resume with --model {recorded}")


def _optimizer(config: TrainConfig, ext: Extensions, view: RunView, model, name: str):
    """AdamW over the policy and an extension's own modules (PPO's value head), which ``build`` makes
    before the optimizer so their parameters join it."""
    import torch

    own_groups = ext.build(view, model)
    if own_groups and config.model.fsdp:
        raise ConfigError(f"{name}: extensions with parameters of their own do not run under --fsdp yet")
    o = config.optim
    optimizer = torch.optim.AdamW(trainable_parameters(model), lr=o.learning_rate, weight_decay=o.weight_decay)
    for group in own_groups:
        optimizer.add_param_group(dict(group))
    return optimizer


def _tasks(config: TrainConfig, env_kwargs: dict[str, Any], base_model: str, dist: Dist):
    """The env's PRS spec and the training task stream (the cold start's tasks left out), read off one
    env made for it; warns when the run will replay the stream's tasks."""
    env_cfg, r = config.env, config.rollout
    probe = gym.make(env_cfg.env_id, **env_kwargs)
    try:
        spec = probe.unwrapped.prs_spec
        stream, excluded = _task_stream(config, probe.unwrapped, base_model)
    finally:
        probe.close()
    positions = config.run.num_steps * r.num_groups
    if config.run.max_episodes > 0:
        positions = min(positions, -(-config.run.max_episodes // r.group_size))
    warning = stream.replay_warning(positions, f"{env_cfg.env_id} [{env_cfg.split}]")
    if warning and dist.is_main:
        if env_cfg.split in config.eval.eval_splits:  # a pool the run evaluates too: replay is the point
            print(f"{env_cfg.env_id} [{env_cfg.split}]: RL replays its {len(stream.pool)} tasks, each about "
                  f"{positions / len(stream.pool):.1f} times, and evaluates them", flush=True)
        else:
            print(warning, file=sys.stderr, flush=True)
    return spec, stream, excluded


def restore(run: RunSetup, record: CheckpointRecord) -> RunState:
    """Load a checkpoint into the run (every rank loads the same one) and return its state.

    Each rank takes its own extension state and random streams when the checkpoint has them (the
    same rank count); otherwise rank 0's extension state, and fresh streams for the ranks past 0."""
    from agentgym.train.run.checkpoint import set_rng_state

    if run.config.model.fsdp:
        fsdp.load_optimizer_state(run.model, run.optimizer, record.optimizer)
    else:
        run.optimizer.load_state_dict(record.optimizer)
    set_rng_state(record.rng)
    state = RunState.from_state_dict(record.state.state_dict())
    if state.schedule:
        run.schedule.load_state_dict(state.schedule)
    extension, rng = record.rank_state(run.dist.rank)
    run.extensions.load_state_dict(extension)
    if rng is not None:
        set_rng_state(rng)
    elif run.dist.rank > 0:
        seed_everything(stream_seed(run.config.run.seed, run.dist.rank, state.step))
    return state


def save(run: RunSetup, state: RunState) -> None:
    """Checkpoint the run after ``state.step`` steps. Every rank calls it (each rank's extension
    state and random streams are gathered, FSDP gathers the full weights); rank 0 writes."""
    from agentgym.train.run.checkpoint import rng_state, write_checkpoint

    dist = run.dist
    per_rank = dist.all_gather({"extension": run.extensions.state_dict(), "rng": rng_state()})
    full = run.config.model.fsdp  # FSDP: the full weights and optimizer state, gathered from every rank
    model_state = fsdp.full_model_state(run.model) if full else None
    optimizer_state = fsdp.full_optimizer_state(run.model, run.optimizer) if full else None
    state.schedule, state.extension = run.schedule.state_dict(), run.extensions.state_dict()
    if dist.is_main:
        record = CheckpointRecord(state, config=to_dict(run.config), method=run.name, env_kwargs=run.env_kwargs,
                                  cold_start_tasks=list(run.excluded),
                                  optimizer=run.optimizer.state_dict() if optimizer_state is None else optimizer_state,
                                  rng=rng_state(), per_rank=per_rank if dist.active else [])
        write_checkpoint(run.config.run.output_dir, record, run.model, run.tokenizer, model_state=model_state)
        if state.tasks:
            _write_json(os.path.join(run.config.run.output_dir, TASK_SUCCESS_FILE), TaskSuccess(state.tasks).table())
    dist.barrier()


def _write_json(path: str, obj: Any) -> None:
    """``obj`` as JSON at ``path``, written whole or not at all (a temporary file, then a rename)."""
    tmp = f"{path}.tmp"
    with open(tmp, "w") as f:
        json.dump(obj, f, indent=1)
    os.replace(tmp, path)
