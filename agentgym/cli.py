"""The ``agentgym`` console command (``COMMANDS`` below is what ``agentgym --help`` shows).

Subcommands that belong to one part of the package live there as ``main(argv)``; this file only
dispatches, so ``agentgym list`` never imports torch or an engine.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys

COMMANDS = """\
Gymnasium text environments for LLM agents.

    agentgym list                      registered env ids, one line each
    agentgym play ENV_ID [--seed N]    play an env yourself in the terminal
    agentgym demo [ENV_ID]             one episode played by the env's expert, as a transcript
    agentgym train METHOD [flags]      train a model (`agentgym train --help` lists the methods)
    agentgym expert-data ENV_ID ...    expert episodes as chat JSONL, for cold-start SFT
    agentgym alfworld-generate ...     write ALFWorld-style games in the official layout
    agentgym eval ...                  evaluate a checkpoint or endpoint on an env's split
    agentgym convert-checkpoint DIR    rewrite an older checkpoint's pickled trainer state safely
    agentgym merge-lora ADAPTER OUT    merge a LoRA run's adapter into its base model (extra: lora)
    agentgym plot RUN_DIR ...          learning curves of training runs as a PNG
    agentgym view DIR ...              training runs and leaderboards in a local page (episodes, curves)
    agentgym tiny-model ...            build the tiny test model (random weights, trained tokenizer)
    agentgym leaderboard ...           score agents on every task of env splits (resumable run directory)
    agentgym serve ENV_ID ...          serve an env over HTTP/WebSocket as an OpenEnv server (extra: serve)
    agentgym mcp ENV_ID                an env's tools as an MCP server over stdio (extra: mcp)
    agentgym export-tasks ENV_ID ...   a split's tasks as a Hugging Face dataset (extra: datasets)

`agentgym COMMAND --help` describes each command.
"""

PLAY_HELP = """\
Type an action and press Enter. Meta commands (they cost no turn):
  :actions   what you can do here (admissible actions, or the tool-call syntax and the tools)
  :help      this list
  :q         quit"""

# subcommand -> "module:function" taking argv
EXTERNAL = {
    "train": "agentgym.train.command:main",
    "expert-data": "agentgym.experts:main",
    "alfworld-generate": "agentgym.envs.alfworld.generate:main",
    "eval": "agentgym.train.evaluate:main",
    "convert-checkpoint": "agentgym.train.base.state_file:main",
    "merge-lora": "agentgym.agents.lora:main",
    "tiny-model": "agentgym.agents.tiny:main",
    "plot": "agentgym.plot:main",
    "view": "agentgym.viewer.cli:main",
    "leaderboard": "agentgym.leaderboard.cli:main",
    "serve": "agentgym.integrations.serve:main",
    "mcp": "agentgym.integrations.mcp:main",
    "export-tasks": "agentgym.integrations.tasksets:main",
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


def _env_kwargs(args) -> dict:
    """``--kwarg`` pairs, with the observation and action options when given as flags."""
    kwargs = _parse_kwargs(args.kwarg)
    for flag, key in (("observation", "observation"), ("history", "history"), ("action_format", "action_format")):
        value = getattr(args, flag, None)
        if value is not None:
            kwargs[key] = value
    return kwargs


def _make(args, **fixed):
    """The env ``args`` name; a setting the env refuses is one line on stderr, not a traceback."""
    import gymnasium as gym

    from agentgym.envs.env_ids import keyword_problem, make_error_text, registered_env_id

    if args.seed < 0:
        raise SystemExit(f"agentgym {args.command}: --seed must be an integer >= 0, got {args.seed}")
    try:
        args.env_id = registered_env_id(args.env_id)  # a user's env as module:EnvId; the closest id if unknown
    except ValueError as e:
        raise SystemExit(f"agentgym {args.command}: {e}") from None
    kwargs = _env_kwargs(args)
    problem = keyword_problem(args.env_id, kwargs)
    if problem is not None:
        raise SystemExit(f"agentgym {args.command}: --kwarg: {problem}")
    try:
        return gym.make(args.env_id, **fixed, **kwargs)
    except (gym.error.Error, ValueError, TypeError) as e:  # gym.error: a missing extra, a deprecated version
        raise SystemExit(f"agentgym {args.command}: {args.env_id}: {make_error_text(e)}") from None


def _what_you_can_do(info: dict, choice: bool = False) -> str:
    """``:actions`` in ``agentgym play``: the engine's admissible actions (numbered in choice
    format), or for a tool env the call syntax with one line per tool (its arguments, required
    ones first)."""
    if info.get("admissible_actions"):
        if choice:
            return "\n".join(f"{k}. {a}" for k, a in enumerate(info["admissible_actions"], 1))
        return "\n".join(info["admissible_actions"])
    if not info.get("tools"):
        return "(this env lists no actions; the system prompt above says what it accepts)"
    lines = ['Call a tool: <tool_call>{"name": TOOL, "arguments": {...}}</tool_call>', "Tools:"]
    for tool in info["tools"]:
        function = tool.get("function", tool)
        params = function.get("parameters", {})
        required = params.get("required", [])
        names = sorted(params.get("properties", {}), key=lambda name: name not in required)
        arguments = ", ".join(name if name in required else f"[{name}]" for name in names)
        lines.append(f"  {function['name']}({arguments})  {function.get('description', '')}")
        example = {name: "..." for name in required}
        lines.append(f"    <tool_call>{json.dumps({'name': function['name'], 'arguments': example})}</tool_call>")
    if "<answer>" in info.get("system_prompt", ""):
        lines.append("Answer: <answer>...</answer> (ends the episode)")
    return "\n".join(lines)


def cmd_play(args) -> int:
    env = _make(args, render_mode="ansi")
    obs, info = env.reset(seed=args.seed)
    shown = "observation_mode" in info  # the observations list the actions themselves
    choice = info.get("action_format") == "choice"
    print(f"Playing {args.env_id}. Meta commands (no turn spent): :actions  :help  :q\n")
    print(info["system_prompt"], "\n")
    print(obs)
    while True:
        if info.get("admissible_actions") and not shown:
            print(f"\n[{len(info['admissible_actions'])} admissible actions; type :actions to list them]")
        try:
            action = input("\n> ")
        except EOFError:
            break
        command = action.strip()
        if command in (":q", ":quit"):
            break
        if command == ":actions":
            print(_what_you_can_do(info, choice))
            continue
        if command in (":help", ":h", ":?"):
            print(PLAY_HELP)
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
    env = _make(args, expert=True, render_mode="ansi")
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


class _HelpFormatter(argparse.RawDescriptionHelpFormatter, argparse.ArgumentDefaultsHelpFormatter):
    """Descriptions as written, and every argument's default."""


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in EXTERNAL:
        module, func = EXTERNAL[argv[0]].split(":")
        return int(getattr(importlib.import_module(module), func)(argv[1:]) or 0)
    import agentgym  # noqa: F401  registers the envs

    parser = argparse.ArgumentParser(prog="agentgym", description=COMMANDS,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="list registered env ids").set_defaults(func=cmd_list)
    for name, func, helptext in (("play", cmd_play, "play an env in the terminal"),
                                 ("demo", cmd_demo, "watch the expert play one episode")):
        p = sub.add_parser(name, help=helptext, description=helptext + (f"\n\n{PLAY_HELP}" if name == "play" else ""),
                           formatter_class=_HelpFormatter)
        p.add_argument("env_id", nargs="?" if name == "demo" else None, default="ToolQA-v0",
                       help="registered env id (`agentgym list`), or module:EnvId for your own env")
        p.add_argument("--seed", type=int, default=0, help="reset seed: the same seed gives the same task")
        p.add_argument("--kwarg", action="append", default=[], metavar="KEY=VALUE",
                       help="env keyword argument, repeatable; VALUE is read as JSON when it parses")
        p.add_argument("--observation", choices=["raw", "history", "history+admissible"], default=None,
                       help="embodied envs: the engine's text (raw, the env's default) or the task and the last "
                            "--history steps around it (history), and the admissible actions (history+admissible)")
        p.add_argument("--history", type=int, default=None, metavar="K",
                       help="with --observation history or history+admissible: past steps shown (env default 2)")
        p.add_argument("--action-format", choices=["text", "choice"], default=None,
                       help="embodied envs: choice numbers the admissible actions; reply with a number or the text")
        p.set_defaults(func=func)
    for name in EXTERNAL:
        sub.add_parser(name, help=f"see `agentgym {name} --help`")
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
