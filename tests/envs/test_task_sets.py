"""gym.make(ENV_ID, tasks=DIR): an exported task set plays exactly its tasks, each episode the
same as the plain env's on that task of the split; a folder that is not a set, a set of another
env id, or one from an agentgym whose tasks differ is refused in one line."""

import json
import os
import warnings

import gymnasium as gym
import pytest

pytest.importorskip("datasets")
import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

import agentgym  # noqa: E402,F401
from agentgym.envs.task_refs import task_list_hash  # noqa: E402
from agentgym.integrations.tasksets import export_tasks, load_tasks  # noqa: E402

TOOLQA = {"question_kinds": ["single_hop", "bridge"], "max_turns": 6}


def play(env, seed, options, pick):
    """One episode: (obs, reward, terminated, truncated, info) of the reset and every step."""
    obs, info = env.reset(seed=seed, options=options)
    steps, done, turn = [(obs, 0.0, False, False, info)], False, 0
    while not done:
        obs, reward, terminated, truncated, info = env.step(pick(turn, info))
        steps.append((obs, reward, terminated, truncated, info))
        done, turn = terminated or truncated, turn + 1
    return steps


def expert(turn, info):
    return info["expert_action"]


@pytest.fixture(scope="module")
def toolqa_set(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("sets") / "toolqa-test")
    export_tasks("ToolQA-v0", "test", out, TOOLQA, limit=5)
    return out


def test_a_toolqa_set_plays_each_of_its_tasks_as_the_split_does(toolqa_set):
    env = gym.make("ToolQA-v0", tasks=toolqa_set, expert=True)
    plain = gym.make("ToolQA-v0", **TOOLQA, expert=True)
    tasks = load_tasks(toolqa_set).tasks
    assert env.unwrapped.question_kinds == ("single_hop", "bridge") and env.unwrapped.max_turns == 6
    for seed, task in enumerate(tasks):
        ours = play(env, seed, {"task_id": task.task_id}, expert)
        theirs = play(plain, seed, task.options, expert)
        assert ours == theirs
        assert ours[0][4]["task_id"] == task.task_id and ours[-1][4]["success"]
    # a wrong last answer scores the same too (not only the expert's path)
    wrong = lambda turn, info: info["expert_action"] if turn < 1 else "<answer>nobody</answer>"  # noqa: E731
    assert play(env, 9, {"task_id": tasks[1].task_id}, wrong) == play(plain, 9, tasks[1].options, wrong)
    with pytest.raises(ValueError, match="is not in the task set at"):
        env.reset(options={"task_id": plain.unwrapped.task_ids("test")[-1]})


def test_seeds_draw_only_the_sets_tasks_and_the_callers_kwargs_win(toolqa_set):
    env = gym.make("ToolQA-v0", tasks=toolqa_set, max_turns=2)
    ids = load_tasks(toolqa_set).task_ids
    drawn = [env.reset(seed=seed)[1]["task_id"] for seed in range(40)]
    assert set(drawn) == set(ids)
    assert [env.reset(seed=seed)[1]["task_id"] for seed in range(40)] == drawn
    assert drawn == [load_tasks(toolqa_set).make().reset(seed=seed)[1]["task_id"] for seed in range(40)]
    # max_turns=2 of the caller over the set's 6; everything else of the set kept
    assert env.unwrapped.max_turns == 2 and env.unwrapped.question_kinds == ("single_hop", "bridge")
    # the spec holds the folder, so the env can be made again from it (as vector workers do)
    again = gym.make(env.spec)
    assert again.reset(seed=3)[1]["task_id"] == drawn[3]
    vec = gym.make_vec("ToolQA-v0", num_envs=2, group_size=1, tasks=toolqa_set)
    try:
        assert set(vec.reset(seed=0)[1]["task_id"]) <= set(ids)
    finally:
        vec.close()


def test_the_env_lists_the_sets_tasks_so_runs_that_pick_task_ids_play_only_them(toolqa_set):
    from agentgym.integrations.trl import EnvironmentFactory
    from agentgym.train.base.errors import ConfigError
    from agentgym.train.config.env_check import check_env

    env = gym.make("ToolQA-v0", tasks=toolqa_set).unwrapped
    ids = load_tasks(toolqa_set).task_ids
    assert env.task_ids() == env.task_ids("test") == ids
    assert len(gym.make("ToolQA-v0", **TOOLQA).unwrapped.task_ids("test")) > len(ids)
    with pytest.raises(ValueError, match="holds no tasks of split 'train', only 'test' ones"):
        env.task_ids("train")
    # a trainer's --env-kwargs and --split, and TRL's dataset, see the same
    check_env("ToolQA-v0", {"tasks": toolqa_set}, {"--split": "test"})
    with pytest.raises(ConfigError, match="--split 'train': the task set at .* holds no tasks of split 'train'"):
        check_env("ToolQA-v0", {"tasks": toolqa_set}, {"--split": "train"})
    assert EnvironmentFactory("ToolQA-v0", {"tasks": toolqa_set}).dataset("test")["task_id"] == ids


def write_set(out, env_id, task_ids, split="test", **spec):
    """A task set folder written by hand, as another version of agentgym might have."""
    os.makedirs(os.path.join(out, "data"))
    options = [json.dumps({"task_id": t, "split": split}) for t in task_ids]
    pq.write_table(pa.table({"task_id": task_ids, "task_type": ["x"] * len(task_ids), "split": [split] * len(task_ids),
                             "options": options}), os.path.join(out, "data", f"{split}-00000-of-00001.parquet"))
    fields = {"env_id": env_id, "env_kwargs": {}, "split": split, "task_list_hash": task_list_hash(task_ids),
              "agentgym_version": "0.0.1", **spec}
    with open(os.path.join(out, "environment.yaml"), "w") as f:
        f.writelines(f"{k}: {json.dumps(v)}\n" for k, v in fields.items())
    return out


def test_what_is_not_a_set_of_this_env_is_refused_in_one_line(toolqa_set, tmp_path):
    def refused(env_id, tasks):
        with pytest.raises(ValueError) as caught:
            gym.make(env_id, tasks=tasks)
        assert "\n" not in str(caught.value)
        return str(caught.value)

    assert "is not a task set: it has no environment.yaml" in refused("ToolQA-v0", str(tmp_path))
    assert "is not a task set" in refused("ToolQA-v0", str(tmp_path / "nowhere"))
    assert "tasks must be a task set folder" in refused("ToolQA-v0", 3)
    assert "holds ToolQA-v0 tasks, which ALFWorldEnv does not play: make it with gym.make('ToolQA-v0'" in refused(
        "ALFWorld-v0", toolqa_set)
    # the same env class under another id: the long-form env has none of the short questions
    assert "are not tasks of ToolQAEnv on split 'test'" in refused("ToolQA-LongForm-v0", toolqa_set)
    # ... and an id whose registered arguments keep every task is refused by its id
    boil = str(tmp_path / "boil")
    export_tasks("ScienceWorld-v0", "dev", boil, select=["boil"], limit=2)
    assert "holds ScienceWorld-v0 tasks, not ScienceWorld-Boil-v0 ones" in refused("ScienceWorld-Boil-v0", boil)
    assert gym.make("ScienceWorld-v0", tasks=boil).unwrapped.task_set.task_ids == ["boil/14", "boil/15"]

    newer = write_set(str(tmp_path / "newer"), "ToolQA-v0", ["single-person-0001-birth_year"], task_set_format=3)
    assert "has task_set_format 3 (made by agentgym 0.0.1); agentgym 0.1.0 reads formats 1 to 2" in refused(
        "ToolQA-v0", newer)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the version differs: a warning, then the tasks are checked
        older = write_set(str(tmp_path / "older"), "ToolQA-v0", ["bridge-book-0010-author-occupation", "q-gone"])
        message = refused("ToolQA-v0", older)
        assert message.startswith("1 of the 2 tasks of the set at") and "(e.g. 'q-gone')" in message
        assert "made by agentgym 0.0.1 (this is 0.1.0)" in message
        unknown = write_set(str(tmp_path / "unknown"), "ToolQA-v9", ["q"])
        assert "holds tasks of 'ToolQA-v9', which is not a registered env id here" in refused("ToolQA-v0", unknown)
    with open(os.path.join(toolqa_set, "environment.yaml")) as f:
        text = f.read()
    broken = tmp_path / "broken"
    (broken / "data").mkdir(parents=True)
    (broken / "environment.yaml").write_text(text)
    assert "has no parquet under data/" in refused("ToolQA-v0", str(broken))
    (broken / "environment.yaml").write_text("env_id: [unclosed\n")
    assert "environment.yaml is not valid YAML" in refused("ToolQA-v0", str(broken))


@pytest.mark.engine
def test_alfworld_and_scienceworld_sets_play_as_their_splits(tmp_path):
    pytest.importorskip("alfworld")
    pytest.importorskip("scienceworld")
    alf = str(tmp_path / "alf")
    export_tasks("ALFWorld-v0", "valid_seen", alf, {"max_turns": 30}, limit=2)
    task = load_tasks(alf).tasks[1]
    env = gym.make("ALFWorld-v0", tasks=alf, expert=True)
    ours = play(env, 0, {"task_id": task.task_id}, expert)
    assert ours == play(gym.make("ALFWorld-v0", max_turns=30, expert=True), 0, task.options, expert)
    assert ours[-1][4]["success"] and ours[0][4]["admissible_actions"]
    env.close()

    sw = str(tmp_path / "sw")
    export_tasks("ScienceWorld-v0", "dev", sw, {"max_turns": 4}, limit=2)
    task = load_tasks(sw).tasks[0]
    choose = lambda turn, info: info["admissible_actions"][3 * turn]  # noqa: E731
    env, plain = gym.make("ScienceWorld-v0", tasks=sw), gym.make("ScienceWorld-v0", max_turns=4)
    try:
        ours = play(env, 1, None, choose)
        assert ours[0][4]["task_id"] in load_tasks(sw).task_ids and len(ours) == 5
        task = next(t for t in load_tasks(sw).tasks if t.task_id == ours[0][4]["task_id"])
        assert ours == play(plain, 1, task.options, choose)
    finally:
        env.close()
        plain.close()


def test_a_set_of_several_splits_plays_the_split_asked_for_and_a_shared_task_id_names_its_split(tmp_path):
    """ALFWorld's L0 games are train games: a set holding both has each L0 id twice."""
    out = str(tmp_path / "alfworld")
    export_tasks("ALFWorld-v0", "train", out, {"max_turns": 3})
    export_tasks("ALFWorld-v0", "L0", out, {"max_turns": 3})
    level = load_tasks(out, split="L0").task_ids
    env = gym.make("ALFWorld-v0", tasks=out, split="L0")
    assert env.unwrapped.task_ids() == level and 0 < len(level) < len(load_tasks(out).task_ids)
    assert {env.reset(seed=s)[1]["task_id"] for s in range(20)} <= set(level)
    both = gym.make("ALFWorld-v0", tasks=out)
    with pytest.raises(ValueError, match=r"is in splits L0, train of the task set at .*'split': NAME"):
        both.reset(seed=0, options={"task_id": level[0]})
    assert both.reset(seed=0, options={"task_id": level[0], "split": "L0"})[1]["task_id"] == level[0]
