"""Trainer configuration, each setting declared once: nested dataclasses that every script in
``trainers/`` parses with ``tyro``, and that the runtime consumes as they are.

:class:`TrainConfig` (the RL trainers) is the groups env, model, rollout (which holds the sampling
settings, one :class:`~agentgym.agents.SamplingConfig`), optim (which holds the policy's
:class:`LossConfig`), run and eval, whose flags carry no prefix (``--env-id``, ``--temperature``,
``--eps-low``), and the cold start, an :class:`SFTConfig` whose flags carry its name
(``--cold-start.num-steps``). :class:`SFTRunConfig` (``trainers/sft.py``) is env, model, the same
:class:`SFTConfig`, the token layout (:class:`LayoutConfig`, which the rollout settings extend)
and the run basics (:class:`BaseRunConfig`, which the RL run's settings extend). A method adds
one group of its own (``vspo: VSPOConfig``), whose flags carry its prefix (``--vspo.eta``). How
names are given and kept unique, and the former spellings still accepted, is
:mod:`agentgym.train.run.flags`.

Every setting is checked when the command line is parsed (:func:`parse`), TRL style: a user's
mistake is one line naming the flag, not a stack trace. Programs that build a config in code get
the same checks as a ``ValueError`` from :meth:`TrainConfig.validate`; a group that the runtime
also takes on its own (sampling, loss, layout, rollout) checks its values when it is made.
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, fields, is_dataclass, replace
from typing import Annotated, Any, ClassVar, Literal, TypeVar

import tyro

from agentgym.agents.base import SamplingConfig
from agentgym.prompts import MAX_ACTION_CHARS, check_max_action_chars
from agentgym.settings import SettingError, check_on_init, checks_deferred
from agentgym.train.optim.distributed import launched_world_size
from agentgym.train.rollout.chat import LAYOUTS
from agentgym.train.run.flags import (  # noqa: F401
    ConfigTree,
    Flat,
    Grouped,
    Hidden,
    build,
    flag_rows,
    flag_table,
    former_flags_note,
    groups,
    rewrite_former_flags,
)
from agentgym.train.run.presets import TINY_MODELS
from agentgym.vector.options import BackendOptions, ProcessOptions, RayOptions, SyncOptions, WorkerOptions


class ConfigError(ValueError):
    """A setting that cannot work; the message names the flag."""


def default_env_kwargs(env_id: str, model: str | None = "tiny-wide", preset: str = "auto") -> dict[str, Any]:
    """The env kwargs a run of ``model`` on ``env_id`` uses when ``--env-kwargs`` is not given
    (:mod:`agentgym.train.run.presets`)."""
    from agentgym.train.run.presets import resolve_env_kwargs

    return resolve_env_kwargs(env_id, model, preset)[1]


def vllm_installed() -> bool:
    """Whether vLLM can be imported, found without importing it (it pulls in CUDA)."""
    import importlib.util

    if "vllm" in sys.modules:
        return sys.modules["vllm"] is not None
    return importlib.util.find_spec("vllm") is not None


def _finite(name: str, value: float, minimum: float | None = None, positive: bool = False) -> None:
    if not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ConfigError(f"--{name} must be a finite number, got {value!r}")
    if positive and value <= 0:
        raise ConfigError(f"--{name} must be > 0, got {value}")
    if minimum is not None and value < minimum:
        raise ConfigError(f"--{name} must be >= {minimum}, got {value}")


def _at_least(name: str, value: int, minimum: int, why: str = "") -> None:
    if value < minimum:
        raise ConfigError(f"--{name} must be >= {minimum}{f' ({why})' if why else ''}, got {value}")


def _check_history_layout(env: EnvConfig, model: str, layout: str) -> None:
    """Observations that carry their own history want one prompt per turn (docs/trainers.md)."""
    preset, kwargs = env.resolve(model)
    if layout != "concat" or kwargs.get("observation") != "history+admissible":
        return
    what = "observation='history+admissible'"
    if "observation" in env.overrides():
        where, other = f"--env-kwargs {what} puts", ""
    elif preset == "recorded":
        where = f"--model {model} records {what} for {env.env_id} (--preset auto), which puts"
        other = ", or --preset none"
    else:
        where, other = f"--preset {preset} gives {env.env_id} {what}, which puts", ", or --preset none"
    raise ConfigError(f"{where} the task and the last steps in every observation, and --layout concat would repeat "
                      "them in each turn; use --layout window (each prompt is then the system prompt and the latest "
                      f"observation; --window does not apply){other}")


@dataclass
class EnvConfig:
    """Which env the run plays, and how it is rewarded."""

    env_id: str = "ToolQA-v0"
    """registered env id (`agentgym list`)"""
    preset: str = "auto"
    """named env kwargs the run starts from: `tiny` (suits the built-in tiny models), `none` (each env's own defaults), `auto` (those the --model directory records for the env, else `tiny` for `--model tiny*`, else `none`; docs/trainers.md)"""
    env_kwargs: str | None = None
    """JSON object of env keyword arguments, merged over the preset key by key (a `null` value removes a key)"""
    split: str = "train"
    """env split to train on (sent as a reset option)"""
    backend: Literal["sync", "process", "ray", "list"] = "sync"
    """make_vec backend (`list`: the former name of `sync`)"""
    ray_address: str | None = None
    """`--backend ray`: the Ray cluster to join (`auto`, `HOST:6379`, `ray://HOST:10001`; default: start a local Ray)"""
    env_num_cpus: float = 0.0
    """`--backend ray`: CPUs each env worker reserves; with > 0 Ray spreads workers over the cluster's nodes"""
    envs_per_worker: int = WorkerOptions.envs_per_worker
    """`--backend process` / `ray`: envs per worker process or actor"""
    reward_mode: Literal["prs", "binary"] = "prs"
    """PRS shaped reward, or the papers' binary success baseline"""
    prs_schedule: Literal["none", "linear", "threshold", "constant"] = "none"
    """how the PRS stage moves over training (`none`: final stage, full reward)"""
    prs_start_stage: float = 0.0
    """first PRS stage of a schedule"""
    prs_schedule_steps: int = 100
    """linear schedule: steps from the start stage to the final stage"""
    prs_threshold: float = 0.8
    """threshold schedule: batch pass rate of the current stage's gate that advances the stage"""

    def overrides(self) -> dict[str, Any]:
        """``--env-kwargs`` as a dict ({} when not given)."""
        from agentgym.train.run.helpers import parse_env_kwargs

        return parse_env_kwargs(self.env_kwargs)

    def resolve(self, model: str | None) -> tuple[str, dict[str, Any]]:
        """``(preset, env kwargs)`` of a run of ``model``: the preset ``--preset`` picks for it (or
        ``recorded``, see :mod:`agentgym.train.run.presets`) and its kwargs with ``--env-kwargs`` merged
        over them, ``reward_mode`` not included."""
        from agentgym.train.run.presets import resolve_env_kwargs

        return resolve_env_kwargs(self.env_id, model, self.preset, self.overrides())

    def kwargs(self, model: str | None = None) -> dict[str, Any]:
        """The env kwargs this config gives every env of a run of ``model`` (``reward_mode``
        included); ``model`` is what ``--preset auto`` goes by (None: not a built-in tiny model)."""
        return {"reward_mode": self.reward_mode, **self.resolve(model)[1]}

    def describe(self, model: str | None) -> str:
        """The startup line's text: the env, the preset and every env kwarg."""
        from agentgym.train.run.presets import describe

        preset, _ = self.resolve(model)
        return describe(self.env_id, preset, self.kwargs(model), self.preset)

    def validate(self) -> None:
        import gymnasium as gym

        import agentgym  # noqa: F401  registers the envs

        if self.env_id not in gym.registry:
            known = sorted(k for k in gym.registry if not k.startswith(("CartPole", "Acrobot")))
            close = [k for k in known if self.env_id.lower() in k.lower() or k.lower() in self.env_id.lower()]
            hint = f"; did you mean {close[0]!r}?" if close else "; `agentgym list` prints the env ids"
            raise ConfigError(f"--env-id {self.env_id!r} is not a registered env{hint}")
        from agentgym.train.run.presets import check_preset

        try:
            check_preset(self.preset)
        except ValueError as e:
            raise ConfigError(str(e)) from None
        if self.env_kwargs is not None:
            try:
                self.overrides()
            except ValueError as e:
                raise ConfigError(f"--env-kwargs: {e}") from None
        _at_least("prs-schedule-steps", self.prs_schedule_steps, 1)
        _at_least("envs-per-worker", self.envs_per_worker, 1)
        _finite("env-num-cpus", self.env_num_cpus, minimum=0.0)
        if self.ray_address is not None and self.backend != "ray":
            raise ConfigError(f"--ray-address needs --backend ray (got --backend {self.backend})")
        _finite("prs-threshold", self.prs_threshold, minimum=0.0)
        _finite("prs-start-stage", self.prs_start_stage, minimum=0.0)

    def backend_options(self) -> BackendOptions:
        """The make_vec backend options of this run: each setting's default lives in the options
        class (agentgym/vector/options.py); only what the flags say is passed."""
        if self.backend == "process":
            # The trainer already runs torch and tokenizer threads; a forked child of a threaded
            # process can deadlock on their locks, so process workers are spawned.
            return ProcessOptions(envs_per_worker=self.envs_per_worker, mp_context="spawn")
        if self.backend == "ray":
            # > 0 CPUs per actor: spread the actors over the nodes, so a lost node takes only its envs
            spread = {"scheduling_strategy": "SPREAD"} if self.env_num_cpus > 0 else {}
            return RayOptions(envs_per_worker=self.envs_per_worker,
                              actor_options={"num_cpus": self.env_num_cpus, **spread},
                              init_kwargs={"address": self.ray_address} if self.ray_address else {})
        return SyncOptions()  # "list" included: plain envs in this process are what sync runs

    def check_env(self, model: str | None, eval_splits: Sequence[str] = ()) -> None:
        """Make the env once with the kwargs of a run of ``model`` and check that ``split`` (and
        ``eval_splits``) are its splits, so a bad setting stops the run before a model is built
        (:mod:`agentgym.train.run.env_check`)."""
        from agentgym.train.run.env_check import check_env

        try:
            kwargs = self.kwargs(model)
        except ValueError as e:  # a --model directory whose record cannot be read
            raise ConfigError(f"--preset {self.preset}: {e}") from None
        splits = {"--split": self.split, **({"--eval-split": list(eval_splits)} if eval_splits else {})}
        check_env(self.env_id, kwargs, splits)


@dataclass
class ModelConfig:
    """The model and where it runs."""

    model: str = "tiny-wide"
    """local checkpoint directory, or `tiny-wide` / `tiny` / `tiny-small` to build one offline (docs/trainers.md)"""
    device: str = "auto"
    """`auto`, `cpu` or `cuda[:N]`"""
    cpu_threads: int = 0
    """torch intra-op threads on CPU (0: this process's share of the cores it may use, affinity and cgroup quota counted, split among torchrun's local ranks)"""
    bf16: bool = True
    """bf16 autocast on GPU (ignored on CPU)"""
    gradient_checkpointing: bool = True
    """activation checkpointing on GPU (ignored on CPU)"""
    fsdp: bool = False
    """shard weights, gradients and optimizer state across torchrun's processes with torch FSDP (RL trainers)"""

    def validate(self) -> None:
        if self.model not in TINY_MODELS:
            if not os.path.isdir(self.model):
                raise ConfigError(f"--model {self.model!r} is not a directory; give a local Hugging Face checkpoint "
                                  f"directory or one of {', '.join(TINY_MODELS)} (nothing is downloaded)")
            if not os.path.isfile(os.path.join(self.model, "config.json")):
                raise ConfigError(f"--model {self.model!r} has no config.json: not a Hugging Face checkpoint directory")
        if not (self.device in ("auto", "cpu") or self.device.startswith("cuda")):
            raise ConfigError(f"--device must be auto, cpu or cuda[:N], got {self.device!r}")
        _at_least("cpu-threads", self.cpu_threads, 0)
        if self.fsdp and "WORLD_SIZE" not in os.environ:
            raise ConfigError("--fsdp shards the model across processes: launch with "
                              "`torchrun --nproc_per_node N` or `accelerate launch`")


ROLLOUT_MODES = ("lockstep", "overlapped")
AGGREGATIONS = ("token-mean", "seq-mean", "episode-mean")
LOSS_TYPES = ("ppo", "cispo")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


@dataclass
class LayoutConfig:
    """How an episode is laid out as tokens: what the RL rollout samples from, and what SFT trains on."""

    layout: Literal["concat", "window"] = "concat"
    """multi-turn token layout (docs/trainers.md)"""
    window: int | None = 2
    """window layout: past turns kept in the prompt besides the first observation (None: all)"""
    max_prompt_tokens: int = 3072
    """longest prompt: RL cuts an episode whose next prompt is longer (truncated), SFT leaves out an
    expert sample whose prompt before its last model turn is longer (the run stops if none is left)"""

    def __post_init__(self) -> None:
        check_on_init(self)

    def check(self) -> None:
        if self.layout not in LAYOUTS:
            raise SettingError("layout", f"must be one of {LAYOUTS}, got {self.layout!r}")
        if self.window is not None and (not _is_int(self.window) or self.window < 0):
            raise SettingError("window", f"must be an integer >= 0 or None, got {self.window!r}")
        if not _is_int(self.max_prompt_tokens) or self.max_prompt_tokens < 1:
            raise SettingError("max_prompt_tokens", f"must be an integer >= 1, got {self.max_prompt_tokens!r}")


@dataclass
class RolloutConfig(LayoutConfig):
    """How episodes are played: the token layout, the tasks and episodes of a step, the sampling
    settings, and what samples them. :func:`agentgym.train.rollout.episodes.collect_episodes` takes it as it is."""

    num_groups: int = 4
    """tasks per step"""
    group_size: int = 8
    """episodes per task (G)"""
    sampling: Annotated[SamplingConfig, Flat] = field(default_factory=lambda: SamplingConfig(max_new_tokens=48))
    """how each model turn is sampled (the rollouts and the held-out evaluation)"""
    rollout_mode: Literal["lockstep", "overlapped"] = "lockstep"
    """`overlapped`: generate for episodes whose env step is back while other envs still step (docs/trainers.md)"""
    max_generate_batch: int | None = None
    """`--rollout-mode overlapped`: most episodes per policy call (None: every episode that is ready)"""
    # Most of a policy call's time does not grow with its batch (decoding steps), so an env that is
    # back within about a call's time costs less to wait for than to generate for in a call of its
    # own; 0 overlaps more where envs are slow and a small call is cheap (a small model on CPU).
    batch_wait: float = 1.0
    """`--rollout-mode overlapped`: once one env step is back, wait up to this many times the last
    policy call's time for the others in flight (0: take only what is ready; docs/trainers.md)"""
    async_steps: int = 0
    """play up to this many steps ahead: a rollout thread plays the next steps' groups, with weights
    at most this many updates old, while the learner updates (0: each step plays, then updates;
    docs/trainers.md, "Asynchronous rollouts")"""
    generator: Literal["hf", "vllm", "openai"] = "hf"
    """what samples rollouts: the trained model (`hf`), a vLLM engine in this process (`vllm`), or an OpenAI-compatible server (`openai`; docs/trainers.md)"""
    generator_url: str | None = None
    """`--generator openai`: the server's URL, with /v1 (e.g. http://127.0.0.1:8000/v1)"""
    generator_model: str | None = None
    """`--generator openai`: the served model name (default: the first one the server lists)"""
    generator_api_key_env: str | None = None
    """`--generator openai`: name of the environment variable holding the server's API key (none: no key sent)"""
    generator_timeout: float = 60.0
    """`--generator openai`: seconds one request may take"""
    generator_retries: int = 3
    """`--generator openai`: attempts after the first, on connection errors, timeouts, 429 and 5xx"""
    reload_every: int = 1
    """`--generator openai`: make the server load the trained weights every N steps (0: never; its weights stay as they are)"""
    reload_timeout: float = 600.0
    """`--generator openai`: seconds the server may take to load a checkpoint"""
    generator_gpu_memory: float = 0.3
    """`--generator vllm`: share of GPU memory the engine may take (the rest is the trainer's)"""
    max_turns: Annotated[int | None, Hidden] = None
    """not a flag: cut an episode after this many model turns (None: the env's own limit, which the
    trainers set through the env's `max_turns` argument)"""
    max_action_chars: Annotated[int | None, Hidden] = MAX_ACTION_CHARS
    """not a flag: past actions go back into the history cut to this many characters, against
    runaway output (the turn's own sample is never cut; None: whole)"""

    # read-only views of the sampling settings, which live in ``sampling``
    @property
    def max_new_tokens(self) -> int:
        return self.sampling.max_new_tokens

    @property
    def temperature(self) -> float:
        return self.sampling.temperature

    @property
    def top_p(self) -> float:
        return self.sampling.top_p

    def check(self) -> None:
        super().check()
        if self.rollout_mode not in ROLLOUT_MODES:
            raise SettingError("rollout_mode", f"must be one of {ROLLOUT_MODES}, got {self.rollout_mode!r}")
        cap = self.max_generate_batch
        if cap is not None and (not _is_int(cap) or cap < 1):
            raise SettingError("max_generate_batch", f"must be an integer >= 1 or None, got {cap!r}")
        if not (_is_number(self.batch_wait) and self.batch_wait >= 0):
            raise SettingError("batch_wait", f"must be a finite number >= 0, got {self.batch_wait!r}")
        if self.max_turns is not None and (not _is_int(self.max_turns) or self.max_turns < 1):
            raise SettingError("max_turns", f"must be an integer >= 1 or None, got {self.max_turns!r}")
        try:
            check_max_action_chars(self.max_action_chars)
        except ValueError as e:
            raise SettingError("max_action_chars", str(e).removeprefix("max_action_chars ")) from None

    def validate(self) -> None:
        _at_least("num-groups", self.num_groups, 1)
        _at_least("group-size", self.group_size, 1)  # 2 unless the method allows 1 (TrainConfig.validate)
        _at_least("async-steps", self.async_steps, 0)
        if self.async_steps > 0 and self.generator == "vllm":
            raise ConfigError("--async-steps needs a generator that samples while the learner trains: the colocated "
                              "--generator vllm engine sleeps through each update. Use --generator openai (a vLLM "
                              "server beside the trainer) or --async-steps 0")
        if self.async_steps > 0 and launched_world_size() > 1:
            raise ConfigError(f"--async-steps runs in one process for now; under torchrun (WORLD_SIZE="
                              f"{launched_world_size()}) use --async-steps 0")
        _finite("generator-timeout", self.generator_timeout, positive=True)
        _at_least("generator-retries", self.generator_retries, 0)
        _at_least("reload-every", self.reload_every, 0)
        _finite("reload-timeout", self.reload_timeout, positive=True)
        _finite("generator-gpu-memory", self.generator_gpu_memory, positive=True)
        if self.generator_gpu_memory >= 1:
            raise ConfigError(f"--generator-gpu-memory must be in (0, 1), got {self.generator_gpu_memory}")
        if self.generator == "openai":
            if not self.generator_url:
                raise ConfigError("--generator openai needs --generator-url (the server's URL, e.g. "
                                  "http://127.0.0.1:8000/v1)")
            if not self.generator_url.startswith(("http://", "https://")):
                raise ConfigError(f"--generator-url must be an http(s) URL ending in /v1, got {self.generator_url!r}")
            if self.generator_api_key_env and self.generator_api_key_env not in os.environ:
                raise ConfigError(f"--generator-api-key-env names {self.generator_api_key_env!r}, which is not set")
        if self.generator == "vllm" and not vllm_installed():
            raise ConfigError("--generator vllm needs vLLM, which is not installed here: `pip install "
                              "'agentgym[vllm]'` on a CUDA machine, or use --generator hf or --generator openai")
        world = launched_world_size()
        if self.num_groups % world:
            raise ConfigError(f"--num-groups {self.num_groups} does not split into whole groups across {world} "
                              f"processes (WORLD_SIZE={world}); give a multiple of {world}")
        if world > 1 and self.generator != "hf":
            raise ConfigError(f"--generator {self.generator} is for one process; under torchrun every rank "
                              "generates with its own copy of the trained model (--generator hf)")


@dataclass
class LossConfig:
    """A token loss (agentgym/train/optim/loss.py): the policy's (flags without a prefix), and GCD's
    judge's (``--gcd.judge-loss.*``)."""

    eps_low: float = 0.2
    """PPO clip range below 1"""
    eps_high: float = 0.2
    """PPO clip range above 1 (DAPO's clip-higher: 0.28)"""
    beta: float = 0.001
    """k3 KL weight to the frozen initial model (0: no reference model)"""
    aggregation: Literal["token-mean", "seq-mean", "episode-mean"] = "token-mean"
    """how token losses are averaged (`seq-mean`: within each sequence first, so a long one weighs no more; `episode-mean`: within each episode first, over all its window samples, so an episode of many turns weighs no more)"""
    loss_type: Literal["ppo", "cispo"] = "ppo"
    """token loss: PPO-clip, or CISPO's clipped, detached importance weight"""

    def __post_init__(self) -> None:
        check_on_init(self)

    def check(self) -> None:
        if self.loss_type not in LOSS_TYPES:
            raise SettingError("loss_type", f"must be one of {LOSS_TYPES}, got {self.loss_type!r}")
        if self.aggregation not in AGGREGATIONS:
            raise SettingError("aggregation", f"must be one of {AGGREGATIONS}, got {self.aggregation!r}")
        if not (_is_number(self.eps_low) and 0 <= self.eps_low < 1):
            raise SettingError("eps_low", f"must be in [0, 1), got {self.eps_low!r}")
        if not (_is_number(self.eps_high) and self.eps_high >= 0):
            raise SettingError("eps_high", f"must be a finite number >= 0, got {self.eps_high!r}")
        if not (_is_number(self.beta) and self.beta >= 0):
            raise SettingError("beta", f"must be a finite number >= 0, got {self.beta!r}")


@dataclass
class OptimConfig:
    """The policy loss and the optimizer."""

    std_normalize: bool = True
    """divide advantages by the group std (False: Dr. GRPO)"""
    loss: Annotated[LossConfig, Flat] = field(default_factory=LossConfig)
    """the policy's token loss"""
    num_epochs: int = 1
    """passes over each rollout batch"""
    num_minibatches: int = 1
    """optimizer steps per pass"""
    micro_batch_size: int = 8
    """sequences per forward pass (gradient accumulation)"""
    learning_rate: float = 2e-4
    """AdamW learning rate (2e-4 suits the tiny models; real models want ~1e-6)"""
    weight_decay: float = 0.0
    """AdamW weight decay"""
    max_grad_norm: float = 1.0
    """gradient clipping (0: off)"""

    def validate(self) -> None:
        _finite("learning-rate", self.learning_rate, positive=True)
        _finite("weight-decay", self.weight_decay, minimum=0.0)
        _finite("max-grad-norm", self.max_grad_norm, minimum=0.0)
        _at_least("num-epochs", self.num_epochs, 1)
        _at_least("num-minibatches", self.num_minibatches, 1)
        _at_least("micro-batch-size", self.micro_batch_size, 1)

    def loss_config(self) -> LossConfig:
        """The policy's :class:`LossConfig`."""
        return self.loss


@dataclass
class BaseRunConfig:
    """What every run has: a seed, an output directory and its logging."""

    seed: int = 0
    """seed of weights-independent randomness: the task stream, sampling, SFT's batch order"""
    output_dir: str = "runs/grpo"
    """where metrics.jsonl, tensorboard/ and the model go (checkpoints/; SFT: final/)"""
    tensorboard: bool = True
    """also log to TensorBoard"""
    progress: bool = True
    """show a progress bar"""
    quiet: bool = False
    """do not print the per-step lines"""


@dataclass
class RunConfig(BaseRunConfig):
    """An RL run: the basics, its length and resume."""

    num_steps: int = 100
    """optimizer steps (one rollout batch each)"""
    max_episodes: int = 0
    """also stop once this many env episodes were played, extra rollouts (VSPO resampling, DAPO
    oversampling) included: an equal budget across methods (0: no limit)"""
    save_every: int = 10
    """checkpoint every this many steps (and at the end; 0: only at the end)"""
    resume: str | None = None
    """resume from a checkpoint: a path, or `auto` (also the bare flag) for OUTPUT_DIR's latest"""

    def validate(self) -> None:
        _at_least("num-steps", self.num_steps, 1)
        _at_least("max-episodes", self.max_episodes, 0)
        _at_least("save-every", self.save_every, 0)
        if self.resume not in (None, "auto") and not os.path.exists(self.resume):
            raise ConfigError(f"--resume {self.resume!r} does not exist (give a checkpoint or run directory, or `auto`)")


@dataclass
class EvalConfig:
    """Held-out evaluation before and after training."""

    eval_episodes: int = 256
    """episodes evaluated before and after training on each `eval_split` (0: no evaluation)"""
    eval_split: str = "valid"
    """split for the before/after evaluation (held out: no training task comes from it); a
    comma-separated list (`L1,L0,L2`) evaluates each, the first being the run's headline"""
    eval_seed: int = 10_000
    """task seed of the first evaluation episode (the same tasks before and after)"""
    eval_every: int = 0
    """also evaluate every N steps, for a learning curve (`eval/success`, `eval/return`; 0: only
    before and after)"""

    def validate(self) -> None:
        _at_least("eval-episodes", self.eval_episodes, 0)
        _at_least("eval-every", self.eval_every, 0)
        splits = [s.strip() for s in self.eval_split.split(",")]
        if "" in splits[1:] or len(splits) > 1 and not splits[0] or len(set(splits)) < len(splits):
            raise ConfigError(f"--eval-split {self.eval_split!r}: give one split, or distinct splits separated "
                              f"by commas (e.g. L1,L0,L2)")

    @property
    def eval_splits(self) -> tuple[str, ...]:
        """The evaluated splits, the headline first.

        >>> EvalConfig(eval_split="L1, L0,L2").eval_splits
        ('L1', 'L0', 'L2')
        """
        return tuple(s.strip() for s in self.eval_split.split(","))


# The env's SFT recipe: what an SFTConfig setting left None takes (env's entry, else "*"'s).
# ToolQA's: enough distinct expert episodes and steps that the tiny-wide model learns to copy a
# name into its query and a value from the passage into its answer on tasks it never saw (about
# 6 minutes on 2 CPU cores), from a teacher that says 60% of its answers as a sentence: the habit
# RL then removes (docs/trainers.md, "Learning that shows").
DEFAULT_COLD_START = {
    "*": {"num_steps": 100, "num_episodes": 128, "batch_size": 16, "chatty_answers": 0.0},
    "ToolQA-v0": {"num_steps": 3600, "num_episodes": 2048, "batch_size": 8, "chatty_answers": 0.6},
}


@dataclass
class SFTConfig:
    """Supervised fine-tuning on expert episodes: ``trainers/sft.py``, and the RL trainers' cold
    start (``--cold-start.*``). A setting left None takes the env's recipe (``DEFAULT_COLD_START``),
    in both: ``trainers/sft.py`` on its defaults makes the same model as an RL run's cold start."""

    num_episodes: int | None = None
    """expert episodes to collect (distinct tasks; RL never trains on a cold start's; None: the env's
    recipe, 2048 on ToolQA-v0, else 128)"""
    num_steps: int | None = None
    """optimizer steps (a cold start's 0: none; None: the env's recipe, 3600 on ToolQA-v0, else 100)"""
    batch_size: int | None = None
    """sequences per optimizer step (None: the env's recipe, 8 on ToolQA-v0, else 16)"""
    micro_batch_size: int | None = None
    """sequences per forward pass (None: the batch size)"""
    learning_rate: float = 3e-3
    """AdamW peak learning rate"""
    lr_schedule: Literal["cosine", "constant"] = "cosine"
    """after the warmup: cosine decay to a tenth of the peak at the last step, or constant"""
    warmup_steps: int = 10
    """linear warmup steps"""
    max_grad_norm: float = 1.0
    """gradient clipping (0: off)"""
    log_every: int | None = None
    """print a summary line every this many steps (None: a tenth of the steps, at least 10)"""
    judge_samples: int = 0
    """GCD cold start: judge samples (critique + verdict from step labels) mixed into the expert data (0: none)"""
    chatty_answers: float | None = None
    """fraction of expert episodes whose final answer is said as a sentence (`<answer>The answer is
    X.</answer>`), as a chatty teacher writes it (envs whose episodes end in `<answer>`; None: the
    env's recipe, 0.6 on ToolQA-v0, else 0)"""
    explore: float = 0.0
    """share of turns on which the expert episode plays a random admissible action instead (never
    trained on), so the data holds states off the expert's path, each labelled with the expert's next
    action from there (DAgger's mixture; envs with admissible actions and a planning expert, e.g. ALFWorld)"""
    prompt_loss_weight: float = 0.0
    """weight of a next-token loss on the tokens the policy does not write (system prompt,
    observations), beside the reply loss (0: replies only). A model built from scratch (the tiny
    ones) then also learns to read the env's text, which its few reply tokens teach slowly"""

    def __post_init__(self) -> None:
        check_on_init(self)

    def resolved(self, env_id: str) -> SFTConfig:
        """This config with every None filled in: from ``env_id``'s recipe, the micro-batch from
        the batch, the log interval from the steps.

        >>> SFTConfig(num_steps=5).resolved("ToolQA-v0").num_steps
        5
        >>> cfg = SFTConfig().resolved("ALFWorld-v0")
        >>> cfg.num_episodes, cfg.micro_batch_size, cfg.log_every
        (128, 16, 10)
        """
        table = {**DEFAULT_COLD_START["*"], **DEFAULT_COLD_START.get(env_id, {})}
        out = replace(self, **{k: v for k, v in table.items() if getattr(self, k) is None})
        return replace(out, micro_batch_size=out.micro_batch_size or out.batch_size,
                       log_every=out.log_every or max(10, out.num_steps // 10))

    def check(self) -> None:
        for name, least in (("num_episodes", 1), ("num_steps", 0), ("batch_size", 1), ("micro_batch_size", 1),
                            ("log_every", 1)):
            value = getattr(self, name)
            if value is not None and (not _is_int(value) or value < least):
                raise SettingError(name, f"must be an integer >= {least}, got {value!r}")
        if not (_is_number(self.learning_rate) and self.learning_rate > 0):
            raise SettingError("learning_rate", f"must be a finite number > 0, got {self.learning_rate!r}")
        if self.lr_schedule not in ("cosine", "constant"):
            raise SettingError("lr_schedule", f"must be cosine or constant, got {self.lr_schedule!r}")
        if not _is_int(self.warmup_steps) or self.warmup_steps < 0:
            raise SettingError("warmup_steps", f"must be an integer >= 0, got {self.warmup_steps!r}")
        if not (_is_number(self.max_grad_norm) and self.max_grad_norm >= 0):
            raise SettingError("max_grad_norm", f"must be a finite number >= 0, got {self.max_grad_norm!r}")
        if not _is_int(self.judge_samples) or self.judge_samples < 0:
            raise SettingError("judge_samples", f"must be an integer >= 0, got {self.judge_samples!r}")
        if self.chatty_answers is not None and not (_is_number(self.chatty_answers) and 0 <= self.chatty_answers <= 1):
            raise SettingError("chatty_answers", f"is a fraction in [0, 1], got {self.chatty_answers!r}")
        if not (_is_number(self.prompt_loss_weight) and self.prompt_loss_weight >= 0):
            raise SettingError("prompt_loss_weight", f"must be a finite number >= 0, got {self.prompt_loss_weight!r}")
        if not (_is_number(self.explore) and 0 <= self.explore <= 1):
            raise SettingError("explore", f"is a fraction in [0, 1], got {self.explore!r}")


def check_groups(config: Any) -> None:
    """Check the values of every group of a config that checks its own (``check()``), the error
    naming the flag of the bad setting (``--top-p``, ``--cold-start.num-steps``)."""
    for group, prefix in groups(config):
        if hasattr(group, "check"):
            try:
                group.check()
            except SettingError as e:
                raise ConfigError(f"--{prefix}{e.name.replace('_', '-')} {e.problem}") from None


@dataclass
class TrainConfig(ConfigTree):
    """An RL run: GRPO, and every method built on the same loop."""

    env: Annotated[EnvConfig, Flat] = field(default_factory=EnvConfig)
    model: Annotated[ModelConfig, Flat] = field(default_factory=ModelConfig)
    rollout: Annotated[RolloutConfig, Flat] = field(default_factory=RolloutConfig)
    optim: Annotated[OptimConfig, Flat] = field(default_factory=OptimConfig)
    run: Annotated[RunConfig, Flat] = field(default_factory=RunConfig)
    eval: Annotated[EvalConfig, Flat] = field(default_factory=EvalConfig)
    cold_start: Annotated[SFTConfig, Grouped] = field(default_factory=SFTConfig)
    """SFT on expert episodes before RL, with a built-in `--model tiny*` (`--cold-start.num-steps 0`: none)"""

    FORMER_NAMES: ClassVar[dict[str, str]] = {
        "cold_start_steps": "cold_start.num_steps", "cold_start_episodes": "cold_start.num_episodes",
        "cold_start_lr": "cold_start.learning_rate", "cold_start_batch_size": "cold_start.batch_size",
        "cold_start_judge_samples": "cold_start.judge_samples",
        "cold_start_chatty_answers": "cold_start.chatty_answers"}

    def validate(self) -> None:
        """Check every group (and a method's own, which defines ``validate``)."""
        check_groups(self)
        for f in fields(self):
            group = getattr(self, f.name)
            if hasattr(group, "validate"):
                group.validate()
        # group advantages compare a task's episodes; a method group whose advantages need no group
        # (PPO's value head) says so with a class attribute ``min_group_size = 1``
        least = min(getattr(getattr(self, f.name), "min_group_size", 2) for f in fields(self))
        _at_least("group-size", self.rollout.group_size, least, "group advantages compare episodes of one task")
        if self.rollout.async_steps > 0 and self.model.fsdp:
            raise ConfigError("--async-steps does not run with --fsdp yet (the rollout thread would need the "
                              "sharded weights gathered); use --async-steps 0")
        self.env.check_env(self.model.model, self.eval.eval_splits if self.eval.eval_episodes > 0 else ())
        _check_history_layout(self.env, self.model.model, self.rollout.layout)

    def cold_start_config(self) -> SFTRunConfig:
        """The SFT run of this run's cold start: this run's env, model, token layout and seed, the
        cold-start settings with the env's recipe filled in, under OUTPUT_DIR/sft."""
        return SFTRunConfig(env=self.env, model=self.model, sft=self.cold_start.resolved(self.env.env_id),
                            chat=LayoutConfig(**_base_fields(self.rollout, LayoutConfig)),
                            run=BaseRunConfig(**{**_base_fields(self.run, BaseRunConfig),
                                                 "output_dir": os.path.join(self.run.output_dir, "sft")}))


def _base_fields(config: Any, base: type) -> dict[str, Any]:
    """The settings ``config`` (of a subclass of ``base``) inherits from ``base``."""
    return {f.name: getattr(config, f.name) for f in fields(base)}


@dataclass
class SFTRunConfig(ConfigTree):
    """A cold-start SFT run (trainers/sft.py)."""

    env: Annotated[EnvConfig, Flat] = field(default_factory=EnvConfig)
    model: Annotated[ModelConfig, Flat] = field(default_factory=ModelConfig)
    sft: Annotated[SFTConfig, Flat] = field(default_factory=SFTConfig)
    """the SFT settings; those left None take the env's recipe, the RL trainers' cold start (so
    `python trainers/sft.py` on ToolQA-v0 is the main job's cold start)"""
    chat: Annotated[LayoutConfig, Flat] = field(default_factory=LayoutConfig)
    """the token layout, as in the RL trainers"""
    run: Annotated[BaseRunConfig, Flat] = field(default_factory=lambda: BaseRunConfig(output_dir="runs/sft"))

    def validate(self) -> None:
        if self.model.fsdp:
            raise ConfigError("--fsdp is for the RL trainers; trainers/sft.py trains in one process")
        if launched_world_size() > 1:
            raise ConfigError("trainers/sft.py trains in one process: run it with python, not torchrun "
                              "(an RL run under torchrun makes its cold start on rank 0)")
        check_groups(self)
        self.env.validate()
        self.model.validate()
        if self.sft.num_steps is not None:
            _at_least("num-steps", self.sft.num_steps, 1)
        self.env.check_env(self.model.model)
        _check_history_layout(self.env, self.model.model, self.chat.layout)


C = TypeVar("C")


def _bare_resume(argv: list[str]) -> list[str]:
    """``--resume`` with no value means ``--resume auto`` (as TRL's ``resume_from_checkpoint=True``)."""
    out = []
    for k, arg in enumerate(argv):
        out.append(arg)
        if arg == "--resume" and (k + 1 == len(argv) or argv[k + 1].startswith("--")):
            out.append("auto")
    return out


@contextmanager
def exit_on_config_error():
    """In a script: a :class:`ConfigError` exits with one line naming the problem (exit status 2,
    like argparse), also one found once the run is under way (a cold start left with no sample); a
    disk that fills up during the run is one line too (exit status 1)."""
    from agentgym.locks import DirectoryInUse
    from agentgym.output_paths import disk_full

    try:
        yield
    except (ConfigError, DirectoryInUse) as e:  # an output directory another run holds: one line too
        print(f"error: {e}", file=sys.stderr)
        raise SystemExit(2) from None
    except Exception as e:  # the disk filled up mid-run: libraries wrap the OS error in their own types
        if not disk_full(e):
            raise
        print("error: the disk is full (No space left on device) where the run writes (--output-dir): free some "
              "space, then run the command again (an RL run continues from its last checkpoint with --resume)",
              file=sys.stderr)
        raise SystemExit(1) from None


def parse(config_cls: type[C], argv: list[str] | None = None, description: str | None = None,
          default: C | None = None) -> C:
    """Parse the command line into ``config_cls`` (starting from ``default``) and validate it; a
    bad setting exits with one line naming the flag (exit status 2, like argparse). A former flag
    spelling (``--cold-start-steps``) is read as the current one."""
    argv = rewrite_former_flags(config_cls, _bare_resume(list(sys.argv[1:] if argv is None else argv)))
    description = "\n\n".join(part for part in (description, former_flags_note(config_cls)) if part) or None
    with checks_deferred():  # checked below, as a whole, so that an error names the flag
        config = tyro.cli(config_cls, args=argv, description=description, default=default)
    with exit_on_config_error():
        config.validate()
        _check_output_dir(config)
    return config


def _check_output_dir(config: Any) -> None:
    """A run's --output-dir must be writable before the run loads a model or plays an episode."""
    from agentgym.output_paths import OutputPathError, check_output_dir

    output_dir = getattr(getattr(config, "run", None), "output_dir", None)
    if output_dir is not None:
        try:
            check_output_dir(output_dir, "--output-dir")
        except OutputPathError as e:
            raise ConfigError(str(e)) from None


def to_dict(config: Any) -> dict[str, Any]:
    """A config as a plain nested dict (for checkpoints and logs)."""
    if is_dataclass(config):
        return {f.name: to_dict(getattr(config, f.name)) for f in fields(config)}
    return config
