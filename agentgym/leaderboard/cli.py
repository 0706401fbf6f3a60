"""``agentgym leaderboard`` (and ``python benchmarks/leaderboard.py``): score agents on every task.

    agentgym leaderboard --agents expert random tiny --envs ToolQA-v0 ALFWorld-v0 --split test --out runs/board
    agentgym leaderboard --agents grpo=runs/grpo/final openai:http://127.0.0.1:8000/v1#qwen \\
        --envs ALFWorld-v0 ScienceWorld-v0 --split L0 L1 L2 --repeats 3 --out runs/levels
    agentgym leaderboard merge runs/board-a runs/board-b --out runs/board
    agentgym leaderboard report runs/board

An agent is ``expert``, ``random``, ``tiny``, a checkpoint directory, ``openai:URL#MODEL``,
``vllm:PATH`` or ``module:Class``, optionally as ``NAME=AGENT``. Every task of each split is played
(``--tasks`` filters by glob on task id or type, or names a task set folder from ``agentgym
export-tasks`` to play exactly its tasks; ``--limit`` keeps the first n, balanced over task types), ``--repeats`` times. Rerunning the same command on the same ``--out`` resumes: finished
episodes are kept. The run directory gets ``summary.json``, ``leaderboard.md`` and
``leaderboard.png``; see docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import asdict

from agentgym.envs.env_ids import registered_env_id
from agentgym.leaderboard.calls import describe
from agentgym.leaderboard.errors import BoardError
from agentgym.leaderboard.plan import Plan, check_agent_names, check_env_ids, check_options, plan_blocks
from agentgym.leaderboard.report import chart, markdown
from agentgym.leaderboard.runner import RunnerConfig, run_block
from agentgym.leaderboard.specs import ModelOptions, make_agent, split_name
from agentgym.leaderboard.stats import summarize
from agentgym.leaderboard.store import Block, RunDir, check_distinct_files, merge
from agentgym.leaderboard.tasks import family
from agentgym.locks import DirectoryInUse, lock_dir
from agentgym.output_paths import OutputPathError, check_output_dir, disk_full, disk_full_message
from agentgym.prompts import MAX_ACTION_CHARS, MIN_ACTION_CHARS

INTERRUPTED = 130
"""Exit status after Ctrl-C (the shell's own for SIGINT)."""
BAD_INPUT = 2
"""Exit status when the board refuses to start (a bad argument, or its directory in use)."""
NO_ACTIONS = 3
"""Exit status when an agent produced no action at all (every episode an ``agent_error``, or no
env could be made with its ``env_kwargs``): its row is not a score. The reports are written."""
DISK_FULL = 1
"""Exit status when the disk of ``--out`` filled up during the run; the same command resumes it."""


def write_reports(run: RunDir) -> list[dict]:
    """Summarize every block of a run directory into summary.json, leaderboard.md and .png."""
    rows = [summarize(block, run.episodes(block)) for block in run.blocks()]
    with open(os.path.join(run.path, "summary.json"), "w", encoding="utf-8") as f:
        json.dump(rows, f, indent=1, default=str)
    with open(os.path.join(run.path, "leaderboard.md"), "w", encoding="utf-8") as f:
        f.write(markdown(rows))
    if rows:
        chart(rows, os.path.join(run.path, "leaderboard.png"))
    return rows


def run_board(agent_specs, env_ids, splits, out: str, env_kwargs: dict | None = None, repeats: int = 1,
              limit: int | None = None, select=None, runner: RunnerConfig | None = None,
              model: ModelOptions | None = None, log=print) -> list[dict]:
    """Play (or resume) a board and write its reports; returns the summary rows."""
    return play_board(agent_specs, env_ids, splits, out, env_kwargs, repeats, limit, select, runner, model, log)[0]


def play_board(agent_specs, env_ids, splits, out: str, env_kwargs: dict | None = None, repeats: int = 1,
               limit: int | None = None, select=None, runner: RunnerConfig | None = None,
               model: ModelOptions | None = None, log=print) -> tuple[list[dict], Plan]:
    """:func:`run_board`, also returning the plan (which agents were left out of which env, and why).

    ``env_ids`` are registered ids, or ``module:EnvId`` for an env its module registers on import
    (``env_kwargs`` may be keyed by either spelling). Everything the board can check is checked
    before anything is played (BoardError); the run directory is locked for the whole run
    (DirectoryInUse when another process has it)."""
    import agentgym  # noqa: F401  registers the envs

    runner = runner or RunnerConfig()
    check_options(repeats, limit, runner.num_envs, runner.agent_timeout)
    if env_kwargs is not None and not isinstance(env_kwargs, dict):
        raise BoardError(f"--env-kwargs must be a JSON object, got {type(env_kwargs).__name__}")
    typed = _registered(env_ids or [])
    env_ids = list(dict.fromkeys(typed.values()))
    if env_kwargs and set(env_kwargs) <= set(typed) | set(env_ids):  # keyed by env id, as typed
        env_kwargs = {typed.get(key, key): value for key, value in env_kwargs.items()}
    check_env_ids(env_ids)
    check_agent_names(agent_specs)
    _check_out(out)
    with lock_dir(out, log=log):
        run = RunDir(out)
        agents = []
        try:
            for spec in agent_specs:
                agents.append(make_agent(spec, env_ids, model))
            plan = plan_blocks(agents, env_ids, splits, env_kwargs or {}, repeats, select, limit, log)
            blocks = [block for block, _ in plan.pairs]
            check_distinct_files(blocks)
            for block in blocks:
                run.check_owner(block)
            for block, agent in plan.pairs:
                _keep_earlier_stamps(run, block, log)
                run.write_block(block)
                cfg = runner if runner.backend else RunnerConfig(**{**asdict(runner), "backend": _backend(block.env)})
                run_block(block, agent, run, cfg)
        finally:
            for agent in agents:
                try:
                    agent.close()
                except Exception as e:  # noqa: BLE001  a broken close() must not cost the reports
                    log(f"warning: agent {agent.name!r}: close() failed: {describe(e)}")
        return write_reports(run), plan


def _backend(env_id: str) -> str:
    # ToolQA steps cost ~0.1 ms, less than any pipe; the engines are worth a worker process each.
    return "sync" if family(env_id) == "toolqa" else "process"


def _keep_earlier_stamps(run: RunDir, block: Block, log) -> None:
    path = run.block_file(block)
    if not os.path.exists(path):
        return
    with open(path, encoding="utf-8") as f:
        old = json.load(f)
    earlier = old.get("stamps", {}).pop("earlier_stamps", [])
    if old.get("stamps") != block.stamps:
        log(f"note: {block.slug} was partly played with other stamps; they are kept under earlier_stamps")
        earlier.append(old.get("stamps"))
    if earlier:
        block.stamps["earlier_stamps"] = earlier


def main(argv: list[str] | None = None) -> int:
    """The command; returns the exit status (0; 1 the disk filled up; 2 bad input; 3 an agent produced no
    action; 130 Ctrl-C)."""
    def error(message: str) -> None:
        print("agentgym leaderboard: error: " + " ".join(str(message).split("\n")), file=sys.stderr)

    try:
        return _main(list(sys.argv[1:] if argv is None else argv), error)
    except (BoardError, DirectoryInUse) as e:
        error(str(e))
        return BAD_INPUT
    except KeyboardInterrupt:
        print("agentgym leaderboard: interrupted; finished episodes are kept, and the same command plays the rest",
              file=sys.stderr)
        return INTERRUPTED


def _main(argv: list[str], error) -> int:
    if argv[:1] == ["merge"]:
        p = argparse.ArgumentParser(prog="agentgym leaderboard merge", description="merge run directories")
        p.add_argument("dirs", nargs="+")
        p.add_argument("--out", required=True)
        args = p.parse_args(argv[1:])
        _check_run_dirs(args.dirs)
        _check_out(args.out)
        with lock_dir(args.out):
            rows = write_reports(merge(args.dirs, args.out))
        print(f"merged {len(args.dirs)} runs into {args.out}: {len(rows)} rows")
        return 0
    if argv[:1] == ["report"]:
        p = argparse.ArgumentParser(prog="agentgym leaderboard report", description="rewrite a run's reports")
        p.add_argument("dir")
        args = p.parse_args(argv[1:])
        _check_run_dirs([args.dir])
        with lock_dir(args.dir):
            rows = write_reports(RunDir(args.dir))
        print(markdown(rows))
        return 0
    p = argparse.ArgumentParser(prog="agentgym leaderboard", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--agents", nargs="+", required=True, help="agents to score (see above)")
    p.add_argument("--envs", nargs="+", required=True, help="env ids, e.g. ToolQA-v0 ALFWorld-v0 ScienceWorld-v0")
    p.add_argument("--split", nargs="+", default=["test"], help="splits or levels (L0 L1 L2); default test")
    p.add_argument("--out", required=True, help="run directory (rerun to resume)")
    p.add_argument("--env-kwargs", default="", help="JSON object for every env, or keyed by env id")
    p.add_argument("--repeats", type=int, default=1, help="episodes per task")
    p.add_argument("--limit", type=int, default=None, help="first n tasks per env split (balanced over types)")
    p.add_argument("--tasks", nargs="+", default=None, help="glob patterns on task id or task type, or a task set folder (agentgym export-tasks)")
    p.add_argument("--num-envs", type=int, default=4, help="envs played at once")
    p.add_argument("--backend", default=None, choices=["sync", "process", "ray"],
                   help="default: process for the engines, sync for ToolQA")
    p.add_argument("--agent-timeout", type=float, default=300.0,
                   help="seconds one agent call may take (inf: no limit)")
    p.add_argument("--temperature", type=float, default=0.0, help="model agents; 0: greedy")
    p.add_argument("--top-p", type=float, default=1.0)
    p.add_argument("--max-new-tokens", type=int, default=256)
    p.add_argument("--window", type=int, default=None, help="past turns kept in the prompt (default all)")
    p.add_argument("--max-action-chars", type=int, default=MAX_ACTION_CHARS,
                   help="each past action kept in the prompt cut to this many characters (runaway output)")
    p.add_argument("--device", default="cpu")
    p.add_argument("--api-key", default=None, help="bearer token for openai: agents")
    p.add_argument("--no-progress", action="store_true")
    args = p.parse_args(argv)
    try:
        env_kwargs = json.loads(args.env_kwargs) if args.env_kwargs else {}
    except ValueError as e:
        raise BoardError(f"--env-kwargs is not JSON ({e}): {args.env_kwargs[:100]!r}") from None
    if not isinstance(env_kwargs, dict):
        raise BoardError(f"--env-kwargs must be a JSON object, got {args.env_kwargs[:100]!r}")
    scripted = ("expert", "random")
    if args.device == "cpu" and any(split_name(a)[1] not in scripted and ":" not in split_name(a)[1]
                                    for a in args.agents):
        try:
            import torch

            torch.set_num_threads(1)  # small models are fastest on one thread; the engines need the rest
        except ImportError:
            pass
    if args.max_action_chars < MIN_ACTION_CHARS:
        p.error(f"--max-action-chars must be >= {MIN_ACTION_CHARS}, got {args.max_action_chars}")
    _check_model_flags(args)
    runner = RunnerConfig(num_envs=args.num_envs, backend=args.backend, agent_timeout=args.agent_timeout,
                          progress=not args.no_progress, max_action_chars=args.max_action_chars)
    model = ModelOptions(args.temperature, args.top_p, args.max_new_tokens, args.window, args.device, args.api_key)
    try:
        rows, plan = play_board(args.agents, args.envs, args.split, args.out, env_kwargs, args.repeats, args.limit,
                                args.tasks, runner, model, log=lambda m: print(m, file=sys.stderr))
    except OSError as e:
        if not disk_full(e):
            raise
        error(disk_full_message("--out", args.out, "run the same command again: it keeps the finished episodes"))
        return DISK_FULL
    print(markdown(rows).split("\n## ")[0])
    print(f"wrote {args.out}/summary.json, leaderboard.md, leaderboard.png")
    names = [split_name(spec)[0] for spec in args.agents]
    problems = no_action_agents(RunDir(args.out), names, plan)
    for line in problems:
        error(line)
    return NO_ACTIONS if problems else 0


def _registered(typed) -> dict[str, str]:
    """Each env id as typed -> the id it is registered under (``module:EnvId`` imports ``module``)."""
    out = {}
    for env_id in typed:
        try:
            out[env_id] = registered_env_id(env_id)
        except ValueError as e:
            raise BoardError(f"--envs: {e}") from None
    return out


def _check_model_flags(args) -> None:
    """The sampling flags and the agents that name a folder, checked before any agent is made."""
    from agentgym.agents.base import SamplingConfig
    from agentgym.settings import SettingError

    try:
        SamplingConfig(temperature=args.temperature, top_p=args.top_p, max_new_tokens=args.max_new_tokens)
    except SettingError as e:
        raise BoardError(f"--{e.name.replace('_', '-')} {e.problem}") from None
    if args.window is not None and args.window < 0:
        raise BoardError(f"--window must be an integer >= 0 (or left out: every past turn), got {args.window}")
    for spec in args.agents:
        body = split_name(spec)[1]
        if os.path.isdir(body) and not os.path.isfile(os.path.join(body, "config.json")):
            raise BoardError(f"agent {spec!r}: {body!r} has no config.json, so it is not a Hugging Face checkpoint "
                             "directory; give a model's folder (or expert, random, tiny)")


def _check_out(out: str) -> None:
    try:  # a board may play for hours: a folder it cannot write is refused before the first episode
        check_output_dir(out, "--out")
    except OutputPathError as e:
        raise BoardError(str(e)) from None


def _check_run_dirs(dirs) -> None:
    for d in dirs:
        if not os.path.isdir(os.path.join(d, "blocks")):
            raise BoardError(f"{d} is not a leaderboard run directory (it has no blocks/)")


def no_action_agents(run: RunDir, names, plan: Plan) -> list[str]:
    """One line for each agent whose rows are not a score: every episode it played ended as an
    ``agent_error`` (an endpoint it could not reach, a bad key, a broken class), or no env could
    be made with its ``env_kwargs``. Agents that failed some episodes only get a warning on stderr."""
    lines = []
    for name in names:
        records = [r for block in run.blocks() if block.agent == name for r in run.episodes(block).values()]
        errors = [r for r in records if r["outcome"] == "agent_error"]
        first = f" (first: {str(errors[0]['error'])[:300]})" if errors else ""
        if records and len(errors) == len(records):
            lines.append(f"agent {name!r} produced no action: every one of its {len(records)} episodes ended as "
                         f"agent_error{first}; its rows are not a score")
        elif errors:
            print(f"agentgym leaderboard: warning: {len(errors)} of {len(records)} episodes of agent {name!r} "
                  f"ended as agent_error{first}", file=sys.stderr)
    for name, env_id, why in plan.skipped:
        lines.append(f"agent {name!r} was not played on {env_id}: {why}")
    return lines


if __name__ == "__main__":
    sys.exit(main())
