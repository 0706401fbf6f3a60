"""How often a policy picks the expert's action on the expert's own path, per kind of action.

A cold start imitates the expert on the states the expert visits. This script measures how well it
learnt that: it plays the expert (``expert=True``) on ``--episodes`` tasks of ``--split`` and, at
every state, asks the policy for its greedy reply and compares it with the expert's, grouped by the
command's first word (``go``, ``take``, ``heat``, ...). Beside ``agentgym eval`` (the policy's
success in its own episodes) it separates two failures: a policy that cannot imitate (low agreement
here) from one that imitates well on the expert's path but breaks once it leaves it (high agreement
here, low success there: DAgger's distribution shift).

    python benchmarks/expert_agreement.py --model runs/sft/final --env-id ALFWorld-v0 --split L1 --episodes 40

The env kwargs are the ones the checkpoint recorded (``--env-kwargs`` merges over them). A reply
agrees when it equals the expert's reply as a policy would write it (the number of the action in
``action_format="choice"``); ``valid`` counts replies that name an admissible action.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict

import gymnasium as gym

import agentgym  # noqa: F401  registers the envs
from agentgym.agents import HFPolicy, SamplingConfig
from agentgym.envs.arguments import json_object
from agentgym.experts import expert_reply
from agentgym.prompts import episode_to_messages, observations_carry_history
from agentgym.train.base.models import load_model, load_tokenizer
from agentgym.train.config.presets import merge_env_kwargs
from agentgym.train.evaluate import trained_env_kwargs


def names_admissible(reply: str, admissible: list[str], choice: bool) -> bool:
    """Whether ``reply`` names one of ``admissible``: its number in choice format, or its text."""
    text = reply.strip()
    if choice and text.isdigit():
        return 1 <= int(text) <= len(admissible)
    return text.lower().rstrip(".") in {a.lower() for a in admissible}


def agreement(policy: HFPolicy, env_id: str, env_kwargs: dict, split: str, episodes: int, window: int = 2) -> dict:
    """Per action kind: how many expert states, and the share where the greedy reply agrees with
    the expert's and where it names an admissible action."""
    counts: dict[str, dict[str, int]] = defaultdict(lambda: {"states": 0, "agree": 0, "valid": 0})
    env = gym.make(env_id, expert=True, **env_kwargs)
    try:
        for seed in range(episodes):
            obs, info = env.reset(seed=seed, options={"split": split})
            system, choice = info["system_prompt"], info.get("action_format") == "choice"
            history = observations_carry_history(info)
            observations, actions = [obs], []
            while True:
                label = expert_reply({**info, "action_format": "choice" if choice else "text"})
                messages = episode_to_messages(system, observations, actions, window=window,
                                               history_in_observation=history)
                reply = policy.generate([messages])[0].text
                kind = (info["expert_action"] or "none").split()[0]
                counts[kind]["states"] += 1
                counts[kind]["agree"] += reply.strip() == label
                counts[kind]["valid"] += names_admissible(reply, info.get("admissible_actions") or [], choice)
                obs, _, terminated, truncated, info = env.step(label)
                observations.append(obs)
                actions.append(label)
                if terminated or truncated:
                    break
    finally:
        env.close()
    total = {k: sum(c[k] for c in counts.values()) for k in ("states", "agree", "valid")}
    rows = {kind: {"states": c["states"], "agree": c["agree"] / c["states"], "valid": c["valid"] / c["states"]}
            for kind, c in sorted(counts.items())}
    rows["all"] = {"states": total["states"], "agree": total["agree"] / max(total["states"], 1),
                   "valid": total["valid"] / max(total["states"], 1)}
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True, help="checkpoint or cold-start directory")
    parser.add_argument("--env-id", default="ALFWorld-v0")
    parser.add_argument("--env-kwargs", default=None, help="JSON object merged over the checkpoint's recorded kwargs")
    parser.add_argument("--split", default="L1")
    parser.add_argument("--episodes", type=int, default=40)
    parser.add_argument("--max-new-tokens", type=int, default=8)
    parser.add_argument("--output", default=None, help="also write the table to this JSON file")
    args = parser.parse_args(argv)
    try:
        overrides = json_object(args.env_kwargs, "--env-kwargs") if args.env_kwargs else {}
    except ValueError as e:
        parser.exit(2, f"expert_agreement: error: {e}\n")
    env_kwargs = merge_env_kwargs(trained_env_kwargs(args.model, args.env_id), overrides)
    import torch

    torch.set_num_threads(1)
    policy = HFPolicy(load_model(args.model, "cpu", trainable=False), load_tokenizer(args.model),
                      SamplingConfig(max_new_tokens=args.max_new_tokens, temperature=0.0))
    rows = agreement(policy, args.env_id, env_kwargs, args.split, args.episodes)
    print(f"{args.env_id} [{args.split}] {args.episodes} expert episodes, greedy replies on the expert's states")
    print(f"{'action':<10}{'states':>8}{'agree':>8}{'valid':>8}")
    for kind, row in rows.items():
        print(f"{kind:<10}{row['states']:>8}{row['agree']:>8.2f}{row['valid']:>8.2f}")
    if args.output:
        with open(args.output, "w") as f:
            json.dump({"model": args.model, "env_id": args.env_id, "split": args.split, "env_kwargs": env_kwargs,
                       "episodes": args.episodes, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
