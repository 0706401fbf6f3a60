"""The offline ALFWorld generator: distinct games, disjoint splits and levels, determinism, caching,
small rooms (played on the real engine), and the generated sets ``data_path`` names."""

import json
import os
import re
from collections import Counter

import pytest

pytest.importorskip("alfworld")

from agentgym.cli import main as cli_main
from agentgym.envs.alfworld import data as alf_data
from agentgym.envs.alfworld.distinct import game_key
from agentgym.envs.alfworld.env import ALFWorldEnv
from agentgym.envs.alfworld.generate import SPLITS, generate, make_game, space, split_counts
from agentgym.envs.alfworld.levels import HELD_OUT_TYPES, LEVELS, SEEN_TYPES, select_games
from agentgym.envs.alfworld.room_size import RoomSize, room_size
from agentgym.envs.alfworld.scenes import scene_split
from agentgym.envs.alfworld.tasks import TASK_TYPES, TaskSpec, is_unseen_combo, task_pool


def _read(path):
    with open(path, "rb") as f:
        return f.read()


def _traj(game_file):
    with open(os.path.join(os.path.dirname(game_file), "traj_data.json")) as f:
        return json.load(f)


def _problem(game_file):
    with open(game_file) as f:
        return json.load(f)["pddl_problem"]


def _pair(game_file):
    """(floor plan, task type, object, receptacle or lamp): ALFRED's task folder, less the trial."""
    traj = _traj(game_file)
    p = traj["pddl_params"]
    return traj["scene"]["scene_num"], traj["task_type"], p["object_target"], p["parent_target"] or p["toggle_target"]


def _counts(problem):
    """(receptacles, objects) the problem declares."""
    declared = problem[problem.index("(:objects"):problem.index("(:init")]
    return len(re.findall(r" - receptacle\n", declared)), len(re.findall(r" - object\n", declared))


@pytest.fixture(scope="module")
def big_root(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("alf_big"))
    generate(out, 300, seed=0, split="all")
    return out


def test_same_arguments_write_byte_identical_games_and_a_larger_set_begins_with_the_smaller(tmp_path):
    a = generate(str(tmp_path / "a"), 24, seed=4, split="all")
    b = generate(str(tmp_path / "b"), 24, seed=4, split="all")
    rel = [os.path.relpath(f, str(tmp_path / "a")) for f in a]
    assert rel == [os.path.relpath(f, str(tmp_path / "b")) for f in b]
    for x, y in zip(a, b):
        assert _read(x) == _read(y)
        assert _read(os.path.join(os.path.dirname(x), "traj_data.json")) == \
            _read(os.path.join(os.path.dirname(y), "traj_data.json"))
    small = generate(str(tmp_path / "c"), 12, seed=4, split="train")
    assert [_read(f) for f in small] == [_read(f) for f in a[:12]]
    other = generate(str(tmp_path / "d"), 12, seed=5, split="train")
    assert not {game_key(_problem(f)) for f in other} & {game_key(_problem(f)) for f in small}


def test_generating_again_keeps_intact_games_restores_changed_ones_and_replaces_another_set(tmp_path):
    out = str(tmp_path)
    files = generate(out, 12, seed=1)
    original = {f: _read(f) for f in files}
    stamps = {f: os.stat(f).st_mtime_ns for f in files}
    with open(files[3], "a") as f:
        f.write(" ")
    os.remove(os.path.join(os.path.dirname(files[5]), "traj_data.json"))
    mine = os.path.join(out, "json_2.1.1", "train", "pick_and_place_simple-Apple-None-Fridge-1", "trial_mine")
    os.makedirs(mine)
    with open(os.path.join(mine, "game.tw-pddl"), "w") as f:
        f.write(json.dumps({**json.loads(original[files[0]]), "walkthrough": ["mine"]}))
    logged = []
    assert generate(out, 12, seed=1, log=logged.append) == files
    assert {f: _read(f) for f in files} == original
    assert {f for f in files if os.stat(f).st_mtime_ns != stamps[f]} == {files[3], files[5]}
    assert logged == ["train: kept 10 games already there, removed 0 of an earlier generation"]
    # fewer games keep the first ones; another seed replaces the set, and a user's own trial stays
    assert generate(out, 8, seed=1) == files[:8] and not os.path.exists(files[8])
    other = generate(out, 8, seed=2)
    alf_data._index.cache_clear()
    on_disk = {os.path.realpath(g.path) for g in alf_data.find_games(out, "train")}
    assert on_disk == {os.path.realpath(f) for f in other} | {os.path.realpath(os.path.join(mine, "game.tw-pddl"))}


def test_no_game_repeats_and_train_and_validation_share_no_task_in_any_room(big_root):
    by_split = {s: [g.path for g in alf_data.find_games(big_root, s)] for s in SPLITS}
    assert {s: len(v) for s, v in by_split.items()} == split_counts(300, "all")
    keys = Counter(game_key(_problem(f)) for files in by_split.values() for f in files)
    assert len(keys) == 300 and max(keys.values()) == 1
    pairs = {s: {_pair(f) for f in files} for s, files in by_split.items()}
    assert not pairs["train"] & pairs["valid_seen"]
    assert not pairs["valid_unseen"] & (pairs["train"] | pairs["valid_seen"])
    assert len(pairs["train"]) == len(by_split["train"])  # each pool is walked through before a pair repeats
    for task_type in TASK_TYPES:  # in rounds over the floor plans: every room before a room again
        scenes = [_pair(f)[0] for f in by_split["train"] if _traj(f)["task_type"] == task_type]
        in_pool = {scene for scene, _ in task_pool("train", task_type)}
        assert len(set(scenes)) == min(len(scenes), len(in_pool)), task_type
    for split, want in (("train", "seen"), ("valid_seen", "seen"), ("valid_unseen", "unseen")):
        assert {scene_split(p[0]) for p in pairs[split]} == {want}
    # (a look task's lamp stands where the receptacle does: the combination is the same)
    assert not any(is_unseen_combo(TaskSpec(t, o, r)) for _, t, o, r in pairs["train"] | pairs["valid_seen"])
    assert all(is_unseen_combo(TaskSpec(t, o, r)) for _, t, o, r in pairs["valid_unseen"])  # held-out ones first


def test_levels_of_a_generated_set_are_disjoint_from_training(big_root):
    games = {s: alf_data.find_games(big_root, s) for s in SPLITS}
    key = {g.path: game_key(_problem(g.path)) for gs in games.values() for g in gs}
    train = select_games("train", games)
    assert train and not {g.task_type for g in train} & set(HELD_OUT_TYPES)
    levels = {level: select_games(level, games) for level in LEVELS}
    train_all_keys = {key[g.path] for g in games["train"]}
    assert {key[g.path] for g in levels["L0"]} <= {key[g.path] for g in train}
    for level, types in (("L1", SEEN_TYPES), ("L2", HELD_OUT_TYPES)):
        assert levels[level] and {g.task_type for g in levels[level]} == set(types)
        assert not {key[g.path] for g in levels[level]} & train_all_keys
    assert not {key[g.path] for g in levels["L1"]} & {key[g.path] for g in levels["L2"]}
    # a larger stride (the env's l0_every) keeps every k-th train game of each seen type: a smaller pool
    for every in (1, 3):
        pool = select_games("L0", games, l0_every=every)
        for task_type in SEEN_TYPES:
            of_type = [g.task_id for g in train if g.task_type == task_type]
            assert sorted(g.task_id for g in pool if g.task_type == task_type) == sorted(of_type[::every])


def test_split_pools_are_disjoint_and_their_size_is_the_documented_ceiling():
    for task_type in TASK_TYPES:
        pools = {s: task_pool(s, task_type) for s in SPLITS}
        assert all(len(set(p)) == len(p) for p in pools.values())
        assert not set(pools["train"]) & set(pools["valid_seen"])
        assert {scene_split(scene) for scene, _ in pools["valid_unseen"]} == {"unseen"}
    totals = {s: sum(v.values()) for s, v in space().items()}
    assert totals == {"train": 11064, "valid_seen": 2831, "valid_unseen": 4266}  # docs/envs/alfworld.md
    assert sum(space(SEEN_TYPES)["train"].values()) == 6088


def test_game_key_ignores_ids_start_and_name_but_not_placements_or_goal(tmp_path):
    game_file = generate(str(tmp_path), 1, seed=9, task_types=[1])[0]
    problem = _problem(game_file)
    assert game_key(problem) == _traj(game_file)["generator"]["key"]
    obj = re.search(r"\(objectType (\S+) \S+\)", problem).group(1)
    start = re.search(r"\(atLocation agent1 (\S+)\)", problem).group(1)
    other_loc = re.findall(r"\(receptacleAtLocation \S+ (\S+)\)", problem)[0]
    new_id = obj.split("_bar_")[0] + "_bar__plus_09_dot_99_bar__plus_00_dot_01_bar__plus_09_dot_99"
    renamed = (problem.replace(obj, new_id)
               .replace("(problem plan_", "(problem renamed_").replace(f"(atLocation agent1 {start})",
                                                                     f"(atLocation agent1 {other_loc})"))
    assert renamed != problem and game_key(renamed) == game_key(problem)
    where = re.search(rf"\(inReceptacle {re.escape(obj)} (\S+)\)", problem).group(1)
    elsewhere = next(r for r in re.findall(r"\(receptacleType (\S+) \S+\)", problem) if r != where)
    moved = problem.replace(f"(inReceptacle {obj} {where})", f"(inReceptacle {obj} {elsewhere})")
    assert game_key(moved) != game_key(problem)
    other_goal = problem.replace("(:goal", "(:goal (and (opened agent1))", 1)
    assert game_key(other_goal) != game_key(problem)


def test_a_game_that_repeats_an_earlier_one_is_drawn_again_and_an_exhausted_space_says_so():
    _, _, traj, key = make_game(0, "train", 5)
    _, _, traj2, key2 = make_game(0, "train", 5, taken={key})
    assert key2 != key and json.loads(traj2)["generator"]["key"] == key2
    assert json.loads(traj)["task_type"] == json.loads(traj2)["task_type"] == TASK_TYPES[5]

    class Everything:
        def __contains__(self, key):
            return True

    with pytest.raises(RuntimeError, match="repeats an earlier game"):
        make_game(0, "train", 5, taken=Everything())


def test_room_size_presets_bounds_and_bad_values():
    assert room_size() == RoomSize() and room_size("small") == RoomSize(6, 8)
    assert room_size("tiny", max_objects=6) == RoomSize(4, 6) and room_size(max_receptacles=5) == RoomSize(5, None)
    for bad, match in (({"name": "huge"}, "unknown room size"), ({"max_receptacles": 2}, "max_receptacles must be"),
                       ({"max_objects": 1}, "max_objects must be"), ({"max_objects": 2.5}, "max_objects must be")):
        with pytest.raises(ValueError, match=match):
            room_size(**bad)
    for kwargs in ({"num_games": -1}, {"num_games": 2, "jobs": 0}):
        with pytest.raises(ValueError, match="must be an integer"):
            generate("unused", **kwargs)


def test_cli_writes_small_rooms_prints_the_space_and_answers_bad_input_in_one_line(tmp_path, capsys):
    out = str(tmp_path / "small")
    assert cli_main(["alfworld-generate", "--out", out, "--num-games", "12", "--split", "all",
                     "--room-size", "small", "--max-objects", "5", "--seed", "2"]) == 0
    assert "wrote 12 games" in capsys.readouterr().out
    files = [g.path for s in SPLITS for g in alf_data.find_games(out, s)]
    assert len(files) == 12
    for f in files:
        receptacles, objects = _counts(_problem(f))
        assert receptacles <= 6 and objects <= 5
        assert _traj(f)["generator"]["room"] == {"max_receptacles": 6, "max_objects": 5}
    assert cli_main(["alfworld-generate", "--space"]) == 0
    printed = capsys.readouterr().out
    assert re.search(r"total\s+11064\s+2831\s+4266", printed)
    assert cli_main(["alfworld-generate", "--out", out, "--max-receptacles", "2"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "max_receptacles must be an integer >= 3" in err


@pytest.mark.engine
@pytest.mark.multiproc
def test_tiny_rooms_are_valid_games_the_engine_plays_and_the_planner_solves(tmp_path):
    files = generate(str(tmp_path), 6, seed=3, room="tiny", verify=True, jobs=2)
    env = ALFWorldEnv(data_path=str(tmp_path), split="train_all", max_turns=60)
    for game_file in files:
        game = json.loads(_read(game_file))
        assert game["solvable"] and game["walkthrough"]
        receptacles, objects = _counts(game["pddl_problem"])
        assert 3 <= receptacles <= 4 and objects <= 4
        obs, info = env.reset(options={"task_id": game_file})
        assert "Your task is to:" in obs and len([a for a in info["admissible_actions"] if a.startswith("go to")]) <= 4
        for command in game["walkthrough"]:
            obs, _, terminated, truncated, info = env.step(command)
            assert info["action_valid"], (command, obs)
        assert terminated and info["success"]
    env.close()


def test_generated_data_path_names_a_set_size_and_a_room_size(tmp_path, monkeypatch):
    monkeypatch.setenv("AGENTGYM_CACHE", str(tmp_path))
    assert alf_data.parse_generated("generated") == (None, "full")
    assert alf_data.parse_generated("generated:4000:small") == (4000, "small")
    assert alf_data.parse_generated("generated:tiny") == (None, "tiny")
    assert alf_data.parse_generated("/data/generated:1") is None
    for bad in ("generated:0", "generated:big", "generated:10:20", "generated:small:tiny"):
        with pytest.raises(ValueError, match=r"generated\[:N\]\[:ROOM\]"):
            alf_data.parse_generated(bad)
    env = ALFWorldEnv(data_path="generated:40:tiny", split="valid_unseen")
    assert len(env.games) == 4
    assert os.path.dirname(env.games[0].path).startswith(str(tmp_path / "alfworld" / "generated-v3-seed0-n40-tiny"))
    obs, info = env.reset(seed=0)
    assert _counts(_problem(info["game_file"]))[0] <= 4 and "Your task is to:" in obs
    env.close()
    # generated:1500 is the default set (80/10/10 of it): one folder, not a second copy
    default = tmp_path / "alfworld" / "generated-v3-seed0"
    default.mkdir()
    assert alf_data.default_data_root() == alf_data.default_data_root(1500) == str(default)
    assert alf_data.resolve_data_root("generated:1500", "train") == str(default)
