"""What a windowed policy sees on an expert's path: ALFWorld's small-room recipe beside ScienceWorld's
easy tasks, measured on the real engines.

    python benchmarks/embodied_prompts.py                                  # ALFWorld recipe + 3 ScienceWorld tasks
    python benchmarks/embodied_prompts.py --sw-tasks boil --episodes 3

The tiny-model ALFWorld recipe (docs/benchmarks.md) shows, in every window sample, the task and the
numbered admissible actions, and the model replies with a number. Whether that transfers to a
ScienceWorld task depends on the same few quantities, which this script measures per env by playing
the env's own expert (ALFWorld's planner, ScienceWorld's gold path) with the same observation
options: expert steps per episode, admissible actions per step, prompt tokens per window sample
(system prompt + observation, with the built-in tiny-small tokenizer trained on that env's text),
and env seconds per reset and per step. Prints a table; ``--output`` writes JSON.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

ALFWORLD_KWARGS = {"observation": "history+admissible", "history": 0, "action_format": "choice", "mark_played": True,
                   "data_path": "generated:4000:small", "expert_policy": "search", "max_turns": 60,
                   "system_prompt": "Solve the household task. Reply with the number of one admissible action."}
"""The small-room recipe's observation (docs/benchmarks.md), with room for the whole expert path."""
SW_KWARGS = {"observation": "history+admissible", "history": 0, "action_format": "choice", "simplifications": "easy",
             "max_turns": 120, "system_prompt": "Solve the science task. Reply with the number of one admissible action."}
SW_TASKS = ("find-living-thing", "find-plant", "boil")


def _summary(values: list[float]) -> dict[str, float]:
    return {"mean": statistics.fmean(values), "median": statistics.median(values), "max": max(values)}


def play_expert(env_id: str, kwargs: dict, episodes: int, seed: int, tokenizer) -> dict:
    """Play the env's expert for ``episodes`` episodes; per-step and per-episode measurements."""
    import gymnasium as gym

    import agentgym  # noqa: F401  (registers the envs)

    env = gym.make(env_id, expert=True, **kwargs)
    steps, admissible, tokens, reset_s, step_s, solved = [], [], [], [], [], 0
    try:
        for e in range(episodes):
            t = time.perf_counter()
            obs, info = env.reset(seed=seed + e)
            reset_s.append(time.perf_counter() - t)
            system = info.get("system_prompt", "")
            n, done = 0, False
            while not done:
                admissible.append(len(info.get("admissible_actions") or []))
                tokens.append(len(tokenizer(system + "\n" + obs)["input_ids"]))
                action = info.get("expert_action")
                if action is None:
                    break
                t = time.perf_counter()
                obs, _, terminated, truncated, info = env.step(action)
                step_s.append(time.perf_counter() - t)
                n += 1
                done = terminated or truncated
            steps.append(n)
            solved += bool(info.get("success"))
    finally:
        env.close()
    return {"env_id": env_id, "kwargs": kwargs, "episodes": episodes, "expert_solved": solved,
            "expert_steps": _summary(steps), "admissible_per_step": _summary(admissible),
            "prompt_tokens_per_sample": _summary(tokens), "reset_s": _summary(reset_s), "step_s": _summary(step_s)}


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sw-tasks", nargs="*", default=list(SW_TASKS), help="ScienceWorld tasks (none given: ALFWorld only)")
    p.add_argument("--episodes", type=int, default=8, help="expert episodes per env or task")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--output", default=None)
    args = p.parse_args(argv)
    from agentgym.extras import require_for_script

    require_for_script(["transformers", "tokenizers", "alfworld", "scienceworld"], "bench",
                       "benchmarks/embodied_prompts.py")
    from transformers import AutoTokenizer

    from agentgym.agents.tiny import resolve_model_path

    rows = {}
    plan = [("ALFWorld-v0", "ALFWorld-v0", ALFWORLD_KWARGS)]
    plan += [(f"ScienceWorld-v0 {task}", "ScienceWorld-v0", {**SW_KWARGS, "task": task}) for task in args.sw_tasks]
    for name, env_id, kwargs in plan:
        tok = AutoTokenizer.from_pretrained(resolve_model_path("tiny-small", (env_id,), kwargs))
        rows[name] = play_expert(env_id, kwargs, args.episodes, args.seed, tok)
    print(f"{'env':36s} {'expert steps':>14s} {'admissible/step':>16s} {'prompt tokens':>15s} {'reset s':>8s} "
          f"{'step s':>8s} solved")
    for name, r in rows.items():
        print(f"{name:36s} {r['expert_steps']['mean']:8.1f} ({r['expert_steps']['max']:3.0f}) "
              f"{r['admissible_per_step']['mean']:9.1f} ({r['admissible_per_step']['max']:4.0f}) "
              f"{r['prompt_tokens_per_sample']['mean']:8.0f} ({r['prompt_tokens_per_sample']['max']:4.0f}) "
              f"{r['reset_s']['median']:8.3f} {r['step_s']['median']:8.4f} {r['expert_solved']}/{r['episodes']}")
    if args.output:
        with open(args.output, "w") as f:
            json.dump(rows, f, indent=1)
    return rows


if __name__ == "__main__":
    main()
    sys.exit(0)
