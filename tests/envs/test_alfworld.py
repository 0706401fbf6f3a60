"""ALFWorld-v0 on the real engine (textworld PddlEnv + alfworld wrappers) over generated games."""

import json
import os
import threading

import gymnasium as gym
import pytest

pytest.importorskip("alfworld")

from gymnasium.utils.env_checker import check_env

import agentgym  # noqa: F401
from agentgym.cli import main as cli_main
from agentgym.envs.alfworld import data as alf_data
from agentgym.envs.alfworld.env import ALFWorldEnv
from agentgym.envs.alfworld.generate import generate
from agentgym.envs.alfworld.scenes import scene_split
from agentgym.envs.alfworld.tasks import TASK_TYPES, TaskSpec, is_unseen_combo


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    out = tmp_path_factory.mktemp("alfworld")
    generate(str(out), 12, seed=3, split="train")
    generate(str(out), 6, seed=3, split="valid_seen")
    generate(str(out), 6, seed=3, split="valid_unseen")
    return str(out)


@pytest.fixture(scope="module")
def env(root):
    env = gym.make("ALFWorld-v0", data_path=root, expert=True, render_mode="ansi")
    yield env
    env.close()


def _task(env, task_type):
    return next(g.task_id for g in env.unwrapped.games if g.task_type == task_type)


def test_generated_games_follow_the_official_layout_and_load_through_data_path(root):
    train = os.path.join(root, "json_2.1.1", "train")
    trials = [os.path.join(train, task, trial) for task in sorted(os.listdir(train))
              for trial in os.listdir(os.path.join(train, task))]
    assert len(trials) == 12
    for trial in trials:
        game = json.load(open(os.path.join(trial, "game.tw-pddl")))
        assert set(game) >= {"pddl_domain", "grammar", "pddl_problem", "solvable", "walkthrough"}
        assert "UNKNOWN GOAL" not in game["grammar"] and "(:goal" in game["pddl_problem"]
        traj = json.load(open(os.path.join(trial, "traj_data.json")))
        assert os.path.basename(os.path.dirname(trial)).startswith(traj["task_type"] + "-")
        assert traj["pddl_params"]["object_target"]
    env = ALFWorldEnv(data_path=root, split="train_all")
    assert len(env.games) == 12 and {g.task_type for g in env.games} == set(TASK_TYPES)
    # the json_2.1.1 folder itself is a valid root too, and task types filter by name or id
    only = ALFWorldEnv(data_path=os.path.join(root, "json_2.1.1"), task_types=["look_at_obj_in_light", 4],
                       split="train_all")
    assert {g.task_type for g in only.games} == {"look_at_obj_in_light", "pick_heat_then_place_in_recep"}
    env.close(), only.close()


def test_split_names_and_aliases(root):
    env = ALFWorldEnv(data_path=root, split="valid")
    assert env.split == "valid_seen" and len(env.games) == 6
    _, info = env.reset(seed=0, options={"split": "test"})
    assert info["split"] == "valid_unseen" and info["group_key"].startswith("ALFWorld-v0/valid_unseen/")
    with pytest.raises(ValueError, match="unknown split"):
        ALFWorldEnv(data_path=root, split="validation")
    with pytest.raises(ValueError, match="no ALFWorld games"):
        ALFWorldEnv(data_path=os.path.join(root, "nowhere"))
    for bad in (0, 2.5, True, "10"):
        with pytest.raises(ValueError, match="l0_every must be an integer >= 1"):
            ALFWorldEnv(data_path=root, l0_every=bad)
    env.close()


def test_unseen_split_holds_out_rooms_and_combinations(root):
    for split, want in (("train", "seen"), ("valid_seen", "seen"), ("valid_unseen", "unseen")):
        for game in ALFWorldEnv(data_path=root, split=split).games:
            traj = json.load(open(os.path.join(os.path.dirname(game.path), "traj_data.json")))
            assert scene_split(traj["scene"]["scene_num"]) == want
            p = traj["pddl_params"]
            spec = TaskSpec(traj["task_type"], p["object_target"], p["parent_target"], p["toggle_target"])
            if want == "seen":
                assert not is_unseen_combo(spec)


def test_generator_is_deterministic_and_the_cli_writes_games(tmp_path, capsys):
    a, b, c = (str(tmp_path / n) for n in "abc")
    files_a = generate(a, 6, seed=11, split="all")
    files_b = generate(b, 6, seed=11, split="all")
    files_c = generate(c, 6, seed=12, split="all")
    rel = [os.path.relpath(f, a) for f in files_a]
    assert rel == [os.path.relpath(f, b) for f in files_b]
    assert all(open(x).read() == open(y).read() for x, y in zip(files_a, files_b))
    assert [open(f).read() for f in files_a] != [open(f).read() for f in files_c]
    assert cli_main(["alfworld-generate", "--out", str(tmp_path / "cli"), "--num-games", "3", "--seed", "1",
                     "--task-types", "1,pick_two_obj_and_place"]) == 0
    assert "wrote 3 games" in capsys.readouterr().out
    assert len(ALFWorldEnv(data_path=str(tmp_path / "cli"), split="train_all").games) == 3


def test_check_env_passes(root):
    env = gym.make("ALFWorld-v0", data_path=root, render_mode="ansi")
    check_env(env.unwrapped)
    env.close()


def test_same_seed_same_game_and_observations(root):
    runs = []
    for _ in range(2):
        env = ALFWorldEnv(data_path=root)
        obs, info = env.reset(seed=7)
        trace = [obs, info["task_id"]]
        for action in info["admissible_actions"][:3] + ["look", "nonsense"]:
            trace.append(env.step(action)[0])
        runs.append(trace)
        env.close()
    assert runs[0] == runs[1]
    env = ALFWorldEnv(data_path=root)
    ids = {env.reset(seed=s)[1]["task_id"] for s in range(4)}
    assert len(ids) > 1  # seeds spread over the games
    env.close()


def test_expert_episode_pays_staged_terms_and_progress(env):
    obs, info = env.reset(options={"task_id": _task(env, "pick_heat_then_place_in_recep")})
    assert obs.startswith("-= Welcome to TextWorld, ALFRED! =-") and "Your task is to: " in obs
    assert info["instruction"] in obs and info["task_type"] == "pick_heat_then_place_in_recep"
    assert info["expert_action"] in info["admissible_actions"]
    progress, rewards = [], []
    while True:
        action = f"<think>plan</think><action>{info['expert_action']}</action>"
        obs, reward, terminated, truncated, info = env.step(action)
        assert info["reward_terms"]["format"] == 1.0 and info["reward_terms"]["valid"] == 1.0
        progress.append(info["reward_terms"]["progress"])
        rewards.append(reward)
        if terminated or truncated:
            break
    assert terminated and info["success"] and info["reward_terms"]["success"] == 1.0
    assert progress == sorted(progress) and progress[-1] == 1.0 and 0 < progress[1] < 1
    assert sum(rewards) == pytest.approx(info["episode_return"]) == pytest.approx(1.0)
    assert "heat" in env.render() and info["metrics"]["progress"] == 1.0


def test_bad_commands_are_answered_not_raised(env):
    _, info = env.reset(seed=1)
    obs, _, _, _, info = env.step("fly to the moon")
    assert obs == "Nothing happens." and not info["action_valid"]
    assert info["reward_terms"]["format"] == 1.0 and info["reward_terms"]["valid"] == 0.0
    obs, _, _, _, info = env.step("look\ninventory")
    assert obs.startswith("Invalid output:") and info["reward_terms"]["format"] == 0.0
    assert info["parse_error"]
    command = info["admissible_actions"][0]
    obs, _, _, _, info = env.step("  " + command.upper() + ". ")
    assert info["action_valid"] and obs != "Nothing happens."


def test_meta_commands_and_chains_never_reach_the_engine(root, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    env = ALFWorldEnv(data_path=root, expert=True, max_turns=500)

    def play(between):
        _, info = env.reset(seed=4)
        turns = 0
        while True:
            expert = info["expert_action"]
            _, _, terminated, truncated, info = env.step(expert)
            turns += 1
            if terminated or truncated:
                return turns, info
            for action in between + [f"{expert}. look", f"look then {expert}", f"{expert}, inventory"]:
                obs, _, terminated, _, refused = env.step(action)
                assert obs == "Nothing happens." and not refused["action_valid"] and not terminated, action
                assert refused["expert_action"] == info["expert_action"]

    plain_turns, _ = play([])
    turns, info = play(["quit.", "restart.", "save.", "restore.", "script.", "look. restart", "look then restart",
                        "undo", "Restart!", "inventory then save"])
    assert info["success"] and turns == plain_turns and os.listdir(tmp_path) == []
    env.close()


def test_turn_limit_truncates_and_binary_reward(root):
    env = ALFWorldEnv(data_path=root, max_turns=3, reward_mode="binary")
    env.reset(seed=0)
    outs = [env.step("look") for _ in range(3)]
    assert [o[3] for o in outs] == [False, False, True] and all(o[1] == 0.0 for o in outs)
    assert outs[-1][4]["success"] is False and "episode_terms" in outs[-1][4]
    obs, reward, terminated, truncated, info = env.step("look")  # after the end: no crash
    assert terminated and reward == 0.0
    env.close()


def test_task_id_option_and_group_key(env):
    task_id = env.unwrapped.games[5].task_id
    _, a = env.reset(seed=0, options={"task_id": task_id})
    _, b = env.reset(seed=99, options={"task_id": 5})
    assert a["task_id"] == b["task_id"] == task_id and a["group_key"] == b["group_key"]
    with pytest.raises(ValueError):
        env.reset(options={"task_id": "no-such-task"})


def test_missing_engine_names_the_extra(monkeypatch, root):
    monkeypatch.setitem(__import__("sys").modules, "textworld", None)
    with pytest.raises(gym.error.DependencyNotInstalled, match=r"agentgym\[alfworld\]"):
        ALFWorldEnv(data_path=root)


def test_default_data_is_generated_once_into_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("AGENTGYM_CACHE", str(tmp_path))
    monkeypatch.delenv("ALFWORLD_DATA", raising=False)
    monkeypatch.setattr(alf_data, "DEFAULT_COUNTS", {"train": 6, "valid_seen": 2, "valid_unseen": 2})
    roots, errors = [], []

    def worker():
        try:
            roots.append(alf_data.default_data_root())
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(set(roots)) == 1
    assert os.listdir(tmp_path / "alfworld") == [os.path.basename(roots[0])]  # no temp folders left
    env = gym.make("ALFWorld-v0", split="valid_unseen")
    assert len(env.unwrapped.games) == 2 and env.unwrapped.games[0].path.startswith(roots[0])
    env.close()


def test_loader_skips_unsolvable_movable_and_sliced_trials(tmp_path):
    files = generate(str(tmp_path), 6, seed=8)
    game = json.load(open(files[0]))
    game["solvable"] = False
    json.dump(game, open(files[0], "w"))
    trial = os.path.dirname(files[1])
    os.rename(os.path.dirname(trial), os.path.dirname(trial) + "-movable")
    ids = {g.task_id for g in alf_data.find_games(str(tmp_path), "train")}
    assert len(ids) == 4 and not any("movable" in i for i in ids)


def test_system_prompt_replaces_the_built_in_one_and_changes_nothing_else(root):
    short = "Reply with one command: go to, take, move, open, heat, clean, cool or use."
    env = gym.make("ALFWorld-v0", data_path=root, system_prompt=short, render_mode="ansi")
    obs, info = env.reset(seed=0)
    default_obs, default_info = gym.make("ALFWorld-v0", data_path=root).reset(seed=0)
    assert info["system_prompt"] == short == env.unwrapped.system_prompt
    assert default_info["system_prompt"] != short and "go to (receptacle)" in default_info["system_prompt"]
    assert obs == default_obs and info["task_id"] == default_info["task_id"]
    assert short in env.render()
    _, _, _, _, info = env.step("look")
    assert info["action_valid"]
    with pytest.raises(ValueError, match="system_prompt"):
        gym.make("ALFWorld-v0", data_path=root, system_prompt="")
