"""The ``agentgym`` console command.

    agentgym list                      registered env ids, one line each
    agentgym play ENV_ID [--seed N]    play an env yourself in the terminal
    agentgym demo [ENV_ID]             one episode played by the env's expert, as a transcript
    agentgym expert-data ENV_ID ...    expert episodes as chat JSONL, for cold-start SFT
    agentgym alfworld-generate ...     write ALFWorld-style games in the official layout
    agentgym eval ...                  evaluate a checkpoint or endpoint on an env's split
    agentgym tiny-model ...            build the tiny test model (random weights, trained tokenizer)
    agentgym leaderboard ...           score agents on every task of env splits (resumable run directory)

Subcommands that belong to one part of the package live there as ``main(argv)``; this file only
dispatches, so ``agentgym list`` never imports torch or an engine.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys

# subcommand -> "module:function" taking argv
EXTERNAL = {
    "expert-data": "agentgym.experts:main",
    "alfworld-generate": "agentgym.envs.alfworld.generate:main",
    "eval": "agentgym.train.evaluate:main",
    "tiny-model": "agentgym.agents.tiny:main",
    "leaderboard": "agentgym.leaderboard.cli:main",
}


def _parse_kwargs(pairs: list[str]) -> dict:
    """``key=value`` pairs; values are read as JSON when they parse, else kept as strings."""
    out = {}
    for pair in pairs:
        if "=" not in pair:
            raise SystemExit(f"--kwarg expects key=value, got {pair!r}")
        key, value = pair.split("=", 1)
        try:
            out[key] = json.loads(value)
        except ValueError:
            out[key] = value
    return out


def cmd_list(_args) -> int:
    import gymnasium as gym

    from agentgym.envs import DESCRIPTIONS

    width = max(map(len, DESCRIPTIONS))
    for env_id, text in DESCRIPTIONS.items():
        if env_id in gym.registry:
            print(f"{env_id:<{width}}  {text}")
    return 0


def cmd_play(args) -> int:
    import gymnasium as gym

    env = gym.make(args.env_id, render_mode="ansi", **_parse_kwargs(args.kwarg))
    obs, info = env.reset(seed=args.seed)
    print(info["system_prompt"], "\n")
    print(obs)
    while True:
        if info.get("admissible_actions"):
            print(f"\n[{len(info['admissible_actions'])} admissible actions; type :actions to list them]")
        try:
            action = input("\n> ")
        except EOFError:
            break
        if action.strip() in (":q", ":quit"):
            break
        if action.strip() == ":actions":
            print("\n".join(info.get("admissible_actions") or ["(this env lists none)"]))
            continue
        obs, reward, terminated, truncated, info = env.step(action)
        print(f"\n{obs}\n[reward {reward:+.3f}  terms {info['reward_terms']}]")
        if terminated or truncated:
            print(f"\nEpisode over: success={info['success']}  return={info['episode_return']:.3f}  "
                  f"terms={info['episode_terms']}")
            break
    env.close()
    return 0


def cmd_demo(args) -> int:
    import gymnasium as gym

    env = gym.make(args.env_id, expert=True, render_mode="ansi", **_parse_kwargs(args.kwarg))
    _, info = env.reset(seed=args.seed)
    done = False
    while not done:
        _, _, terminated, truncated, info = env.step(info["expert_action"] or "")
        done = terminated or truncated
    print(env.render())
    print(f"success={info['success']}  PRS return={info['episode_return']:.3f}  "
          f"terms={json.dumps(info['episode_terms'])}  metrics={json.dumps(info['metrics'])}")
    env.close()
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in EXTERNAL:
        module, func = EXTERNAL[argv[0]].split(":")
        return int(getattr(importlib.import_module(module), func)(argv[1:]) or 0)
    import agentgym  # noqa: F401  registers the envs

    parser = argparse.ArgumentParser(prog="agentgym", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="list registered env ids").set_defaults(func=cmd_list)
    for name, func, helptext in (("play", cmd_play, "play an env in the terminal"),
                                 ("demo", cmd_demo, "watch the expert play one episode")):
        p = sub.add_parser(name, help=helptext)
        p.add_argument("env_id", nargs="?" if name == "demo" else None, default="ToolQA-v0")
        p.add_argument("--seed", type=int, default=0)
        p.add_argument("--kwarg", action="append", default=[], help="env keyword argument, key=value")
        p.set_defaults(func=func)
    for name in EXTERNAL:
        sub.add_parser(name, help=f"see `agentgym {name} --help`")
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
