"""A split exported as a Hugging Face dataset plays back exactly the same tasks."""

import importlib.metadata
import json
import os
import shutil

import gymnasium as gym
import pytest

pytest.importorskip("datasets")
import datasets  # noqa: E402
import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

import agentgym  # noqa: E402,F401
from agentgym.cli import main  # noqa: E402
from agentgym.envs.task_refs import task_list_hash  # noqa: E402
from agentgym.integrations.tasksets import load_tasks  # noqa: E402
from agentgym.leaderboard.tasks import enumerate_tasks  # noqa: E402

TOOLQA = {"question_kinds": ["single_hop", "bridge"]}


def test_a_toolqa_split_round_trips_through_the_dataset_and_plays_only_its_tasks(tmp_path, capsys):
    out = str(tmp_path / "toolqa-test")
    assert main(["export-tasks", "ToolQA-v0", "--split", "test", "--out", out, "--env-kwargs", json.dumps(TOOLQA),
                 "--limit", "6"]) == 0
    assert capsys.readouterr().out.startswith("wrote 6 tasks of ToolQA-v0 (test)")
    expected = enumerate_tasks("ToolQA-v0", "test", TOOLQA, limit=6)
    assert sorted(os.listdir(out)) == ["README.md", "data", "environment.yaml"]

    # Hugging Face's own loader reads the folder as a dataset (the card says where the parquet is)
    loaded = datasets.load_dataset(out, split="test")
    assert loaded["task_id"] == [t.task_id for t in expected]
    assert [json.loads(o) for o in loaded["options"]] == [t.options for t in expected]

    tasks = load_tasks(out)
    assert (tasks.env_id, tasks.env_kwargs, tasks.split) == ("ToolQA-v0", TOOLQA, "test")
    assert tasks.task_ids == [t.task_id for t in expected]
    assert tasks.spec["agentgym_version"] == agentgym.__version__ and "--tasks" in tasks.spec["run"]["leaderboard"]

    env = tasks.make(expert=True)
    seen = set()
    for seed in range(30):
        obs, info = env.reset(seed=seed)
        seen.add(info["task_id"])
        assert info["split"] == "test"
    assert seen <= set(tasks.task_ids) and len(seen) > 3
    # the same seed is the same task and the same episode as the plain env playing that task
    obs, info = env.reset(seed=4)
    plain = gym.make("ToolQA-v0", **TOOLQA, expert=True)
    assert plain.reset(seed=4, options={"task_id": info["task_id"], "split": "test"})[0] == obs
    with pytest.raises(ValueError, match="is not in the task set at"):
        env.reset(options={"task_id": "no-such-task"})


def test_the_leaderboard_plays_exactly_the_exported_tasks(tmp_path):
    out = str(tmp_path / "tasks")
    main(["export-tasks", "ToolQA-v0", "--split", "valid", "--out", out, "--tasks", "single-*", "--limit", "3"])
    board = str(tmp_path / "board")
    assert main(["leaderboard", "--agents", "expert", "--envs", "ToolQA-v0", "--split", "valid",
                 "--tasks", out, "--out", board, "--no-progress"]) == 0
    played = set()
    for root, _, files in os.walk(board):
        for name in files:
            if name.endswith(".jsonl"):
                with open(os.path.join(root, name)) as f:
                    played |= {json.loads(line)["task_id"] for line in f if line.strip()}
    assert played == set(load_tasks(out).task_ids)
    summary = json.load(open(os.path.join(board, "summary.json")))
    assert summary[0]["episodes"] == summary[0]["expected_episodes"] == 3 and summary[0]["success"] == 1.0


@pytest.mark.engine
def test_the_leaderboard_plays_an_alfworld_set_on_the_games_it_carries(tmp_path):
    """A set whose ``data_path`` is a folder inside it: the board plays the set's own games (before, it
    looked the set's task ids up in the default games: every episode an ``unknown task_id`` error)."""
    pytest.importorskip("alfworld")
    from agentgym.envs.alfworld.generate import generate
    from agentgym.integrations.tasksets import export_tasks

    games = tmp_path / "made" / "games"
    generate(str(games), 3, seed=5, split="train")
    out = tmp_path / "alf"
    cwd = os.getcwd()
    os.chdir(games.parent)
    try:
        export_tasks("ALFWorld-v0", "train", str(out), {"data_path": "games", "max_turns": 30})
    finally:
        os.chdir(cwd)
    shutil.copytree(games, out / "games")
    board = tmp_path / "board"
    assert main(["leaderboard", "--agents", "expert", "--envs", "ALFWorld-v0", "--split", "train", "--tasks", str(out),
                 "--out", str(board), "--no-progress"]) == 0
    rows = [json.loads(line) for path in board.rglob("*.jsonl") for line in open(path) if line.strip()]
    assert sorted(r["task_id"] for r in rows) == sorted(load_tasks(str(out)).task_ids)
    assert all(not r.get("error") for r in rows) and all(r["success"] for r in rows)


def test_a_scienceworld_split_exports_without_an_engine_and_bad_input_is_refused(tmp_path):
    pytest.importorskip("scienceworld")
    out = str(tmp_path / "sw")
    main(["export-tasks", "ScienceWorld-v0", "--split", "dev", "--out", out, "--limit", "5"])
    tasks = load_tasks(out)
    assert tasks.task_ids == [t.task_id for t in enumerate_tasks("ScienceWorld-v0", "dev", limit=5)]
    assert all(t.options["split"] == "dev" for t in tasks.tasks)
    assert tasks.spec["engines"] == {"scienceworld": importlib.metadata.version("scienceworld")}
    with pytest.raises(ValueError, match="holds ScienceWorld-v0 tasks"):
        tasks.refs_for("ToolQA-v0", "dev")

    with pytest.raises(ValueError, match="is not a task set"):
        load_tasks(str(tmp_path))
    spec = os.path.join(out, "environment.yaml")
    text = open(spec).read()
    open(spec, "w").write(text.replace(tasks.spec["task_list_hash"], "0" * 16))
    with pytest.raises(ValueError, match="do not match the task_list_hash"):
        load_tasks(out)
    with pytest.raises(SystemExit, match="unknown env id"):
        main(["export-tasks", "Nope-v0", "--split", "test", "--out", out])


def card_header(out):
    """The YAML header of a set's dataset card."""
    import yaml

    text = open(os.path.join(out, "README.md"), encoding="utf-8").read()
    assert text.startswith("---\n")
    return yaml.safe_load(text.split("---\n")[1]), text


def test_the_tests_keep_off_the_users_hugging_face_caches():
    home = os.path.realpath(os.path.expanduser("~"))
    for path in (datasets.config.HF_DATASETS_CACHE, datasets.config.HF_CACHE_HOME, os.environ.get("HF_HOME")):
        assert path and not os.path.realpath(str(path)).startswith(home + os.sep), path


def test_a_folder_exported_again_under_the_same_name_loads_the_new_rows(tmp_path):
    # datasets keys its cache of a local folder on the folder's name and its card's file patterns,
    # not on the files' content: the export names each parquet by its content
    out = str(tmp_path / "X")
    main(["export-tasks", "ToolQA-v0", "--split", "test", "--out", out, "--tasks", "single-*", "--limit", "20"])
    first = datasets.load_dataset(out, split="test")
    assert len(first) == 20
    shutil.rmtree(out)
    main(["export-tasks", "ToolQA-v0", "--split", "test", "--out", out, "--tasks", "bridge-*", "--limit", "5"])
    again = datasets.load_dataset(out, split="test")
    assert again["task_id"] == load_tasks(out).task_ids and len(again) == 5
    assert not set(again["task_id"]) & set(first["task_id"])


def test_export_writes_only_into_an_empty_folder_or_a_task_set(tmp_path, monkeypatch):
    mine = tmp_path / "project"
    mine.mkdir()
    (mine / "README.md").write_text("my project\n")
    for out in (str(mine), "."):
        monkeypatch.chdir(mine)
        with pytest.raises(SystemExit) as caught:
            main(["export-tasks", "ToolQA-v0", "--split", "test", "--out", out, "--limit", "2"])
        assert "is not empty and is not a task set" in str(caught.value) and "\n" not in str(caught.value)
    assert sorted(os.listdir(mine)) == ["README.md"] and (mine / "README.md").read_text() == "my project\n"
    with pytest.raises(SystemExit, match="is not a folder"):
        main(["export-tasks", "ToolQA-v0", "--split", "test", "--out", str(mine / "README.md"), "--limit", "2"])
    (tmp_path / "empty").mkdir()
    assert main(["export-tasks", "ToolQA-v0", "--split", "test", "--out", str(tmp_path / "empty"), "--limit", "2"]) == 0


def test_a_set_holds_several_splits_each_loadable_by_name(tmp_path, capsys):
    out = str(tmp_path / "toolqa")
    main(["export-tasks", "ToolQA-v0", "--split", "test", "--out", out, "--limit", "4"])
    main(["export-tasks", "ToolQA-v0", "--split", "valid", "--out", out, "--limit", "3"])
    main(["export-tasks", "ToolQA-v0", "--split", "test", "--out", out, "--limit", "2"])  # replaces test
    assert "the set holds test (2 tasks), valid (3 tasks)" in capsys.readouterr().out
    assert len(os.listdir(os.path.join(out, "data"))) == 2
    test_ids = [t.task_id for t in enumerate_tasks("ToolQA-v0", "test", limit=2)]
    valid_ids = [t.task_id for t in enumerate_tasks("ToolQA-v0", "valid", limit=3)]
    assert datasets.load_dataset(out, split="test")["task_id"] == test_ids
    assert datasets.load_dataset(out, split="valid")["task_id"] == valid_ids
    header, _ = card_header(out)
    assert [f["split"] for f in header["configs"][0]["data_files"]] == ["test", "valid"]

    both = load_tasks(out)
    assert both.task_ids == test_ids + valid_ids and list(both.splits) == ["test", "valid"]
    assert {name: record["num_tasks"] for name, record in both.spec["splits"].items()} == {"test": 2, "valid": 3}
    valid = load_tasks(out, split="valid")
    assert (valid.split, valid.task_ids) == ("valid", valid_ids)
    with pytest.raises(ValueError, match=r"holds splits \['test', 'valid'\], not 'train'"):
        load_tasks(out, split="train")
    # the env plays every task of the set; task_ids(split) and a loaded split narrow it
    env = gym.make("ToolQA-v0", tasks=out)
    assert env.unwrapped.task_ids("valid") == valid_ids and env.unwrapped.task_ids("test") == test_ids
    assert {valid.make().reset(seed=s)[1]["task_id"] for s in range(20)} == set(valid_ids)
    assert [t.task_id for t in both.refs_for("ToolQA-v0", "valid")] == valid_ids

    # one env and its kwargs per set
    with pytest.raises(SystemExit, match="holds ToolQA-v0 tasks made with env kwargs {}"):
        main(["export-tasks", "ToolQA-v0", "--split", "train", "--out", out, "--env-kwargs", '{"max_turns": 3}'])
    with pytest.raises(SystemExit, match="holds ToolQA-v0 tasks"):
        main(["export-tasks", "ToolQA-LongForm-v0", "--split", "train", "--out", out, "--limit", "2"])


def test_environment_yaml_says_which_layout_it_is_and_names_only_the_engines_the_env_plays_on(tmp_path):
    out = str(tmp_path / "toolqa")
    main(["export-tasks", "ToolQA-v0", "--split", "test", "--out", out, "--limit", "2"])
    spec_file = os.path.join(out, "environment.yaml")
    one = load_tasks(out).spec
    # one split is written in the layout every agentgym that reads sets reads (format 1), and says so
    assert one["task_set_format"] == 1 and list(one["splits"]) == ["test"]
    assert ("# task_set_format 1: one split (its split, num_tasks and task_list_hash at the top as well as "
            "under splits), which an agentgym that reads only format 1 reads too; a second split makes it "
            "format 2\n") in open(spec_file).read()
    # ToolQA plays on no engine (it named textworld, alfworld and scienceworld)
    assert "engines" not in one
    main(["export-tasks", "ToolQA-v0", "--split", "valid", "--out", out, "--limit", "2"])
    two = load_tasks(out).spec
    assert two["task_set_format"] == 2 and "split" not in two
    assert "# task_set_format 2: several splits, each recorded under splits\n" in open(spec_file).read()


def test_rows_and_card_say_what_each_task_is(tmp_path):
    out = str(tmp_path / "toolqa")
    main(["export-tasks", "ToolQA-v0", "--split", "test", "--out", out, "--limit", "3"])
    rows = datasets.load_dataset(out, split="test")
    assert rows.column_names == ["task_id", "task_type", "split", "instruction", "options"]
    env = gym.make("ToolQA-v0")
    for row in rows:
        assert env.reset(options=json.loads(row["options"]))[1]["instruction"] == row["instruction"]
        assert row["instruction"].endswith("?") and row["split"] == "test"
    header, text = card_header(out)
    assert header["license"] == "apache-2.0" and "agentgym" in header["tags"] and "toolqa" in header["tags"]
    assert "question-answering" in header["task_categories"] and header["size_categories"] == ["n<1K"]
    for column in rows.column_names:
        assert f"`{column}`" in text
    assert "environment.yaml" in text and 'gym.make("ToolQA-v0", tasks=' in text


def write_legacy_set(out, env_id, task_ids, split="test"):
    """A task set as agentgym wrote it before sets held several splits (task_set_format 1)."""
    os.makedirs(os.path.join(out, "data"))
    options = [json.dumps({"task_id": t, "split": split}) for t in task_ids]
    pq.write_table(pa.table({"task_id": task_ids, "task_type": ["x"] * len(task_ids), "split": [split] * len(task_ids),
                             "options": options}), os.path.join(out, "data", f"{split}-00000-of-00001.parquet"))
    with open(os.path.join(out, "environment.yaml"), "w") as f:
        for key, value in {"task_set_format": 1, "env_id": env_id, "env_kwargs": {}, "split": split,
                           "num_tasks": len(task_ids), "task_list_hash": task_list_hash(task_ids),
                           "agentgym_version": agentgym.__version__}.items():
            f.write(f"{key}: {json.dumps(value)}\n")
    return out


def test_a_set_in_the_one_split_layout_still_loads_and_takes_more_splits(tmp_path):
    ids = [t.task_id for t in enumerate_tasks("ToolQA-v0", "test", limit=3)]
    out = write_legacy_set(str(tmp_path / "old"), "ToolQA-v0", ids)
    assert load_tasks(out).task_ids == ids and load_tasks(out, split="test").task_ids == ids
    assert gym.make("ToolQA-v0", tasks=out).unwrapped.task_ids() == ids
    with pytest.raises(ValueError, match=r"holds splits \['test'\], not 'valid'"):
        load_tasks(out, split="valid")
    main(["export-tasks", "ToolQA-v0", "--split", "valid", "--out", out, "--limit", "2"])
    both = load_tasks(out)
    assert list(both.splits) == ["test", "valid"] and load_tasks(out, split="test").task_ids == ids
    assert datasets.load_dataset(out, split="test")["instruction"][0].endswith("?")


def test_an_alfworld_split_is_named_as_asked(tmp_path):
    pytest.importorskip("alfworld")
    out = str(tmp_path / "alf")
    assert main(["export-tasks", "ALFWorld-v0", "--split", "test", "--out", out, "--limit", "2"]) == 0
    rows = datasets.load_dataset(out, split="test")
    assert len(rows) == 2 and set(rows["split"]) == {"test"}
    tasks = load_tasks(out)
    assert tasks.split == "test" and all(t.options["split"] == "valid_unseen" for t in tasks.tasks)
    assert tasks.spec["engines"] == {name: importlib.metadata.version(name) for name in ("alfworld", "textworld")}
    assert [t.task_id for t in tasks.refs_for("ALFWorld-v0", "test")] == tasks.task_ids
    env = gym.make("ALFWorld-v0", tasks=out)
    try:
        for row in rows:
            assert env.reset(options={"task_id": row["task_id"]})[1]["instruction"] == row["instruction"]
    finally:
        env.close()


def rewrite_spec(folder, **changes):
    """Change keys of a set's environment.yaml (a value of None removes the key)."""
    import yaml

    path = os.path.join(folder, "environment.yaml")
    spec = yaml.safe_load(open(path, encoding="utf-8"))
    for key, value in changes.items():
        if value is None:
            spec.pop(key, None)
        else:
            spec[key] = value
    with open(path, "w", encoding="utf-8") as f:
        f.writelines(f"{key}: {json.dumps(value)}\n" for key, value in spec.items())


def the_parquet(folder):
    (name,) = os.listdir(os.path.join(folder, "data"))
    return os.path.join(folder, "data", name)


def write_rows(folder, **columns):
    """Replace the set's parquet by a table of ``columns`` (pyarrow infers the types)."""
    pq.write_table(pa.table(columns), the_parquet(folder))


def spec_text(text: str | bytes):
    def write(folder):
        mode = "wb" if isinstance(text, bytes) else "w"
        with open(os.path.join(folder, "environment.yaml"), mode) as f:
            f.write(text)
    return write


def edit_split_record(**changes):
    def edit(folder):
        import yaml

        splits = yaml.safe_load(open(os.path.join(folder, "environment.yaml"))).get("splits") or {}
        rewrite_spec(folder, splits={name: {**record, **changes} for name, record in splits.items()})
    return edit


def swap_parquet_for_a_folder(folder):
    path = the_parquet(folder)
    os.remove(path)
    os.mkdir(path)


GOOD_IDS = ["bridge-book-0010-author-occupation"]  # the first task of ToolQA's test split
MALFORMED_SETS = {
    "no environment.yaml": lambda d: os.remove(os.path.join(d, "environment.yaml")),
    "environment.yaml is a folder": lambda d: (os.remove(os.path.join(d, "environment.yaml")),
                                               os.mkdir(os.path.join(d, "environment.yaml"))),
    "environment.yaml not UTF-8": spec_text(b"env_id: \xff\xfe\x80\n"),
    "environment.yaml not YAML": spec_text("env_id: [unclosed\n"),
    "environment.yaml a list": spec_text("- 1\n- 2\n"),
    "environment.yaml empty": spec_text(""),
    "a python tag": spec_text("env_id: !!python/object/apply:os.system ['echo planted']\n"),
    "deep nesting": spec_text("env_id: " + "[" * 50_000 + "]" * 50_000 + "\n"),
    "a 2 MB file": spec_text('env_id: "' + "x" * 2_000_000 + '"\n'),
    "format a string": lambda d: rewrite_spec(d, task_set_format="two"),
    "format newer": lambda d: rewrite_spec(d, task_set_format=99),
    "no env_id": lambda d: rewrite_spec(d, env_id=None),
    "env_id a number": lambda d: rewrite_spec(d, env_id=5),
    "env_id 100 kB": lambda d: rewrite_spec(d, env_id="E" * 100_000),
    "env_id not registered": lambda d: rewrite_spec(d, env_id="Nope-v0"),
    "env_kwargs a list": lambda d: rewrite_spec(d, env_kwargs=[1, 2]),
    "env_kwargs a 100 kB string": lambda d: rewrite_spec(d, env_kwargs="k" * 100_000),
    "env_kwargs with number keys": lambda d: open(os.path.join(d, "environment.yaml"), "a").write(
        "env_kwargs: {1: 2}\n"),
    "env_kwargs holding a date": lambda d: open(os.path.join(d, "environment.yaml"), "a").write(
        "env_kwargs: {max_turns: 2024-01-01}\n"),
    "env_kwargs holding tasks": lambda d: rewrite_spec(d, env_kwargs={"tasks": "elsewhere"}),
    "task_list_hash wrong": lambda d: rewrite_spec(d, task_list_hash="0" * 16),
    "task_list_hash a list": lambda d: rewrite_spec(d, task_list_hash=[1]),
    "splits a list": lambda d: rewrite_spec(d, splits=[1]),
    "split named with a space": lambda d: rewrite_spec(d, splits={"te st": {"file": "data/x.parquet"}}),
    "split file outside the set": edit_split_record(file="../../outside.parquet"),
    "split file an absolute path": edit_split_record(file="/etc/hostname"),
    "split num_tasks wrong": edit_split_record(num_tasks=7),
    "split task_list_hash wrong": edit_split_record(task_list_hash="0" * 16),
    "split num_tasks a string": edit_split_record(num_tasks="one"),
    "no parquet": lambda d: os.remove(the_parquet(d)),
    "parquet is a folder": swap_parquet_for_a_folder,
    "parquet not parquet": lambda d: open(the_parquet(d), "wb").write(b"PAR1 not a parquet file PAR1"),
    "parquet empty file": lambda d: open(the_parquet(d), "wb").close(),
    "no options column": lambda d: write_rows(d, task_id=GOOD_IDS, task_type=["x"]),
    "task_id numbers": lambda d: write_rows(d, task_id=[1], task_type=["x"], options=["{}"]),
    "task_id null": lambda d: write_rows(d, task_id=pa.array([None], pa.string()), task_type=["x"], options=["{}"]),
    "options not JSON": lambda d: write_rows(d, task_id=GOOD_IDS, task_type=["x"], options=["{"]),
    "options a list": lambda d: write_rows(d, task_id=GOOD_IDS, task_type=["x"], options=["[1]"]),
    "options nested deep": lambda d: write_rows(d, task_id=GOOD_IDS, task_type=["x"],
                                                options=["[" * 100_000 + "]" * 100_000]),
    "a 1 MB task id": lambda d: write_rows(d, task_id=["q" * 1_000_000], task_type=["x"], options=["{}"]),
    "duplicate task ids": lambda d: write_rows(d, task_id=GOOD_IDS * 2, task_type=["x"] * 2, options=["{}"] * 2),
    "no rows": lambda d: write_rows(d, task_id=pa.array([], pa.string()), task_type=pa.array([], pa.string()),
                                    options=pa.array([], pa.string())),
}


@pytest.mark.slow
def test_malformed_task_sets_are_refused_in_one_short_line(tmp_path):
    good = str(tmp_path / "good")
    main(["export-tasks", "ToolQA-v0", "--split", "test", "--out", good, "--limit", "1"])
    assert load_tasks(good).task_ids == GOOD_IDS
    problems = []

    def one_line(case, route, call, kind):
        try:
            call()
        except kind as e:
            message = str(e.code if isinstance(e, SystemExit) else e)
            if "\n" in message or len(message) > 600 or not message:
                problems.append(f"{case} / {route}: {len(message)} chars: {message[:300]!r}")
        except BaseException as e:  # noqa: BLE001  what a user would see as a traceback
            problems.append(f"{case} / {route}: {type(e).__name__}: {str(e)[:200]}")
        else:
            problems.append(f"{case} / {route}: accepted")

    for case, mutate in MALFORMED_SETS.items():
        folder = str(tmp_path / case.replace(" ", "_"))
        shutil.copytree(good, folder)
        mutate(folder)
        one_line(case, "load_tasks", lambda folder=folder: load_tasks(folder), ValueError)
        one_line(case, "gym.make", lambda folder=folder: gym.make("ToolQA-v0", tasks=folder), ValueError)
        one_line(case, "export-tasks", lambda folder=folder: main(["export-tasks", "ToolQA-v0", "--split", "valid", "--out", folder,
                                                     "--limit", "1"]), SystemExit)
    assert not problems, "\n".join(problems)


def test_a_yaml_alias_bomb_is_refused_before_it_grows(tmp_path):
    import tracemalloc

    good = str(tmp_path / "good")
    main(["export-tasks", "ToolQA-v0", "--split", "test", "--out", good, "--limit", "1"])
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for prev, name in zip("abcdefgh", "bcdefghi"):
        lines.append(f"{name}: &{name} [" + ",".join([f"*{prev}"] * 9) + "]")
    bomb = "\n".join(lines + ['env_id: "ToolQA-v0"', "env_kwargs: *i", 'split: "test"', 'task_list_hash: "x"']) + "\n"
    assert len(bomb) < 1000
    with open(os.path.join(good, "environment.yaml"), "w") as f:
        f.write(bomb)
    tracemalloc.start()
    try:
        for load in (lambda: load_tasks(good), lambda: gym.make("ToolQA-v0", tasks=good)):
            with pytest.raises(ValueError, match="YAML anchors and aliases") as caught:
                load()
            assert "\n" not in str(caught.value) and len(str(caught.value)) < 400
        assert tracemalloc.get_traced_memory()[1] < 20_000_000
    finally:
        tracemalloc.stop()


def test_a_split_that_unpacks_past_the_cap_is_refused_before_it_is_read(tmp_path, monkeypatch):
    from agentgym.envs import task_set_reading

    out = str(tmp_path / "set")
    main(["export-tasks", "ToolQA-v0", "--split", "test", "--out", out, "--limit", "1"])
    write_rows(out, task_id=GOOD_IDS, task_type=["x"], options=["{}" + " " * 3_000_000])
    assert os.path.getsize(the_parquet(out)) < 1_000_000
    monkeypatch.setattr(task_set_reading, "MAX_PARQUET_BYTES", 2_000_000)
    with pytest.raises(ValueError, match=r"unpacks to 3000\d\d\d bytes, more than a task set's 2000000"):
        load_tasks(out)
