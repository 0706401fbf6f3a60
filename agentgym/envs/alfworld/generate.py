"""Generate ALFWorld-style games offline, in ALFWorld's official data layout.

    agentgym alfworld-generate --out DIR --num-games N [--seed S] [--split train|valid_seen|valid_unseen|all]
                               [--task-types pick_and_place_simple,...] [--verify]

writes ``DIR/json_2.1.1/<split>/<task>-<Object>-None-<Receptacle>-<scene>/trial_<id>/`` folders, each
holding ``game.tw-pddl`` (JSON: ``pddl_domain`` and ``grammar`` from alfworld's shipped
``alfred.pddl``/``alfred.twl2``, the grammar with the goal sentence in place of "UNKNOWN GOAL",
``pddl_problem``, ``solvable``, ``walkthrough``) and ``traj_data.json`` (``task_type``,
``pddl_params``, ``scene``, ``turk_annotations``) as alfworld's own tools read them. Point
``ALFWORLD_DATA`` (or the env's ``data_path``) at ``DIR``.

Tasks are spread evenly over the requested task types. ``train`` and ``valid_seen`` use the seen
floor plans and seen (task, object, receptacle) combinations; ``valid_unseen`` uses held-out floor
plans and mostly held-out combinations. Games are solvable by construction; ``--verify`` also runs
alfworld's planner expert on each (about a second per game), stores its plan as the walkthrough and
marks a game it cannot solve ``"solvable": false`` (alfworld's loaders, and ours, skip those).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from functools import lru_cache

from agentgym.envs.alfworld.problem import build_scenario, problem_pddl
from agentgym.envs.alfworld.scenes import load_room, scenes
from agentgym.envs.alfworld.tasks import TASK_ROOMS, TASK_TYPES, normalize_task_types, sample_task

SPLITS = ("train", "valid_seen", "valid_unseen")
DATA_DIR = "json_2.1.1"
# Share of the games per split with --split all.
ALL_SPLIT_SHARES = {"train": 0.8, "valid_seen": 0.1, "valid_unseen": 0.1}


@lru_cache(maxsize=1)
def _game_logic() -> tuple[str, str]:
    import alfworld.info

    with open(alfworld.info.ALFRED_PDDL_PATH) as f:
        domain = f.read()
    with open(alfworld.info.ALFRED_TWL2_PATH) as f:
        grammar = f.read()
    return domain, grammar


def make_game(seed: int, split: str, index: int, task_type: str) -> tuple[str, dict, dict]:
    """One game: (relative folder, game.tw-pddl content, traj_data.json content). Deterministic."""
    from agentgym.envs.alfworld.tasks import goal_sentence

    rng = random.Random(f"agentgym-alfworld/{seed}/{split}/{index}")
    unseen = split == "valid_unseen"
    pool = [n for kind in TASK_ROOMS[task_type] for n in scenes(kind, "unseen" if unseen else "seen")]
    rng.shuffle(pool)
    for scene in pool:
        room = load_room(scene)
        spec = sample_task(room, task_type, rng, unseen)
        if spec is not None:
            break
    else:
        raise RuntimeError(f"no floor plan supports {task_type} in split {split}")
    scenario = build_scenario(room, spec, rng)
    trial = f"trial_G{seed}_{index:05d}"
    sentence = goal_sentence(spec, rng)
    domain, grammar = _game_logic()
    game = {
        "pddl_domain": domain,
        "grammar": grammar.replace("UNKNOWN GOAL", sentence),
        "pddl_problem": problem_pddl(scenario, f"plan_{trial}"),
        "solvable": True,
        "walkthrough": None,
    }
    traj = {
        "task_type": spec.task_type,
        "task_id": trial,
        "pddl_params": {"object_target": spec.object_type, "parent_target": spec.receptacle_type,
                        "toggle_target": spec.toggle_type, "mrecep_target": "", "object_sliced": False},
        "scene": {"floor_plan": f"FloorPlan{scene}", "scene_num": scene, "room_kind": room.kind},
        "turk_annotations": {"anns": [{"task_desc": sentence[0].upper() + sentence[1:] + ".", "high_descs": []}]},
        "generator": {"name": "agentgym", "seed": seed, "split": split, "index": index},
    }
    folder = os.path.join(DATA_DIR, split, f"{spec.dir_name}-{scene}", trial)
    return folder, game, traj


def verify_game(game_file: str, engines=None) -> list[str] | None:
    """The planner expert's plan for a game file, or None if it finds none.

    ``engines``: a ``make_engine(expert=True)`` pair to reuse across games."""
    from agentgym.envs.alfworld.engine import expert_plan, has_traj_data, make_engine

    raw, expert = engines or make_engine(expert=True)
    engine = expert if has_traj_data(game_file) else raw
    try:
        engine.load(game_file)
        return expert_plan(engine.reset()) or None
    except Exception:  # a game the engine cannot even load is unsolvable, whatever the reason
        return None


def split_counts(num_games: int, split: str) -> dict[str, int]:
    if split != "all":
        return {split: num_games}
    counts = {s: int(num_games * share) for s, share in ALL_SPLIT_SHARES.items()}
    counts["train"] += num_games - sum(counts.values())
    return counts


def generate(out: str, num_games: int, seed: int = 0, split: str = "train", task_types=None,
             verify: bool = False, log=None) -> list[str]:
    """Write games under ``out`` in the official layout; returns the game files written."""
    if num_games < 0:
        raise ValueError(f"num_games must be >= 0, got {num_games}")
    if split not in SPLITS + ("all",):
        raise ValueError(f"split must be one of {SPLITS + ('all',)}, got {split!r}")
    types = normalize_task_types(task_types)
    written = []
    engines = None
    if verify:
        from agentgym.envs.alfworld.engine import make_engine

        engines = make_engine(expert=True)
    for name, count in split_counts(num_games, split).items():
        for index in range(count):
            folder, game, traj = make_game(seed, name, index, types[index % len(types)])
            path = os.path.join(out, folder)
            os.makedirs(path, exist_ok=True)
            game_file = os.path.join(path, "game.tw-pddl")
            with open(os.path.join(path, "traj_data.json"), "w") as f:
                json.dump(traj, f, indent=1)
            with open(game_file, "w") as f:
                json.dump(game, f)
            if verify:
                plan = verify_game(game_file, engines)
                game["solvable"], game["walkthrough"] = plan is not None, plan
                with open(game_file, "w") as f:
                    json.dump(game, f)
                if log and plan is None:
                    log(f"unsolvable, kept with solvable=false: {folder}")
            written.append(game_file)
    return written


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="agentgym alfworld-generate", description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="output folder (becomes an ALFWORLD_DATA root)")
    ap.add_argument("--num-games", type=int, default=100, help="games to write (in total with --split all)")
    ap.add_argument("--seed", type=int, default=0, help="generator seed: same seed, same games")
    ap.add_argument("--split", default="train", choices=SPLITS + ("all",),
                    help="split to write; 'all' writes 80%% train, 10%% valid_seen, 10%% valid_unseen")
    ap.add_argument("--task-types", default=None,
                    help=f"comma-separated task types or ids 1-6 (default: all six: {', '.join(TASK_TYPES)})")
    ap.add_argument("--verify", action="store_true", help="solve each game with the planner expert")
    args = ap.parse_args(argv)
    types = args.task_types.split(",") if args.task_types else None
    start = time.time()
    files = generate(args.out, args.num_games, args.seed, args.split, types, args.verify,
                     log=lambda m: print(m, file=sys.stderr))
    print(f"wrote {len(files)} games under {os.path.join(args.out, DATA_DIR)} in {time.time() - start:.1f}s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
