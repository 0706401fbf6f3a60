"""Generate ALFWorld-style games offline, in ALFWorld's official data layout.

    agentgym alfworld-generate --out DIR --num-games N [--seed S] [--split train|valid_seen|valid_unseen|all]
                               [--task-types pick_and_place_simple,...] [--room-size full|small|tiny]
                               [--max-receptacles R] [--max-objects O] [--verify] [--jobs J]
    agentgym alfworld-generate --space [--room-size ...]

writes ``DIR/json_2.1.1/<split>/<task>-<Object>-None-<Receptacle>-<scene>/trial_<id>/`` folders, each
holding ``game.tw-pddl`` (JSON: ``pddl_domain`` and ``grammar`` from alfworld's shipped
``alfred.pddl``/``alfred.twl2``, the grammar with the goal sentence in place of "UNKNOWN GOAL",
``pddl_problem``, ``solvable``, ``walkthrough``) and ``traj_data.json`` (``task_type``,
``pddl_params``, ``scene``, ``turk_annotations``) as alfworld's own tools read them. Point
``ALFWORLD_DATA`` (or the env's ``data_path``) at ``DIR``.

Tasks are spread evenly over the requested task types. Each split draws its (floor plan, task)
pairs from its own pool (:func:`agentgym.envs.alfworld.tasks.task_pool`; no pair is in two
pools), in rounds over the floor plans, going through the whole pool before it uses a pair again
with other placements.
No two games of a set are the same game (:mod:`agentgym.envs.alfworld.distinct`). The same
arguments write byte-identical files, and game ``i`` does not depend on ``--num-games``, so a
larger set begins with the smaller one. Generating again is cheap: games whose files are as
recorded are kept (:mod:`agentgym.envs.alfworld.manifest`); games an earlier run of other
arguments wrote into the split are replaced. ``--room-size`` makes rooms smaller, a curriculum
knob (:mod:`agentgym.envs.alfworld.room_size`). Games are solvable by construction; ``--verify``
also runs alfworld's planner expert on each, stores its plan as the walkthrough and marks a game
it cannot solve ``"solvable": false`` (alfworld's loaders, and ours, skip those).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from functools import lru_cache

from agentgym.envs.alfworld import manifest
from agentgym.envs.alfworld.distinct import game_key
from agentgym.envs.alfworld.engine import expert_plan, has_traj_data, make_engine
from agentgym.envs.alfworld.problem import build_scenario, problem_pddl
from agentgym.envs.alfworld.room_size import DEFAULT_SIZE, ROOM_SIZES, RoomSize, room_size
from agentgym.envs.alfworld.scenes import load_room
from agentgym.envs.alfworld.tasks import TASK_TYPES, goal_sentence, is_unseen_combo, normalize_task_types, task_pool
from agentgym.output_paths import check_output_dir, disk_full, disk_full_message

SPLITS = ("train", "valid_seen", "valid_unseen")
DATA_DIR = "json_2.1.1"
GENERATOR_VERSION = 3
"""Bump when the same arguments would write different games (the manifest then rewrites them)."""
# Share of the games per split with --split all.
ALL_SPLIT_SHARES = {"train": 0.8, "valid_seen": 0.1, "valid_unseen": 0.1}
# Placements tried per (floor plan, task) pair before the next pair, and pairs tried, for a new game.
TRIES_PER_PAIR, PAIRS_TRIED = 20, 10


@lru_cache(maxsize=1)
def _game_logic() -> tuple[str, str]:
    import alfworld.info

    with open(alfworld.info.ALFRED_PDDL_PATH) as f:
        domain = f.read()
    with open(alfworld.info.ALFRED_TWL2_PATH) as f:
        grammar = f.read()
    return domain, grammar


@lru_cache(maxsize=1)
def _encoded_game_logic() -> tuple[str, str]:
    """The domain and grammar as JSON strings, encoded once (they are most of every game file)."""
    domain, grammar = _game_logic()
    return json.dumps(domain), json.dumps(grammar)


def _game_json(sentence: str, problem: str) -> str:
    """``json.dumps`` of the game dict, byte for byte, without encoding the domain and grammar again."""
    domain, grammar = _encoded_game_logic()
    grammar = grammar.replace("UNKNOWN GOAL", json.dumps(sentence)[1:-1])
    return (f'{{"pddl_domain": {domain}, "grammar": {grammar}, "pddl_problem": {json.dumps(problem)}, '
            f'"solvable": true, "walkthrough": null}}')


def _round_robin(pairs: list, rng: random.Random) -> list:
    """The pairs in rounds over their floor plans (a pair of each plan per round, plans shuffled
    each round), so the first games spread over the rooms instead of crowding the big ones, which
    hold the most pairs."""
    by_scene: dict[int, list] = {}
    for pair in pairs:
        by_scene.setdefault(pair[0], []).append(pair)
    for scene_pairs in by_scene.values():
        rng.shuffle(scene_pairs)
    out, depth = [], 0
    while len(out) < len(pairs):
        scenes = [scene for scene, scene_pairs in by_scene.items() if depth < len(scene_pairs)]
        rng.shuffle(scenes)
        out += [by_scene[scene][depth] for scene in scenes]
        depth += 1
    return out


@lru_cache(maxsize=64)
def _shuffled_pool(seed: int, split: str, task_type: str) -> tuple:
    """The split's pool for one task type in the order games take it: rounds over the floor plans,
    and in ``valid_unseen`` the held-out combinations first."""
    pool = task_pool(split, task_type)
    if not pool:
        raise RuntimeError(f"no floor plan supports {task_type} in split {split}")
    rng = random.Random(f"agentgym-alfworld/{seed}/{split}/{task_type}/pool")
    if split == "valid_unseen":
        held = [p for p in pool if is_unseen_combo(p[1])]
        return tuple(_round_robin(held, rng) + _round_robin([p for p in pool if not is_unseen_combo(p[1])], rng))
    return tuple(_round_robin(pool, rng))


def make_game(seed: int, split: str, index: int, task_types=TASK_TYPES, size: RoomSize = DEFAULT_SIZE,
              taken: frozenset | set = frozenset()) -> tuple[str, str, str, str]:
    """Game ``index`` of a split: (trial folder, ``game.tw-pddl`` text, ``traj_data.json`` text, key).

    Deterministic. Its task type is ``task_types[index % len(task_types)]``; its (floor plan, task)
    pair is the next of that type's shuffled pool; ``taken`` holds the keys of the split's earlier
    games, which this one must differ from."""
    task_type = task_types[index % len(task_types)]
    pool = _shuffled_pool(seed, split, task_type)
    turn = index // len(task_types)
    for attempt in range(TRIES_PER_PAIR * PAIRS_TRIED):
        scene, spec = pool[(turn + attempt // TRIES_PER_PAIR) % len(pool)]
        rng = random.Random(f"agentgym-alfworld/{seed}/{split}/{index}" + (f"/{attempt}" if attempt else ""))
        scenario = build_scenario(load_room(scene), spec, rng, size)
        trial = f"trial_G{seed}_{index:05d}"
        problem = problem_pddl(scenario, f"plan_{trial}")
        key = game_key(problem)
        if key not in taken:
            break
    else:
        raise RuntimeError(f"game {index} of {split}: every placement tried repeats an earlier game; the "
                           f"{len(pool)} (floor plan, task) pairs of {task_type} with rooms of {size} hold no "
                           f"more distinct games (use bigger rooms or fewer games)")
    sentence = goal_sentence(spec, rng)
    traj = {
        "task_type": spec.task_type,
        "task_id": trial,
        "pddl_params": {"object_target": spec.object_type, "parent_target": spec.receptacle_type,
                        "toggle_target": spec.toggle_type, "mrecep_target": "", "object_sliced": False},
        "scene": {"floor_plan": f"FloorPlan{scene}", "scene_num": scene, "room_kind": scenario.room.kind},
        "turk_annotations": {"anns": [{"task_desc": sentence[0].upper() + sentence[1:] + ".", "high_descs": []}]},
        "generator": {"name": "agentgym", "version": GENERATOR_VERSION, "seed": seed, "split": split, "index": index,
                      "key": key, "room": size.as_dict()},
    }
    folder = f"{spec.dir_name}-{scene}/{trial}"
    return folder, _game_json(sentence, problem), json.dumps(traj), key


def verify_game(game_file: str, engines=None) -> list[str] | None:
    """The planner expert's plan for a game file, or None if it finds none.

    ``engines``: a ``make_engine(expert=True)`` pair to reuse across games."""
    raw, expert = engines or make_engine(expert=True)
    engine = expert if has_traj_data(game_file) else raw
    try:
        engine.load(game_file)
        return expert_plan(engine.reset()) or None
    except Exception:  # a game the engine cannot even load is unsolvable, whatever the reason
        return None


_worker_engines = None


def _verify_in_worker(game_file: str) -> list[str] | None:
    global _worker_engines
    if _worker_engines is None:
        _worker_engines = make_engine(expert=True)
    return verify_game(game_file, _worker_engines)


def verify_games(game_files: list[str], jobs: int = 1) -> list[list[str] | None]:
    """The planner expert's plan (or None) for each game, in ``jobs`` processes, each with its engine."""
    if jobs <= 1 or len(game_files) <= 1:
        return [_verify_in_worker(f) for f in game_files]
    import multiprocessing

    with multiprocessing.get_context("fork").Pool(min(jobs, len(game_files))) as pool:
        return pool.map(_verify_in_worker, game_files, chunksize=1)


def split_counts(num_games: int, split: str) -> dict[str, int]:
    if split != "all":
        return {split: num_games}
    counts = {s: int(num_games * share) for s, share in ALL_SPLIT_SHARES.items()}
    counts["train"] += num_games - sum(counts.values())
    return counts


def generate_split(out: str, split: str, count: int, seed: int = 0, task_types=TASK_TYPES,
                   size: RoomSize = DEFAULT_SIZE, verify: bool = False, jobs: int = 1, log=None) -> list[str]:
    """Write (or keep, when already there) games ``0..count-1`` of one split; returns their files."""
    split_dir = os.path.join(out, DATA_DIR, split)
    os.makedirs(split_dir, exist_ok=True)
    params = {"version": GENERATOR_VERSION, "seed": seed, "task_types": list(task_types), "room": size.as_dict()}
    record = manifest.manifest_path(out, split)
    recorded = manifest.read(record, params)
    old_folders = manifest.recorded_folders(record)
    entries: list[manifest.GameEntry] = []
    taken: set[str] = set()
    kept = 0
    for index in range(count):
        entry = recorded[index] if index < len(recorded) else None
        if entry is not None and manifest.is_intact(split_dir, entry):
            kept += 1
        else:
            folder, game, traj, key = make_game(seed, split, index, task_types, size, taken)
            trial_dir = os.path.join(split_dir, folder)
            os.makedirs(trial_dir, exist_ok=True)
            for name, text in zip(manifest.FILES, (game, traj)):
                with open(os.path.join(trial_dir, name), "w") as f:
                    f.write(text)
            entry = manifest.GameEntry(folder, key, manifest.file_hashes(trial_dir))
        taken.add(entry.key)
        entries.append(entry)
    if verify:
        todo = [e for e in entries if not e.verified]
        plans = verify_games([os.path.join(split_dir, e.folder, "game.tw-pddl") for e in todo], jobs)
        for entry, plan in zip(todo, plans):
            game_file = os.path.join(split_dir, entry.folder, "game.tw-pddl")
            with open(game_file) as f:
                game = json.load(f)
            game["solvable"], game["walkthrough"] = plan is not None, plan
            with open(game_file, "w") as f:
                f.write(json.dumps(game))
            entry.verified, entry.sha256 = True, manifest.file_hashes(os.path.dirname(game_file))
            if log and plan is None:
                log(f"unsolvable, kept with solvable=false: {split}/{entry.folder}")
    removed = manifest.remove_stale(split_dir, old_folders, {e.folder for e in entries})
    manifest.write(record, params, entries)
    if log and (kept or removed):
        log(f"{split}: kept {kept} games already there, removed {removed} of an earlier generation")
    return [os.path.join(split_dir, e.folder, "game.tw-pddl") for e in entries]


def generate(out: str, num_games: int, seed: int = 0, split: str = "train", task_types=None,
             verify: bool = False, log=None, *, room: str | RoomSize | None = None,
             max_receptacles: int | None = None, max_objects: int | None = None, jobs: int = 1) -> list[str]:
    """Write games under ``out`` in the official layout; returns the game files, split by split.

    ``room`` (``full``/``small``/``tiny``), ``max_receptacles`` and ``max_objects`` bound the rooms
    (:func:`agentgym.envs.alfworld.room_size.room_size`); ``jobs`` processes run ``verify``."""
    if isinstance(num_games, bool) or not isinstance(num_games, int) or num_games < 0:
        raise ValueError(f"num_games must be an integer >= 0, got {num_games!r}")
    if split not in SPLITS + ("all",):
        raise ValueError(f"split must be one of {SPLITS + ('all',)}, got {split!r}")
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise ValueError(f"jobs must be an integer >= 1, got {jobs!r}")
    types = normalize_task_types(task_types)
    size = room_size(room, max_receptacles, max_objects)
    written = []
    for name, count in split_counts(num_games, split).items():
        written += generate_split(out, name, count, seed, types, size, verify, jobs, log)
    return written


def space(task_types=None, splits=SPLITS) -> dict[str, dict[str, int]]:
    """How many (floor plan, task) pairs each split's pool holds, per task type.

    A split's games go through its pool before a pair repeats (with other placements)."""
    types = normalize_task_types(task_types)
    return {s: {t: len(task_pool(s, t)) for t in types} for s in splits}


def _print_space(types) -> None:
    table = space(types)
    width = max(map(len, table["train"]))
    print(f"{'(floor plan, task) pairs':<{width}}  " + "  ".join(f"{s:>12}" for s in table))
    for t in table["train"]:
        print(f"{t:<{width}}  " + "  ".join(f"{table[s][t]:>12}" for s in table))
    print(f"{'total':<{width}}  " + "  ".join(f"{sum(table[s].values()):>12}" for s in table))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="agentgym alfworld-generate", description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", help="output folder (becomes an ALFWORLD_DATA root)")
    ap.add_argument("--num-games", type=int, default=100, help="games to write (in total with --split all)")
    ap.add_argument("--seed", type=int, default=0, help="generator seed: same seed, same games")
    ap.add_argument("--split", default="train", choices=SPLITS + ("all",),
                    help="split to write; 'all' writes 80%% train, 10%% valid_seen, 10%% valid_unseen")
    ap.add_argument("--task-types", default=None,
                    help=f"comma-separated task types or ids 1-6 (default: all six: {', '.join(TASK_TYPES)})")
    ap.add_argument("--room-size", default="full", choices=list(ROOM_SIZES),
                    help="curriculum knob: full ALFRED rooms, or small (6 receptacles, 8 objects) or tiny (4, 4)")
    ap.add_argument("--max-receptacles", type=int, default=None, help="receptacles per room (overrides --room-size)")
    ap.add_argument("--max-objects", type=int, default=None, help="objects per game (overrides --room-size)")
    ap.add_argument("--verify", action="store_true", help="solve each game with the planner expert")
    ap.add_argument("--jobs", type=int, default=1, help="processes that run --verify")
    ap.add_argument("--space", action="store_true",
                    help="print how many (floor plan, task) pairs each split can draw from, and exit")
    args = ap.parse_args(argv)
    types = args.task_types.split(",") if args.task_types else None
    try:
        if args.space:
            _print_space(types)
            return 0
        if not args.out:
            ap.error("--out is required (unless --space)")
        if args.num_games < 1:
            raise ValueError(f"--num-games must be an integer >= 1, got {args.num_games}")
        check_output_dir(args.out, "--out")
        start = time.time()
        files = generate(args.out, args.num_games, args.seed, args.split, types, args.verify,
                         log=lambda m: print(m, file=sys.stderr), room=args.room_size,
                         max_receptacles=args.max_receptacles, max_objects=args.max_objects, jobs=args.jobs)
    except (ValueError, RuntimeError) as e:  # OutputPathError is a ValueError
        print(f"agentgym alfworld-generate: error: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        if not disk_full(e):
            raise
        print(f"agentgym alfworld-generate: error: {disk_full_message('--out', args.out)}", file=sys.stderr)
        return 1
    print(f"wrote {len(files)} games under {os.path.join(args.out, DATA_DIR)} in {time.time() - start:.1f}s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
