"""Trainer throughput: rollout tokens/s and optimizer step time, on CPU (tiny model) and GPU.

    python benchmarks/trainer_throughput.py                       # tiny model on CPU (+ TRL if installed)
    python benchmarks/trainer_throughput.py --device cuda         # + a >=100M-param model in bf16, with MFU

Parts:
- ``rollout``: one GRPO batch of multi-turn ToolQA episodes (``--groups`` x ``--group-size``) with
  ``HFPolicy``; generated tokens per second.
- ``update``: one GRPO optimizer step on that batch (forward, PPO-clip loss, backward, AdamW).
- ``gpu`` (CUDA only): the same two on a Qwen2-architecture model built from a config (~113M
  params by default), bf16 autocast and gradient checkpointing; MFU = model FLOPs / time / peak.
- ``methods``: ``--method-steps`` steps of GRPO and of VSPO through the public ``train()`` on the
  same settings, from the same short cold start: step time, and VSPO's extra rollout per step
  (groups, generated tokens, seconds) beside GRPO's whole step.
- ``trl``: where TRL is installed, one single-turn GRPO step (same model, prompts, reward, group
  size, completion length) with our core and with ``trl.GRPOTrainer``; reports our step time over
  theirs.
- ``gcd`` (``--gcd-steps N``): N steps of GRPO and N of GCD through the public ``train()``, same
  model (the tiny one after a short SFT cold start, so some episodes succeed and the judge gets
  good steps too), settings, seed and tasks; reports GCD's mean step time over GRPO's (steps after
  the first) and where GCD's extra time goes (judge generation, the judge's share of the update).
- ``overlap`` (``--overlap-rounds N``, ``--only-overlap``): rollout wall time of ``--rollout-mode``
  lockstep and overlapped on ALFWorld-v0 and ScienceWorld-v0 with the process backend, the tiny
  model and ``--overlap-envs`` envs. Greedy decoding, so both modes play the same episodes (checked)
  and do the same env work; each round's tasks are played once untimed first (a worker's first
  episode of a task is slower), and the modes alternate which goes first, so a load change on the
  machine hits both. Reports overlapped/lockstep per env (target <= 0.8), also without the resets
  (the same in both modes), and the ratio lockstep would get if all its env wait were hidden.
Results print as a table and go to ``--output`` as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

PEAK_BF16_TFLOPS = {"H200": 989.0, "H100": 989.0, "A100": 312.0, "L40S": 362.0, "A10G": 125.0, "L4": 121.0}
ENV_KWARGS = {"question_kinds": ["single_hop"], "max_turns": 3}


def _grpo_batch(model, tokenizer, groups, group_size, max_new_tokens, layout="concat", env_kwargs=None, seed=0,
                env_id="ToolQA-v0"):
    from agentgym.agents import HFPolicy, SamplingConfig
    from agentgym.train.config.rollout import RolloutConfig
    from agentgym.train.methods.grpo import group_advantages
    from agentgym.train.rollout.chat import ChatEncoder
    from agentgym.train.rollout.envs import make_env_batch
    from agentgym.train.rollout.episodes import collect_episodes
    from agentgym.train.rollout.samples import episode_samples
    from agentgym.train.rollout.tasks import task_seed

    sampling = SamplingConfig(max_new_tokens=max_new_tokens)
    envs = make_env_batch(env_id, groups, group_size, "sync", ENV_KWARGS if env_kwargs is None else env_kwargs)
    policy = HFPolicy(model, tokenizer, sampling)
    t0 = time.perf_counter()
    try:
        episodes, timing = collect_episodes(envs, policy, ChatEncoder(tokenizer),
                                            [task_seed(seed, g) for g in range(groups)], RolloutConfig(layout=layout),
                                            sampling)
        rollout_s = time.perf_counter() - t0
    finally:
        envs.close()
    adv = group_advantages([e.ret for e in episodes], [e.group for e in episodes])
    samples = episode_samples(episodes, adv, layout)
    gen = sum(e.num_generated_tokens for e in episodes)
    return samples, {"rollout_s": rollout_s, "generate_s": timing["time/generate"], "generated_tokens": gen,
                     "rollout_tokens_per_s": gen / timing["time/generate"], "episodes": len(episodes)}


def _update(model, tokenizer, samples, micro_batch_size, bf16=False, repeats=2):
    import torch

    from agentgym.train.config.optim import LossConfig
    from agentgym.train.optim.update import train_step

    opt = torch.optim.AdamW(model.parameters(), lr=1e-5)
    times = []
    for _ in range(repeats):  # the first step also allocates optimizer state
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        t = time.perf_counter()
        train_step(model, opt, samples, LossConfig(beta=0.0), tokenizer.pad_token_id, micro_batch_size, bf16=bf16)
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        times.append(time.perf_counter() - t)
    tokens = sum(len(s.input_ids) for s in samples)
    return {"update_step_s": min(times), "update_first_step_s": times[0], "trained_tokens": tokens,
            "train_tokens_per_s": tokens / min(times)}


def bench_cpu(args):
    import torch

    from agentgym.agents.tiny import build_tiny_model
    from agentgym.train.base.models import load_model, load_tokenizer

    torch.set_num_threads(args.cpu_threads)
    path = str(build_tiny_model(("ToolQA-v0",), args.tiny_size))
    model, tok = load_model(path, "cpu"), load_tokenizer(path)
    torch.manual_seed(0)
    samples, roll = _grpo_batch(model, tok, args.groups, args.group_size, args.max_new_tokens)
    upd = _update(model, tok, samples, args.micro_batch_size)
    return {"model": path, "params": sum(p.numel() for p in model.parameters()), **roll, **upd}


def gpu_model(tokenizer, hidden=768, layers=12, heads=12, intermediate=3072):
    import torch
    from transformers import AutoModelForCausalLM, Qwen2Config

    cfg = Qwen2Config(vocab_size=len(tokenizer), hidden_size=hidden, num_hidden_layers=layers,
                      num_attention_heads=heads, num_key_value_heads=heads // 3 or 1, intermediate_size=intermediate,
                      max_position_embeddings=8192, tie_word_embeddings=True, eos_token_id=tokenizer.eos_token_id,
                      pad_token_id=tokenizer.pad_token_id)
    torch.manual_seed(0)
    return AutoModelForCausalLM.from_config(cfg, dtype=torch.float32)


def update_flops_per_token(n_params: int, cfg, mean_len: float) -> float:
    """6N per trained token (forward + backward), + attention; checkpointing recomputes the forward (not counted)."""
    return 6 * n_params + 12 * cfg.num_hidden_layers * cfg.hidden_size * mean_len


def peak_bf16_tflops(device_name: str, override: float | None = None) -> float | None:
    return override or next((v for k, v in PEAK_BF16_TFLOPS.items() if k in device_name), None)


def bench_gpu(args):
    """The GPU part. ``args.gpu_device`` (default cuda) and ``args.gpu_model`` (gpu_model's sizes,
    default its own) let benchmarks/gpu_check.py run the same part at tiny size on a CPU."""
    import platform

    import torch

    from agentgym.agents.tiny import build_tiny_model
    from agentgym.train.base.models import load_tokenizer

    device = getattr(args, "gpu_device", "cuda")
    on_gpu = device.startswith("cuda")
    tok = load_tokenizer(str(build_tiny_model(("ToolQA-v0",))))
    model = gpu_model(tok, **(getattr(args, "gpu_model", None) or {})).to(device)
    n_params = sum(p.numel() for p in model.parameters())
    model.gradient_checkpointing_enable()
    torch.manual_seed(0)
    with torch.autocast(torch.device(device).type, dtype=torch.bfloat16, enabled=on_gpu):
        samples, roll = _grpo_batch(model, tok, args.gpu_groups, args.group_size, args.max_new_tokens)
    upd = _update(model, tok, samples, args.gpu_micro_batch_size, bf16=on_gpu, repeats=3)
    name = torch.cuda.get_device_name(device) if on_gpu else platform.processor() or "cpu"
    peak = peak_bf16_tflops(name, args.peak_tflops) if on_gpu or args.peak_tflops else None
    mean_len = upd["trained_tokens"] / len(samples)
    achieved = update_flops_per_token(n_params, model.config, mean_len) * upd["trained_tokens"] / upd["update_step_s"]
    return {"device": name, "params": n_params, **roll, **upd, "update_tflops": achieved / 1e12,
            "update_mfu": achieved / (peak * 1e12) if peak else None, "peak_bf16_tflops": peak}


def bench_methods(args):
    """GRPO and VSPO steps through ``train()``: the step time and what VSPO's resampling adds."""
    import numpy as np

    from agentgym.train.base.flags import build
    from agentgym.train.coldstart.sft import run_sft
    from agentgym.train.config.tree import SFTRunConfig, TrainConfig
    from agentgym.train.loop import train
    from agentgym.train.methods import VSPO, VSPOConfig

    env_kwargs = json.dumps(ENV_KWARGS)
    cold = run_sft(build(SFTRunConfig, preset="none", env_kwargs=env_kwargs, num_steps=100, num_episodes=64, quiet=True,
                         progress=False, tensorboard=False, output_dir=os.path.join(args.workdir, "cold")))
    common = dict(model=cold, preset="none", env_kwargs=env_kwargs, num_steps=args.method_steps, num_groups=args.groups,
                  group_size=args.group_size, max_new_tokens=args.max_new_tokens, eval_episodes=0, save_every=0,
                  progress=False, quiet=True, tensorboard=False, cpu_threads=args.cpu_threads)
    out = {}
    for name, ext in (("grpo", []), ("vspo", [VSPO(VSPOConfig())])):
        history = train(build(TrainConfig, output_dir=os.path.join(args.workdir, name), **common), ext, name).history
        out[f"{name}_step_s"] = float(np.mean([h["time/step"] for h in history]))
        out[f"{name}_rollout_s"] = float(np.mean([h["time/rollout"] for h in history]))
        if name == "vspo":
            out["vspo_extra_groups_per_step"] = float(np.mean([h["vspo/extra_groups"] for h in history]))
            out["vspo_extra_rollout_s_per_step"] = float(np.mean([h.get("time/rollout_extra", 0.0) for h in history]))
            out["vspo_extra_tokens_per_step"] = float(np.mean([h.get("tokens/generated_resample", 0.0)
                                                               for h in history]))
            out["vspo_groups_replaced_per_step"] = float(np.mean([h["vspo/groups_replaced"] for h in history]))
    out["vspo_over_grpo_step"] = out["vspo_step_s"] / out["grpo_step_s"]
    out["vspo_extra_rollout_over_grpo_step"] = out["vspo_extra_rollout_s_per_step"] / out["grpo_step_s"]
    return out


def bench_trl(args):
    """One single-turn GRPO step: our core vs trl.GRPOTrainer, same model, prompts, reward and sizes."""
    import gymnasium as gym
    import torch

    import agentgym  # noqa: F401
    from agentgym.agents.tiny import build_tiny_model
    from agentgym.envs.parsing import parse_tool_action
    from agentgym.prompts import episode_to_messages
    from agentgym.train.base.models import load_model, load_tokenizer

    try:
        import trl
        from datasets import Dataset
    except ImportError:
        return {"skipped": "trl not installed"}
    torch.set_num_threads(args.cpu_threads)
    path = str(build_tiny_model(("ToolQA-v0",), args.tiny_size))
    tok = load_tokenizer(path)
    env = gym.make("ToolQA-v0", **ENV_KWARGS)
    prompts = []
    for s in range(args.groups):
        obs, info = env.reset(seed=s)
        prompts.append(episode_to_messages(info["system_prompt"], [obs], []))
    tools = env.unwrapped.tools

    def format_reward(completions, **kw):
        return [float(parse_tool_action(c[0]["content"] if isinstance(c, list) else c, tools).ok) for c in completions]

    G, L = args.group_size, args.max_new_tokens
    # ours: max_turns=1 makes every episode one completion, exactly TRL's single-turn setting
    model = load_model(path, "cpu")
    torch.manual_seed(0)
    t = time.perf_counter()
    samples, roll = _grpo_batch(model, tok, args.groups, G, L, env_kwargs={**ENV_KWARGS, "max_turns": 1})
    upd = _update(model, tok, samples, args.micro_batch_size, repeats=1)
    ours = time.perf_counter() - t

    model = load_model(path, "cpu")
    cfg = trl.GRPOConfig(output_dir=os.path.join(args.workdir, "trl"), per_device_train_batch_size=args.groups * G,
                         num_generations=G, max_completion_length=L, max_steps=args.trl_steps, learning_rate=1e-5,
                         beta=0.0, logging_steps=1, report_to="none", save_strategy="no", use_cpu=True, bf16=False,
                         temperature=1.0, gradient_accumulation_steps=1, disable_tqdm=True, seed=0)
    data = Dataset.from_list([{"prompt": p} for p in prompts] * (args.trl_steps + 1))
    trainer = trl.GRPOTrainer(model=model, reward_funcs=format_reward, args=cfg, train_dataset=data,
                              processing_class=tok)
    step_times = []
    from transformers import TrainerCallback

    class Timer(TrainerCallback):
        def on_step_begin(self, *a, **k):
            self.t = time.perf_counter()

        def on_step_end(self, *a, **k):
            step_times.append(time.perf_counter() - self.t)

    trainer.add_callback(Timer())
    trainer.train()
    theirs = min(step_times)
    return {"trl_version": trl.__version__, "ours_step_s": ours, "ours_rollout_s": roll["rollout_s"],
            "ours_update_s": upd["update_step_s"], "trl_step_s": theirs, "trl_step_times": step_times,
            "ours_over_trl": ours / theirs, "groups": args.groups, "group_size": G, "max_new_tokens": L}


def bench_gcd(args):
    """GCD's step time over GRPO's, both through ``agentgym.train.loop.train`` on the same settings."""
    from dataclasses import dataclass, field

    import numpy as np

    from agentgym.train.base.flags import build
    from agentgym.train.coldstart.sft import reusable, run_sft
    from agentgym.train.config.tree import SFTRunConfig, TrainConfig
    from agentgym.train.loop import train
    from agentgym.train.methods import GCDConfig, gcd_extensions

    root = os.path.join(args.workdir, "gcd")
    env_kwargs = json.dumps(ENV_KWARGS)
    sft_cfg = build(SFTRunConfig, preset="none", env_kwargs=env_kwargs, num_steps=args.gcd_cold_start_steps,
                    num_episodes=32, output_dir=os.path.join(root, "sft"), cpu_threads=args.cpu_threads,
                    progress=False, quiet=True, tensorboard=False)
    model = os.path.join(sft_cfg.run.output_dir, "final")
    if not reusable(model, sft_cfg):
        model = run_sft(sft_cfg)
    common = dict(model=model, preset="none", env_kwargs=env_kwargs, num_steps=args.gcd_steps, num_groups=args.groups,
                  group_size=args.group_size, max_new_tokens=args.max_new_tokens, micro_batch_size=args.micro_batch_size,
                  cpu_threads=args.cpu_threads, device=args.device, cold_start={"num_steps": 0}, eval_episodes=0, save_every=0,
                  progress=False, quiet=True, tensorboard=False, seed=0)

    @dataclass
    class GCDRun(TrainConfig):
        gcd: GCDConfig = field(default_factory=GCDConfig)

    times = {}
    for name in ("grpo", "gcd"):
        if name == "gcd":
            cfg = build(GCDRun, output_dir=os.path.join(root, name), **common,
                        gcd={"k": args.gcd_k, "max_judged_steps": args.gcd_judged_steps, "balance": args.gcd_balance})
            times[name] = train(cfg, gcd_extensions(cfg), name=name).history
        else:
            times[name] = train(build(TrainConfig, output_dir=os.path.join(root, name), **common), name=name).history
    # medians: a shared machine's stray slow step should not decide the ratio
    step = {n: float(np.median([r["time/step"] for r in h[1:]])) for n, h in times.items()}
    g = times["gcd"][1:]
    return {"grpo_step_s": step["grpo"], "gcd_step_s": step["gcd"], "gcd_over_grpo": step["gcd"] / step["grpo"],
            "gcd_balance": args.gcd_balance, "gcd_judge_generate_s": float(np.mean([r["time/judge_generate"] for r in g])),
            "gcd_update_s": float(np.mean([r["time/update"] for r in g])),
            "grpo_update_s": float(np.mean([r["time/update"] for r in times["grpo"][1:]])),
            "gcd_judge_samples_per_step": float(np.mean([r["gcd/judge_samples"] for r in g])),
            "policy_samples_per_step": float(args.groups * args.group_size), "steps_timed": len(g),
            "groups": args.groups, "group_size": args.group_size, "gcd_k": args.gcd_k,
            "gcd_max_judged_steps": args.gcd_judged_steps}


def bench_overlap(args):
    """Rollout wall time of the lockstep and overlapped collectors on the same seeds, same envs."""
    import torch

    from agentgym.agents import HFPolicy, SamplingConfig
    from agentgym.agents.tiny import build_tiny_model
    from agentgym.train.base.models import load_model, load_tokenizer

    torch.set_num_threads(args.cpu_threads)
    path = str(build_tiny_model(("ToolQA-v0",), args.tiny_size))
    model, tok = load_model(path, "cpu"), load_tokenizer(path)
    policy = HFPolicy(model, tok, SamplingConfig(max_new_tokens=args.max_new_tokens, temperature=0.0))
    out = {"load_average_at_start": list(os.getloadavg()), "envs": args.overlap_envs,
           "rounds": args.overlap_rounds, "max_turns": args.overlap_max_turns, "batch_wait": args.overlap_batch_wait}
    for env_id in args.overlap_env_ids.split(","):
        out[env_id] = _overlap_on(env_id, policy, tok, args)
    out["load_average_at_end"] = list(os.getloadavg())
    return out


def _overlap_on(env_id, policy, tok, args):
    """The overlap part on one env: both modes, ``args.overlap_rounds`` rounds on the same envs."""
    import numpy as np

    from agentgym.train.config.rollout import RolloutConfig
    from agentgym.train.rollout.chat import ChatEncoder
    from agentgym.train.rollout.envs import make_env_batch
    from agentgym.train.rollout.episodes import collect_episodes
    from agentgym.train.rollout.tasks import task_seed
    from agentgym.vector import ProcessOptions

    modes = ("lockstep", "overlapped")
    # spawned workers, as the trainers' --backend process runs them
    envs = make_env_batch(env_id, args.overlap_envs // 2, 2, ProcessOptions(mp_context="spawn"),
                          {"max_turns": args.overlap_max_turns})
    reset_groups, reset_s = envs.reset_groups, []

    def timed_reset(*a, **k):  # the reset is the same in both modes: timed to be set apart
        t = time.perf_counter()
        starts = reset_groups(*a, **k)
        reset_s.append(time.perf_counter() - t)
        return starts

    envs.reset_groups = timed_reset

    def play(seeds, mode):
        cfg = RolloutConfig(layout="window", rollout_mode=mode, batch_wait=args.overlap_batch_wait)
        return collect_episodes(envs, policy, ChatEncoder(tok), seeds, cfg, reset_options={"split": "train"})

    rows = {m: [] for m in modes}  # per round: (rollout, reset, generate, env wait)
    same = True
    try:
        # untimed warm-up rounds, one per mode: a fresh worker starts its engine (a JVM) on its
        # first reset, and the engine's first episode runs slower than the next (JIT)
        for mode in modes:
            play([task_seed(99, g) for g in range(envs.num_groups)], mode)
        for r in range(args.overlap_rounds):
            seeds = [task_seed(r, g) for g in range(envs.num_groups)]
            # untimed: a worker's first episode of a task runs slower than the next (file and
            # engine caches, JIT), and only the first of the two modes would pay for it
            play(seeds, "lockstep")
            played = {}
            # alternate which mode goes first, so a load drift does not favour one of them
            for mode in (modes if r % 2 == 0 else modes[::-1]):
                episodes, timing = play(seeds, mode)
                rows[mode].append((timing["time/rollout"], reset_s[-1], timing["time/generate"], timing["time/env"]))
                played[mode] = [(e.actions, e.observations, e.rewards, [t.completion.token_ids for t in e.turns])
                                for e in episodes]
                turns = sum(len(e.turns) for e in episodes)
            same = same and played["lockstep"] == played["overlapped"]
    finally:
        envs.close()
    total = {m: np.array(rows[m]).sum(axis=0) for m in modes}
    res = {}
    for m in modes:
        res.update({f"{m}_s": float(total[m][0]), f"{m}_reset_s": float(total[m][1]),
                    f"{m}_generate_s": float(total[m][2]), f"{m}_env_wait_s": float(total[m][3])})
    play_s = {m: total[m][0] - total[m][1] for m in modes}
    ratios = [o[0] / k[0] for o, k in zip(rows["overlapped"], rows["lockstep"])]
    res.update({"overlapped_over_lockstep": float(total["overlapped"][0] / total["lockstep"][0]),
                "without_resets": float(play_s["overlapped"] / play_s["lockstep"]),
                "median_round_ratio": float(np.median(ratios)),
                # with every env wait hidden and nothing else changed, lockstep would take this much
                "bound_if_env_wait_hidden": float(1 - total["lockstep"][3] / total["lockstep"][0]),
                "turns_per_round": turns, "same_episodes": same,
                "lockstep_rounds_s": [row[0] for row in rows["lockstep"]],
                "overlapped_rounds_s": [row[0] for row in rows["overlapped"]]})
    return res


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device", default="cpu", help="cpu, or cuda to add the GPU part")
    p.add_argument("--groups", type=int, default=4)
    p.add_argument("--group-size", type=int, default=8)
    p.add_argument("--max-new-tokens", type=int, default=48)
    p.add_argument("--micro-batch-size", type=int, default=16)
    p.add_argument("--tiny-size", default="tiny", choices=["tiny", "small"])
    p.add_argument("--cpu-threads", type=int, default=1)
    p.add_argument("--gpu-groups", type=int, default=16)
    p.add_argument("--gpu-micro-batch-size", type=int, default=32)
    p.add_argument("--peak-tflops", type=float, default=None, help="bf16 peak of the GPU, for MFU")
    p.add_argument("--skip-trl", action="store_true")
    p.add_argument("--method-steps", type=int, default=5, help="GRPO and VSPO steps to time (0: skip that part)")
    p.add_argument("--trl-steps", type=int, default=3)
    p.add_argument("--workdir", default="/tmp/agentgym-bench")
    p.add_argument("--gcd-steps", type=int, default=0, help="steps of GRPO and of GCD to time (0: skip the part)")
    p.add_argument("--gcd-k", type=int, default=4, help="GCD judgments per judged step")
    p.add_argument("--gcd-judged-steps", type=int, default=8, help="GCD judged steps per step at most")
    p.add_argument("--gcd-balance", default="downsample", choices=["downsample", "none"],
                   help="GCD balance; `none` judges every step at its cap even when no episode succeeds")
    p.add_argument("--gcd-cold-start-steps", type=int, default=60, help="SFT steps of the model both runs start from")
    p.add_argument("--only-gcd", action="store_true", help="run only the gcd part")
    p.add_argument("--overlap-rounds", type=int, default=0,
                   help="rollouts per mode and env of the overlap part (0: skip the part)")
    p.add_argument("--overlap-envs", type=int, default=8, help="envs of the overlap part (groups of 2)")
    p.add_argument("--overlap-max-turns", type=int, default=10, help="turn limit of the overlap part's episodes")
    p.add_argument("--overlap-env-ids", default="ALFWorld-v0,ScienceWorld-v0")
    p.add_argument("--overlap-batch-wait", type=float, default=1.0,
                   help="RolloutConfig.batch_wait of the overlapped runs (0: generate for whatever is ready)")
    p.add_argument("--only-overlap", action="store_true", help="run only the overlap part")
    p.add_argument("--output", default=None)
    args = p.parse_args(argv)
    from agentgym.extras import require_for_script

    require_for_script(["torch", "transformers", "tokenizers"], "bench", "benchmarks/trainer_throughput.py")
    results = {}
    if args.only_overlap and args.overlap_rounds < 1:
        args.overlap_rounds = 2
    if not (args.only_gcd or args.only_overlap):
        results["cpu"] = bench_cpu(args)
        if args.device.startswith("cuda"):
            import torch

            results["gpu"] = bench_gpu(args) if torch.cuda.is_available() else {"skipped": "CUDA not available"}
        if args.method_steps > 0:
            results["methods"] = bench_methods(args)
        if not args.skip_trl:
            results["trl"] = bench_trl(args)
    if args.gcd_steps > 0 and not args.only_overlap:
        results["gcd"] = bench_gcd(args)
    if args.overlap_rounds > 0 and not args.only_gcd:
        results["overlap"] = bench_overlap(args)
    for part, res in results.items():
        print(f"[{part}]")
        for k, v in res.items():
            if isinstance(v, dict):
                print(f"  {k}")
                for k2, v2 in v.items():
                    print(f"    {k2:26s} {_show(v2)}")
            else:
                print(f"  {k:28s} {_show(v)}")
    if args.output:
        with open(args.output, "w") as f:
            json.dump(results, f, indent=1)
    return results


def _show(v) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    if isinstance(v, list) and all(isinstance(x, float) for x in v):
        return "[" + ", ".join(f"{x:.3g}" for x in v) + "]"
    return str(v)


if __name__ == "__main__":
    main()
    sys.exit(0)
