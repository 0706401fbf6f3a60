"""``agentgym eval``: evaluate a checkpoint or an OpenAI-compatible endpoint on an env's split.

    agentgym eval --model runs/grpo/checkpoints/step_30 --env-id ToolQA-v0 --split test
    agentgym eval --base-url http://127.0.0.1:8000/v1 --model Qwen2.5-7B-Instruct --env-id ToolQA-v0

Plays ``--num-episodes`` episodes (task seeds 0, 1, ... so every model sees the same tasks; a
split with no more tasks than that, such as a pool of training games, is played whole, each task
in turn, as the trainers' held-out evaluation plays it), with the same chat layout custom agents use (:func:`agentgym.episode_to_messages`), and prints the
success rate, the mean PRS return and the mean of every PRS term. ``--output`` also writes them
as JSON, with each episode's task, success and return in order (``episodes``).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import sys
import urllib.parse
from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np

import agentgym.envs  # noqa: F401  registers the envs
from agentgym.agents import HFPolicy, OpenAIPolicy, SamplingConfig
from agentgym.agents.tiny import resolve_model_path
from agentgym.envs.base import DataRefused
from agentgym.envs.env_ids import registered_env_id
from agentgym.output_paths import OutputPathError, check_output_file, disk_full, disk_full_message
from agentgym.settings import SettingError
from agentgym.train.base.device import resolve_device
from agentgym.train.base.flags import add_arguments
from agentgym.train.base.models import load_model, load_tokenizer
from agentgym.train.base.records import trainer_record
from agentgym.train.config.env import EnvConfig
from agentgym.train.config.env_check import check_env
from agentgym.train.config.model import ModelConfig
from agentgym.train.config.presets import check_preset, describe, parse_env_kwargs, resolve_env_kwargs
from agentgym.train.config.rollout import LayoutConfig, RolloutConfig
from agentgym.train.hooks import Extensions
from agentgym.train.methods import recorded_extensions
from agentgym.train.rollout.envs import make_env_batch
from agentgym.train.rollout.episodes import GroupRequest, collect_episodes


def evaluate(policy, env_id: str, env_kwargs: dict[str, Any] | None = None, split: str | None = "test",
             num_episodes: int = 64, batch_size: int = 16, seed: int = 0, sampling=None,
             window: int | None = None, prs_stage: float | None = None,
             system_prompt_hook=None, task_ids: Sequence[str] | None = None,
             per_episode: bool = False, keep_episodes: list | None = None) -> dict[str, Any]:
    """Play ``num_episodes`` episodes with ``policy`` and summarize them.

    Episode k is the task ``reset(seed=seed + k)`` picks, so results are comparable across models.
    ``task_ids``: play these tasks of ``split`` instead, episode k the k-th (``num_episodes`` is
    then their count), still reset with seed ``seed + k``. ``system_prompt_hook`` rewrites each
    episode's system prompt, as a trainer's extensions do in training (GCD's "Common mistakes"
    list). ``per_episode``: also return each episode's ``task_id``, ``success`` and ``return``, in
    order. ``keep_episodes``: a list the played :class:`~agentgym.train.rollout.episodes.Episode`
    objects are appended to, in order (a trainer's saved evaluation episodes).
    """
    if task_ids is not None:
        num_episodes = len(task_ids)
    if num_episodes < 1 or batch_size < 1:
        raise ValueError("num_episodes and batch_size must be >= 1")
    batch_size = min(batch_size, num_episodes)
    envs = make_env_batch(env_id, batch_size, 1, "sync", env_kwargs)
    if prs_stage is not None:
        envs.set_prs_stage(prs_stage)
    cfg = RolloutConfig(layout="window", window=window, max_prompt_tokens=10**9)
    options = {"split": split} if split else {}
    episodes = []
    try:
        for start in range(0, num_episodes, batch_size):
            ks = range(start, start + batch_size)
            requests = ([seed + k for k in ks] if task_ids is None else
                        [GroupRequest(seed + k, {"task_id": task_ids[k]}) for k in ks if k < num_episodes])
            got, _ = collect_episodes(envs, policy, None, requests, cfg, sampling, options, system_prompt_hook)
            episodes += got[: num_episodes - start]
    finally:
        envs.close()
    if keep_episodes is not None:
        keep_episodes.extend(episodes)
    terms = sorted({k for ep in episodes for k in ep.episode_terms})
    metric_names = sorted({k for ep in episodes for k in ep.metrics})
    out = {
        "env_id": env_id, "split": split, "num_episodes": len(episodes),
        "success_rate": float(np.mean([ep.success for ep in episodes])),
        "prs_return": float(np.mean([ep.ret for ep in episodes])),
        "terms": {t: float(np.mean([ep.episode_terms.get(t, 0.0) for ep in episodes])) for t in terms},
        "metrics": {m: float(np.mean([ep.metrics.get(m, 0.0) for ep in episodes])) for m in metric_names},
        "turns": float(np.mean([len(ep.turns) for ep in episodes])),
    }
    if per_episode:
        out["episodes"] = [{"task_id": ep.task_id, "success": float(ep.success), "return": float(ep.ret)}
                           for ep in episodes]
    return out


def whole_split(env_id: str, env_kwargs: dict, split: str, num_episodes: int) -> list[str] | None:
    """The tasks ``num_episodes`` evaluation episodes play when the env lists no more than that many
    tasks in ``split`` (a pool of training games, ALFWorld's ``L0`` with ``l0_every``): every task
    in turn, each as often as the others (one more for the first ``num_episodes mod n``), so the
    evaluation measures the whole split rather than a draw of it. None for a larger split, or an
    env that cannot list its tasks: episode k plays the task ``reset(seed=eval_seed + k)`` picks."""
    key = (env_id, json.dumps(env_kwargs, sort_keys=True, default=str), split)
    if key not in _SPLIT_TASKS:
        env = gym.make(env_id, **env_kwargs)
        try:
            lister = getattr(env.unwrapped, "task_ids", None)
            _SPLIT_TASKS[key] = lister(split) if lister is not None else None
        finally:
            env.close()
    tasks = _SPLIT_TASKS[key]
    if not tasks or len(tasks) > num_episodes:
        return None
    return [tasks[k % len(tasks)] for k in range(num_episodes)]


_SPLIT_TASKS: dict[tuple, list[str] | None] = {}
"""Each (env, kwargs, split)'s task list, looked up once per process."""


class _HelpFormatter(argparse.RawDescriptionHelpFormatter, argparse.ArgumentDefaultsHelpFormatter):
    """The module docstring as written, and every option's default."""



def trained_extensions(model_dir: str):
    """The extensions a checkpoint was trained with, with its recorded state (none for a directory
    that is not a trainer checkpoint): their ``system_prompt`` is the prompt training used (GCD's
    "Common mistakes" list)."""
    record = trainer_record(model_dir)
    return Extensions() if record is None else recorded_extensions(record.config, record.state.extension)



def trained_env_kwargs(model_dir: str, env_id: str, preset: str = "auto") -> dict[str, Any]:
    """The env kwargs a model is evaluated with on ``env_id`` when ``--env-kwargs`` is not given:
    with ``preset="auto"`` those the checkpoint was trained with (reward mode aside: the
    observation and action options among them), else the ``tiny`` preset for the built-in tiny
    models, else the env's own defaults (:mod:`agentgym.train.config.presets`)."""
    return resolve_env_kwargs(env_id, model_dir, preset)[1]


# Where `agentgym eval` parses a setting the trainers declare, with another default: each says why
# in --help (and docs/trainers.md, "Evaluating a checkpoint").
EVAL_DEFAULTS = {"max_new_tokens": 256, "temperature": 0.0, "window": None}
EVAL_NOTES = {
    "max_new_tokens": "agentgym eval: 256, room for a real model's turn (the trainers: 48, for the tiny models)",
    "temperature": "agentgym eval: 0, greedy, the policy's most likely action (the trainers' held-out evaluation "
                   "samples at their --temperature, 1.0)",
    "window": "agentgym eval always plays the window layout (chat messages): None, every past turn (the trainers: 2)",
}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="agentgym eval", description=__doc__, formatter_class=_HelpFormatter)
    parser.add_argument("--model", required=True,
                        help="checkpoint directory, `tiny`, or the served model name with --base-url")
    parser.add_argument("--base-url", default=None, help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1")
    parser.add_argument("--api-key", default=None, help="bearer token for --base-url")
    add_arguments(parser, EnvConfig(), ("env_id", "preset", "env_kwargs"))
    parser.add_argument("--split", default="test",
                        help="env split to evaluate on (empty string: the env's default; the trainers' held-out "
                             "evaluation: --eval-split valid)")
    parser.add_argument("--num-episodes", type=int, default=64,
                        help="episodes to play (the trainers' held-out evaluation: --eval-episodes 256)")
    parser.add_argument("--batch-size", type=int, default=16, help="episodes played at once")
    parser.add_argument("--seed", type=int, default=0,
                        help="task seed of the first episode, and of a local model's sampling (the trainers' held-out "
                             "evaluation: --eval-seed 10000)")
    add_arguments(parser, SamplingConfig(), defaults=EVAL_DEFAULTS, notes=EVAL_NOTES)
    add_arguments(parser, LayoutConfig(), ("window",), defaults=EVAL_DEFAULTS, notes=EVAL_NOTES)
    parser.add_argument("--prs-stage", type=float, default=None, help="PRS stage; None: the final stage")
    add_arguments(parser, ModelConfig(), ("device",))
    parser.add_argument("--output", default=None, help="also write the results to this JSON file")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        sampling = SamplingConfig(**{f.name: getattr(args, f.name) for f in dataclasses.fields(SamplingConfig)})
        LayoutConfig(layout="window", window=args.window)
    except SettingError as e:
        parser.exit(2, f"agentgym eval: error: --{e.name.replace('_', '-')} {e.problem}\n")
    problem = _argument_problem(args)
    if problem:
        parser.exit(2, f"agentgym eval: error: {problem}\n")


    # Everything that can be wrong with the command is found before a model is loaded, each a
    # ValueError (ConfigError, TrainerStateError, DataSettingError) told in one line.
    try:
        check_preset(args.preset)
        overrides = parse_env_kwargs(args.env_kwargs) if args.env_kwargs is not None else {}
        if not args.base_url:  # a local directory or a tiny model, as the trainers take: nothing is downloaded
            ModelConfig(model=args.model, device=args.device).validate()
            trainer_record(args.model)  # the checkpoint's own record, before any weights are read
        # a served model's name is no directory: `auto` gives it the env's own defaults
        preset, env_kwargs = resolve_env_kwargs(args.env_id, None if args.base_url else args.model, args.preset,
                                                overrides)
        # the env made once with these settings, and the split looked up
        check_env(args.env_id, env_kwargs, {"--split": args.split} if args.split else {})
    except ValueError as e:
        parser.exit(2, f"agentgym eval: error: {e}\n")

    if args.base_url:
        policy = OpenAIPolicy(args.base_url, args.model, api_key=args.api_key, sampling=sampling)
    else:
        import torch


        try:
            device = resolve_device(args.device)
        except ValueError as e:
            parser.exit(2, f"agentgym eval: error: --device: {e}\n")
        # a tiny model is the one a trainer starts from with these env settings (its tokenizer's corpus
        # is played with their observation options)
        path = resolve_model_path(args.model, (args.env_id,), env_kwargs)
        if device == "cpu":
            torch.set_num_threads(1)
        policy = HFPolicy(load_model(path, device, trainable=False), load_tokenizer(path), sampling)
        torch.manual_seed(args.seed)  # a sampled evaluation (--temperature > 0) repeats itself
    print(f"env: {describe(args.env_id, preset, env_kwargs, args.preset)}")
    hook = None
    extensions = trained_extensions(args.model) if not args.base_url else None
    note = extensions.system_prompt_note() if extensions is not None else None
    if note:  # the prompt the checkpoint was trained with
        print(f"system prompt: the checkpoint's {note}")
        hook = extensions.system_prompt
    tasks = whole_split(args.env_id, env_kwargs, args.split, args.num_episodes) if args.split else None
    if tasks is not None:
        print(f"{args.env_id} [{args.split}]: {len(set(tasks))} tasks, each played in turn "
              f"({args.num_episodes} episodes)")
    try:
        result = evaluate(policy, args.env_id, env_kwargs, args.split or None, args.num_episodes, args.batch_size,
                          args.seed, sampling, args.window, args.prs_stage, system_prompt_hook=hook, task_ids=tasks,
                          per_episode=True)
    except DataRefused as e:  # e.g. a game file that asks for code to run, found as it loads
        parser.exit(2, f"agentgym eval: error: {e}\n")
    print(f"{args.env_id} [{result['split']}] {result['num_episodes']} episodes: "
          f"success {result['success_rate']:.3f}  PRS return {result['prs_return']:.3f}")
    print("terms: " + "  ".join(f"{k} {v:.3f}" for k, v in result["terms"].items()))
    if args.output:
        # the model evaluated: a served model's name, or the directory read (a tiny model's build)
        result = {"model": args.model if args.base_url else os.path.abspath(path), **result}
        try:
            os.makedirs(os.path.dirname(args.output) or ".", exist_ok=True)
            with open(args.output, "w") as f:
                json.dump(result, f, indent=1)
        except OSError as e:
            if not disk_full(e):
                raise
            parser.exit(1, f"agentgym eval: error: {disk_full_message('--output', args.output)} (the results are "
                           f"printed above)\n")
    return 0


def _argument_problem(args: argparse.Namespace) -> str | None:
    """What is wrong with ``agentgym eval``'s own flags (one line naming the flag), else None."""
    for flag, value, least in (("--num-episodes", args.num_episodes, 1), ("--batch-size", args.batch_size, 1),
                               ("--seed", args.seed, 0)):
        if value < least:
            return f"{flag} must be an integer >= {least}, got {value}"
    if args.prs_stage is not None and not (math.isfinite(args.prs_stage) and args.prs_stage >= 0):
        return f"--prs-stage must be a finite number >= 0 (or left out: the final stage), got {args.prs_stage}"
    try:
        args.env_id = registered_env_id(args.env_id)  # a user's env as module:EnvId; the closest id if unknown
    except ValueError as e:
        return f"--env-id: {e}"
    if args.base_url is not None:
        url = urllib.parse.urlparse(args.base_url)
        if url.scheme not in ("http", "https") or not url.netloc:
            return f"--base-url {args.base_url!r} is not an http(s) URL; give one like http://127.0.0.1:8000/v1"
    if args.output:
        try:  # before minutes of evaluation, not after
            check_output_file(args.output, "--output")
        except OutputPathError as e:
            return str(e)
    return None


if __name__ == "__main__":
    sys.exit(main())
