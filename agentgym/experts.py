"""Expert trajectories as chat data, for cold-start SFT (SPEC §5).

Every agentgym env takes ``expert=True`` and then puts its expert's next action in
``info["expert_action"]``: ToolQA's oracle tool plan, ALFWorld's planner, ScienceWorld's gold action
sequence. :func:`expert_episodes` plays that expert and yields each episode as chat messages in the
same layout agents and trainers use (:func:`agentgym.episode_to_messages`), so SFT trains on exactly
what the model will see at RL and evaluation time. In ``action_format="choice"`` the expert replies
as a policy is asked to, with the number of its action in the numbered list
(:func:`expert_reply`); ``info["expert_action"]`` itself stays the command text.

    agentgym expert-data ToolQA-v0 --episodes 200 --out toolqa_sft.jsonl
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn

import gymnasium as gym
import numpy as np

from agentgym.envs.parsing import lists_numbers
from agentgym.prompts import episode_to_messages, observations_carry_history


def expert_reply(info: dict[str, Any]) -> str:
    """The expert's next reply as a policy would write it: ``info["expert_action"]``, or in
    ``action_format="choice"`` the number of that action in ``info["admissible_actions"]`` (counted
    from 1, as the observation numbers them).

    The text stays when the action is not in the list, or when the list is the engine's own numbers
    (a ScienceWorld "Ambiguous request"), which are answered as they are.

    >>> info = {"expert_action": "go to fridge 1", "admissible_actions": ["look", "go to fridge 1"]}
    >>> expert_reply(info), expert_reply({**info, "action_format": "choice"})
    ('go to fridge 1', '2')
    """
    action = info.get("expert_action") or ""
    admissible = info.get("admissible_actions")
    if info.get("action_format") != "choice" or not admissible or lists_numbers(admissible):
        return action
    try:
        return str(list(admissible).index(action) + 1)
    except ValueError:
        return action


def play_expert_episode(env: gym.Env, seed: int | None = None, options: dict | None = None,
                        explore: float = 0.0) -> dict[str, Any]:
    """One episode driven by ``info["expert_action"]``; the env must have been made with expert=True.

    Each action is sent and recorded as :func:`expert_reply` writes it: the number of the expert's
    command when the env's ``action_format`` is ``"choice"``, else the command text.

    ``explore``: the share of turns on which a random admissible action (another than the
    expert's) is played instead, so the episode visits states off the expert's path, as a policy
    does (DAgger's mixture). ``record["labels"]`` keeps the expert's reply of every turn (what a
    cold start trains on) and ``record["explored"]`` which turns played the random action; the
    messages hold the actions played. Needs an env that lists admissible actions, and an expert
    that plans from the state it is in (ALFWorld's planner; ScienceWorld's gold path does not).
    The random draws are seeded by ``seed``.
    """
    if not 0.0 <= explore <= 1.0:
        raise ValueError(f"explore is a fraction in [0, 1], got {explore!r}")
    obs, info = env.reset(seed=seed, options=options)
    if "expert_action" not in info:
        raise ValueError("the env gives no info['expert_action']: make it with expert=True")
    if explore > 0 and not info.get("admissible_actions"):
        raise ValueError("explore needs an env that lists its admissible actions (info['admissible_actions'])")
    rng = np.random.default_rng([0 if seed is None else int(seed), 0xE8A1])
    system_prompt, task_id = info["system_prompt"], info["task_id"]
    carries_history = observations_carry_history(info)
    # only the reset info says which format the env speaks; later steps keep their admissible lists
    choice = info.get("action_format") == "choice"
    observations, actions, labels, explored, scored = [obs], [], [], [], []
    while True:
        label = expert_reply({**info, "action_format": "choice" if choice else "text"})
        scored.append(info.get("scored_replies"))
        action, off_path = label, False
        others = [a for a in info.get("admissible_actions") or [] if a != info.get("expert_action")]
        if explore > 0 and others and rng.random() < explore:
            pick = int(rng.integers(len(others)))
            action = str(list(info["admissible_actions"]).index(others[pick]) + 1) if choice else others[pick]
            off_path = True
        obs, _, terminated, truncated, info = env.step(action)
        actions.append(action)
        labels.append(label)
        explored.append(off_path)
        observations.append(obs)
        if terminated or truncated:
            break
    return {
        "task_id": task_id,
        # the final observation answers the last action; nothing is trained on it
        "messages": episode_to_messages(system_prompt, observations[:-1], actions),
        "labels": labels,
        "explored": explored,
        # per turn, the actions an env made with scored_actions=True listed to score (else None)
        "scored_replies": scored,
        "success": bool(info["success"]),
        "episode_return": float(info["episode_return"]),
        "episode_terms": info["episode_terms"],
        "turns": len(actions),
        # each observation states the task and the last steps: a prompt needs only the latest
        "history_in_observation": carries_history,
    }


def expert_episodes(env_id: str, num_episodes: int, seed: int = 0, only_successful: bool = True,
                    max_attempts_factor: int = 3, **env_kwargs) -> Iterator[dict[str, Any]]:
    """Yield up to ``num_episodes`` expert episodes of ``env_id`` (seeds ``seed, seed+1, ...``).

    With ``only_successful``, failed episodes are skipped and more seeds are tried, up to
    ``max_attempts_factor * num_episodes`` in all.
    """
    env = gym.make(env_id, expert=True, **env_kwargs)
    try:
        kept = 0
        for attempt in range(num_episodes * (max_attempts_factor if only_successful else 1)):
            if kept >= num_episodes:
                break
            record = play_expert_episode(env, seed=seed + attempt)
            if only_successful and not record["success"]:
                continue
            kept += 1
            yield {"env_id": env_id, "seed": seed + attempt, **record}
    finally:
        env.close()


def write_expert_jsonl(path: str | Path, env_id: str, num_episodes: int, **kwargs) -> dict[str, float]:
    """Write expert episodes as JSONL (one ``{"messages": [...], ...}`` per line); returns counts."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    n, turns = 0, 0
    with path.open("w", encoding="utf-8") as f:
        for record in expert_episodes(env_id, num_episodes, **kwargs):
            f.write(json.dumps(record, ensure_ascii=False) + "\n")
            n += 1
            turns += record["turns"]
    return {"episodes": n, "mean_turns": turns / max(n, 1)}


def main(argv: list[str] | None = None) -> int:
    import agentgym  # noqa: F401  registers the envs
    from agentgym.envs.env_ids import make_error_text, require_registered
    from agentgym.output_paths import OutputPathError, check_output_file, disk_full, disk_full_message

    parser = argparse.ArgumentParser(prog="agentgym expert-data", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("env_id")
    parser.add_argument("--episodes", type=int, default=100, help="episodes to write (>= 1)")
    parser.add_argument("--out", required=True, help="JSONL file to write")
    parser.add_argument("--seed", type=int, default=0, help="reset seed of the first episode (>= 0)")
    parser.add_argument("--split", default=None, help="env split (train by default)")
    parser.add_argument("--keep-failed", action="store_true", help="keep episodes the expert failed")
    args = parser.parse_args(argv)

    def refuse(message: str) -> NoReturn:
        parser.exit(2, f"agentgym expert-data: error: {' '.join(message.split())}\n")

    if args.episodes < 1:
        refuse(f"--episodes must be an integer >= 1, got {args.episodes}")
    if args.seed < 0:
        refuse(f"--seed must be an integer >= 0, got {args.seed}")
    env_kwargs = {"split": args.split} if args.split else {}
    try:
        require_registered(args.env_id)  # an unknown id names the closest registered one
    except ValueError as e:
        refuse(str(e))
    try:  # a bad split is refused before anything is played (envs are cheap to make)
        gym.make(args.env_id, expert=True, **env_kwargs).close()
    except (gym.error.Error, ValueError, TypeError) as e:  # a missing extra; a split the env has not
        refuse(f"{args.env_id}: {make_error_text(e)}")
    try:
        check_output_file(args.out, "--out")
    except OutputPathError as e:
        refuse(str(e))
    try:
        stats = write_expert_jsonl(args.out, args.env_id, args.episodes, seed=args.seed,
                                   only_successful=not args.keep_failed, **env_kwargs)
    except OSError as e:
        if not disk_full(e):
            raise
        parser.exit(1, f"agentgym expert-data: error: {disk_full_message('--out', args.out)}\n")
    print(f"wrote {stats['episodes']} episodes ({stats['mean_turns']:.1f} turns on average) to {args.out}")
    return 0
