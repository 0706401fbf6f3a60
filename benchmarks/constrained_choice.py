"""Constrained choice on ALFWorld tiny rooms: a cold-started tiny model played with and without
``constrained_choice=True`` (the policy samples only the numbers of the listed actions), on the same
games with the same seeds.

    python benchmarks/constrained_choice.py                         # a short cold start first, then 2 rounds
    python benchmarks/constrained_choice.py --model runs/alf-tiny0/sft/final --episodes 64

The cold start (unless ``--model`` names one) is the small-room recipe of docs/benchmarks.md,
shortened (``--sft-episodes``, ``--sft-steps``). Each round plays ``--episodes`` held-out games
(``--split``) once without the constraint and once with it, the order alternating between rounds, so
a noisy shared machine weighs on both alike; every episode has the reset seed of its index, so both
play the same games. Reported per mode: the valid-action rate (turns whose reply named an admissible
action), success, turns per episode and seconds per turn (rollout wall time over turns played),
and the ratios constrained / free of each round. Each mode's games are reset once before it plays
them (a new game's first reset reads it), and seconds per turn leave the resets out. Prints a table; ``--output`` writes JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ENV_KWARGS = {"observation": "history+admissible", "history": 0, "action_format": "choice", "mark_played": True,
              "data_path": "generated:16000:tiny", "expert_policy": "search", "max_turns": 15,
              "system_prompt": "Solve the household task. Reply with the number of one admissible action."}
"""The tiny-room recipe's env (docs/benchmarks.md, "Current result")."""


def cold_start(out: str, episodes: int, steps: int, seed: int) -> str:
    """A short cold start of the recipe; returns the model directory."""
    cmd = [sys.executable, os.path.join(os.path.dirname(__file__), "..", "trainers", "sft.py"),
           "--env-id", "ALFWorld-v0", "--model", "tiny-small", "--preset", "none", "--layout", "window",
           "--env-kwargs", json.dumps(ENV_KWARGS), "--num-episodes", str(episodes), "--num-steps", str(steps),
           "--batch-size", "16", "--explore", "0.2", "--prompt-loss-weight", "1.0", "--cpu-threads", "1",
           "--seed", str(seed), "--quiet", "--no-progress", "--no-tensorboard", "--output-dir", out]
    subprocess.run(cmd, check=True)
    return os.path.join(out, "final")


def play(policy, tokenizer, constrained: bool, episodes: int, split: str, temperature: float,
         max_new_tokens: int, seed: int) -> dict:
    """One mode's episodes: valid-action rate, success, turns and seconds per turn."""
    import torch

    from agentgym.agents import SamplingConfig
    from agentgym.train.config.rollout import RolloutConfig
    from agentgym.train.rollout.chat import ChatEncoder
    from agentgym.train.rollout.envs import make_env_batch
    from agentgym.train.rollout.episodes import collect_episodes

    kwargs = {**ENV_KWARGS, **({"constrained_choice": True} if constrained else {})}
    envs = make_env_batch("ALFWorld-v0", episodes, 1, "sync", kwargs)
    torch.manual_seed(seed)
    try:
        envs.reset_groups([seed + k for k in range(episodes)], {"split": split})  # warm: each game read once
        played, stats = collect_episodes(envs, policy, ChatEncoder(tokenizer), [seed + k for k in range(episodes)],
                                         RolloutConfig(layout="window", window=1, max_prompt_tokens=10**9),
                                         SamplingConfig(max_new_tokens=max_new_tokens, temperature=temperature),
                                         {"split": split})
    finally:
        envs.close()
    infos = [info for ep in played for info in ep.step_infos]
    turns = len(infos)
    seconds = stats["time/generate"] + stats["time/env"]  # the turns: generation and env steps, resets apart
    return {"valid_action_rate": sum(bool(i.get("action_valid")) for i in infos) / turns,
            "success": statistics.fmean(float(ep.success) for ep in played),
            "turns_per_episode": turns / len(played), "seconds_per_turn": seconds / turns,
            "generate_seconds_per_turn": stats["time/generate"] / turns, "turns": turns}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default=None, help="a cold-started model directory (default: run a short cold start)")
    ap.add_argument("--sft-episodes", type=int, default=256)
    ap.add_argument("--sft-steps", type=int, default=300)
    ap.add_argument("--episodes", type=int, default=32, help="games per mode per round")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--split", default="L1")
    ap.add_argument("--temperature", type=float, default=1.0)
    ap.add_argument("--max-new-tokens", type=int, default=8)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--output", default=None)
    args = ap.parse_args(argv)

    import torch

    from agentgym.agents import HFPolicy, load_model_and_tokenizer

    torch.set_num_threads(1)
    model_dir = args.model or cold_start(tempfile.mkdtemp(prefix="constrained_choice_"), args.sft_episodes,
                                         args.sft_steps, args.seed)
    model, tokenizer = load_model_and_tokenizer(model_dir)
    policy = HFPolicy(model, tokenizer)
    rounds = []
    for r in range(args.rounds):
        order = (False, True) if r % 2 == 0 else (True, False)
        got = {mode: play(policy, tokenizer, mode, args.episodes, args.split, args.temperature,
                          args.max_new_tokens, args.seed + 1000 * r) for mode in order}
        rounds.append({"free": got[False], "constrained": got[True],
                       "seconds_per_turn_ratio": got[True]["seconds_per_turn"] / got[False]["seconds_per_turn"]})
    keys = ("valid_action_rate", "success", "turns_per_episode", "seconds_per_turn", "generate_seconds_per_turn")
    summary = {mode: {k: statistics.fmean(rd[mode][k] for rd in rounds) for k in keys}
               for mode in ("free", "constrained")}
    summary["seconds_per_turn_ratio"] = [rd["seconds_per_turn_ratio"] for rd in rounds]
    print(f"model {model_dir}, {args.rounds} rounds x {args.episodes} {args.split} games per mode, "
          f"T={args.temperature}")
    print(f"{'mode':<12}" + "".join(f"{k:>28}" for k in keys))
    for mode in ("free", "constrained"):
        print(f"{mode:<12}" + "".join(f"{summary[mode][k]:>28.4f}" for k in keys))
    print("seconds per turn, constrained / free, per round:",
          ", ".join(f"{x:.3f}" for x in summary["seconds_per_turn_ratio"]))
    if args.output:
        with open(args.output, "w") as f:
            json.dump({"model": model_dir, "args": vars(args), "rounds": rounds, "summary": summary}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
