"""How episodes are played and laid out as tokens: the settings the rollout reads.

:class:`LayoutConfig` (the token layout, which SFT shares) and :class:`RolloutConfig` (tasks and
episodes per step, sampling, the rollout mode and what samples it). Both check their values when made;
:meth:`RolloutConfig.validate` adds what depends on the launch (``torchrun``) and the machine (vLLM).
"""

from __future__ import annotations

import importlib.util
import os
import sys
from dataclasses import dataclass, field
from typing import Annotated, Literal

from agentgym.agents.base import SamplingConfig
from agentgym.prompts import MAX_ACTION_CHARS, check_max_action_chars
from agentgym.settings import SettingError, check_on_init
from agentgym.train.base.errors import ConfigError, at_least, finite, is_int, is_number
from agentgym.train.base.flags import Flat, Hidden
from agentgym.train.base.world import launched_world_size
from agentgym.train.rollout.chat import LAYOUTS, MAX_PROMPT_TOKENS

ROLLOUT_MODES = ("lockstep", "overlapped")


def vllm_installed() -> bool:
    """Whether vLLM can be imported, found without importing it (it pulls in CUDA)."""
    if "vllm" in sys.modules:
        return sys.modules["vllm"] is not None
    return importlib.util.find_spec("vllm") is not None


@dataclass
class LayoutConfig:
    """How an episode is laid out as tokens: what the RL rollout samples from, and what SFT trains on."""

    layout: Literal["concat", "window"] = "concat"
    """multi-turn token layout (docs/trainers.md)"""
    window: int | None = 2
    """window layout: past turns kept in the prompt besides the first observation (None: all)"""
    max_prompt_tokens: int = MAX_PROMPT_TOKENS
    """longest prompt: RL cuts an episode whose next prompt is longer (truncated), SFT leaves out an
    expert sample whose prompt before its last model turn is longer (the run stops if none is left)"""

    def __post_init__(self) -> None:
        check_on_init(self)

    def check(self) -> None:
        if self.layout not in LAYOUTS:
            raise SettingError("layout", f"must be one of {LAYOUTS}, got {self.layout!r}")
        if self.window is not None and (not is_int(self.window) or self.window < 0):
            raise SettingError("window", f"must be an integer >= 0 or None, got {self.window!r}")
        if not is_int(self.max_prompt_tokens) or self.max_prompt_tokens < 1:
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
        if cap is not None and (not is_int(cap) or cap < 1):
            raise SettingError("max_generate_batch", f"must be an integer >= 1 or None, got {cap!r}")
        if not (is_number(self.batch_wait) and self.batch_wait >= 0):
            raise SettingError("batch_wait", f"must be a finite number >= 0, got {self.batch_wait!r}")
        if self.max_turns is not None and (not is_int(self.max_turns) or self.max_turns < 1):
            raise SettingError("max_turns", f"must be an integer >= 1 or None, got {self.max_turns!r}")
        try:
            check_max_action_chars(self.max_action_chars)
        except ValueError as e:
            raise SettingError("max_action_chars", str(e).removeprefix("max_action_chars ")) from None

    def validate(self) -> None:
        at_least("num-groups", self.num_groups, 1)
        at_least("group-size", self.group_size, 1)  # 2 unless the method allows 1 (TrainConfig.validate)
        at_least("async-steps", self.async_steps, 0)
        if self.async_steps > 0 and self.generator == "vllm":
            raise ConfigError("--async-steps needs a generator that samples while the learner trains: the colocated "
                              "--generator vllm engine sleeps through each update. Use --generator openai (a vLLM "
                              "server beside the trainer) or --async-steps 0")
        if self.async_steps > 0 and launched_world_size() > 1:
            raise ConfigError(f"--async-steps runs in one process for now; under torchrun (WORLD_SIZE="
                              f"{launched_world_size()}) use --async-steps 0")
        finite("generator-timeout", self.generator_timeout, positive=True)
        at_least("generator-retries", self.generator_retries, 0)
        at_least("reload-every", self.reload_every, 0)
        finite("reload-timeout", self.reload_timeout, positive=True)
        finite("generator-gpu-memory", self.generator_gpu_memory, positive=True)
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
