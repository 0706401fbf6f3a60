"""Task sets as Hugging Face datasets: an env's splits' tasks, pinned, so an evaluation can be repeated.

    agentgym export-tasks ToolQA-v0 --split test --out tasks/toolqa
    agentgym export-tasks ToolQA-v0 --split valid --out tasks/toolqa      # a second split, same set
    agentgym leaderboard --agents expert --envs ToolQA-v0 --split test --tasks tasks/toolqa --out runs/b

``export-tasks`` writes, in the layout the Hugging Face Hub reads (``pip install "agentgym[datasets]"``):

- ``data/<split>-<digest>.parquet``, one per split: one row per task: ``task_id``, ``task_type``,
  ``split`` (as named at export), ``instruction`` (the task in words) and ``options`` (the reset
  options that start exactly that task, as JSON). ``<digest>`` is the file's SHA-256, so a folder
  whose tasks change gets a new Hugging Face ``datasets`` cache entry (that cache keys a local
  folder on its name and its card's file names, not on what the files hold);
- ``environment.yaml``: the env id and keyword arguments, each split's file, task count, list hash
  and agentgym version, the versions of the engines its tasks play on (ALFWorld's, ScienceWorld's),
  and how to run it;
- ``README.md``: a dataset card (:mod:`agentgym.integrations.task_card`) whose header lists each
  split's parquet for ``datasets.load_dataset``, with license, tags and what each column is.

It writes only into a new or empty folder or an existing set of the same env and keyword
arguments: a second split is added beside the first, the same split again replaces it.

Upload the folder as a dataset repo and pin it by revision (``huggingface_hub.snapshot_download(
repo, repo_type="dataset", revision=COMMIT)`` gives the folder back). :func:`load_tasks` reads a
folder (every split, or ``split=``); ``gym.make(ENV_ID, tasks=DIR)`` (or :meth:`TaskSet.make`)
makes the env with the set's keyword arguments under the caller's and plays exactly those tasks
(:mod:`agentgym.envs.task_sets`); the leaderboard's ``--tasks DIR`` plays every task of its split.
Reading is safe whatever the folder holds: sizes are checked before reading, YAML anchors and
aliases are refused, and every refusal is one ``ValueError`` line.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import sys
from collections.abc import Mapping, Sequence
from typing import Any

import gymnasium as gym

from agentgym.envs.data_settings import DATA_PATHS, DataSettingError, check_data_env_kwargs
from agentgym.envs.env_ids import registered_env_id
from agentgym.envs.scienceworld.tasks import TASKS
from agentgym.envs.task_refs import TaskRef, task_list_hash
from agentgym.envs.task_set_reading import (
    FORMAT,
    SPEC_FILE,
    TaskSet,
    check_split_name,
    is_task_set,
    load_tasks,
    one_line,
    short_repr,
)
from agentgym.extras import require_for_script
from agentgym.integrations.serve import check_env, env_kwargs_from_json
from agentgym.integrations.task_card import card_text
from agentgym.leaderboard.stamps import FAMILY_ENGINES, code_stamps
from agentgym.leaderboard.tasks import OTHER, enumerate_tasks, env_module, family

__all__ = ["FORMAT", "SPEC_FILE", "TaskSet", "describe_tasks", "export_tasks", "is_task_set", "load_tasks", "main"]


def _yaml_value(value: Any) -> str:
    # JSON is YAML: every value is written as JSON, so any YAML reader gets the exact types back.
    return json.dumps(value, sort_keys=True)


# ----- writing ------------------------------------------------------------------------------
def export_tasks(env_id: str, split: str, out: str, env_kwargs: Mapping[str, Any] | None = None,
                 select: Sequence[str] | None = None, limit: int | None = None) -> TaskSet:
    """Write the tasks of ``env_id`` on ``split`` (filtered by ``select`` globs, the first ``limit``)
    into the set at ``out`` (a new or empty folder, or a set of the same env and kwargs, whose
    other splits are kept); returns the split written, as a :class:`TaskSet`."""
    out = os.fspath(out)
    env_kwargs = dict(env_kwargs or {})
    if env_kwargs.get("tasks") is not None:
        raise ValueError("env kwargs of an export may not hold tasks=: export the env's own split, not another set")
    _check_carried(env_kwargs)
    check_split_name(split)
    kept = _splits_already_there(out, env_id, env_kwargs)
    tasks = enumerate_tasks(env_id, split, env_kwargs, select, limit)
    stamps = code_stamps()
    # every row first, so that a task the env cannot describe leaves the folder as it was
    records: dict[str, Any] = {}
    for name, (record, refs, made_by) in {**kept, split: (None, tasks, stamps)}.items():
        if name == split:
            records[name] = _split_rows(env_id, env_kwargs, name, tasks, stamps)
        elif record is None:  # a split of format 1, written before rows held the task in words
            records[name] = _split_rows(env_id, env_kwargs, name, refs, made_by)
        else:
            records[name] = record
    os.makedirs(os.path.join(out, "data"), exist_ok=True)
    records = {name: _write_split(out, name, *r) if isinstance(r, tuple) else r for name, r in records.items()}
    _write_file(os.path.join(out, "README.md"), card_text(env_id, env_kwargs, records, stamps["agentgym_version"]))
    _write_file(os.path.join(out, SPEC_FILE), _spec_text(out, env_id, env_kwargs, records, stamps))
    listed = {os.path.normpath(r["file"]) for r in records.values()}
    for name in os.listdir(os.path.join(out, "data")):  # a replaced split's file, or a format-1 set's
        if name.endswith(".parquet") and os.path.join("data", name) not in listed:
            os.remove(os.path.join(out, "data", name))
    return load_tasks(out, split=split)


def _check_carried(env_kwargs: Mapping[str, Any]) -> None:
    """A ``ValueError`` when ``env_kwargs`` holds a key a set may not carry (a loader would refuse
    the set: :mod:`agentgym.envs.data_settings`); paths are checked when the set is loaded, against
    its folder."""
    try:
        check_data_env_kwargs({k: v for k, v in env_kwargs.items() if k not in DATA_PATHS}, "the export")
    except DataSettingError as e:
        raise ValueError(f"a task set carries only env settings that shape the task, and {e.key!r} does not "
                         f"({e.why}): leave it out of --env-kwargs and pass it "
                         "when you make the env from the set") from None


def _splits_already_there(out: str, env_id: str, env_kwargs: dict) -> dict[str, tuple[dict | None, list, dict]]:
    """The splits of the set at ``out`` to keep beside a new one: name -> (its record, or None for a
    format-1 split whose file is written again; its tasks; the agentgym that made it). A folder
    that is not a set must be empty; a set must be of ``env_id`` and ``env_kwargs``."""
    if not os.path.exists(out):
        return {}
    if not os.path.isdir(out):
        raise ValueError(f"--out {out} is not a folder: name a new or empty folder, or a task set's")
    if not is_task_set(out):
        if os.listdir(out):
            raise ValueError(f"{out} is not empty and is not a task set (it has no {SPEC_FILE}): "
                             "export into a new or empty folder")
        return {}
    try:
        old = load_tasks(out)
    except ValueError as e:
        raise ValueError(f"{out} holds a task set that does not load ({e}); export into another folder, "
                         "or remove that one first") from None
    if old.env_id != env_id:
        raise ValueError(f"{out} holds {old.env_id} tasks; a set holds one env's tasks: export {env_id} into "
                         "another folder")
    if _yaml_value(old.env_kwargs) != _yaml_value(env_kwargs):
        raise ValueError(f"{out} holds {old.env_id} tasks made with env kwargs {json.dumps(old.env_kwargs)[:300]}, "
                         f"not {json.dumps(env_kwargs)[:300]}: a set holds tasks of one env made one way; export "
                         "with its kwargs, or into another folder")
    records = old.spec.get("splits")
    made_by = {"agentgym_version": old.spec.get("agentgym_version"), "git_commit": old.spec.get("git_commit")}
    return {name: (records[name] if isinstance(records, dict) else None, refs, made_by)
            for name, refs in old.splits.items()}


def _write_file(path: str, text: str | bytes) -> None:
    """Write whole or not at all: a reader never sees half a file."""
    tmp = os.path.join(os.path.dirname(path), f".{os.path.basename(path)}.tmp")
    with open(tmp, "wb") as f:
        f.write(text.encode("utf-8") if isinstance(text, str) else text)
    os.replace(tmp, path)


def _split_rows(env_id: str, env_kwargs: dict, split: str, tasks: list[TaskRef],
                stamps: Mapping[str, Any]) -> tuple[Any, dict[str, Any]]:
    """One split's rows (a pyarrow table) and its record for ``environment.yaml``, less its file."""
    import pyarrow as pa

    texts, license_id = describe_tasks(env_id, env_kwargs, tasks)
    table = pa.table({"task_id": [t.task_id for t in tasks], "task_type": [t.task_type for t in tasks],
                      "split": [split] * len(tasks), "instruction": texts,
                      "options": [json.dumps(t.options, sort_keys=True) for t in tasks]})
    return table, {"num_tasks": len(tasks), "task_list_hash": task_list_hash(t.task_id for t in tasks),
                   "license": license_id, "agentgym_version": stamps.get("agentgym_version"),
                   "git_commit": stamps.get("git_commit")}


def _write_split(out: str, split: str, table: Any, record: dict[str, Any]) -> dict[str, Any]:
    """The split's parquet, named by its content; returns its record with the file."""
    import pyarrow.parquet as pq

    tmp = os.path.join(out, "data", f".{split}.parquet.tmp")
    pq.write_table(table, tmp)
    digest = hashlib.sha256()
    with open(tmp, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    name = f"data/{split}-{digest.hexdigest()[:16]}.parquet"
    os.replace(tmp, os.path.join(out, name))
    return {"file": name, **record}


LAYOUTS = {1: "one split (its split, num_tasks and task_list_hash at the top as well as under splits), which an "
              "agentgym that reads only format 1 reads too; a second split makes it format 2",
           2: "several splits, each recorded under splits"}
"""What each ``task_set_format`` written here means, said in the file (:data:`FORMAT`)."""


def _spec_text(out: str, env_id: str, env_kwargs: dict, records: dict[str, dict], stamps: Mapping[str, Any]) -> str:
    first = next(iter(records))
    form = 1 if len(records) == 1 else 2
    spec: dict[str, Any] = {"task_set_format": form, "env_id": env_id, "env_kwargs": env_kwargs, "splits": records}
    if len(records) == 1:  # what a format-1 reader looks for
        spec.update(split=first, num_tasks=records[first]["num_tasks"], task_list_hash=records[first]["task_list_hash"])
    spec.update(agentgym_version=stamps["agentgym_version"], git_commit=stamps["git_commit"])
    engines = FAMILY_ENGINES.get(family(env_id), ())
    if engines:  # what the tasks play on (ToolQA and a user's env: no engine of ours)
        spec["engines"] = {name: stamps["engines"].get(name) for name in engines}
    module = env_module(env_id)  # a user's env: its module registers it
    imports = f"import agentgym, {module}" if module else "import agentgym"
    run = {"python": f'{imports}, gymnasium as gym; env = gym.make("{env_id}", tasks="{out}")',
           "python_one_split": f'{imports}; from agentgym.integrations.tasksets import load_tasks; '
                               f'env = load_tasks("{out}", split="{first}").make()',
           "leaderboard": f"agentgym leaderboard --agents expert --envs {f'{module}:' if module else ''}{env_id} "
                          f"--split {first} --tasks {out} --out runs/board"}
    counts = ", ".join(f"{name} ({r['num_tasks']} tasks)" for name, r in records.items())
    return (f"# agentgym task set: {env_id}, splits {counts}\n# task_set_format {form}: {LAYOUTS[form]}\n"
            + "".join(f"{key}: {_yaml_value(value)}\n" for key, value in spec.items())
            + "run:\n" + "".join(f"  {k}: {_yaml_value(v)}\n" for k, v in run.items()))


def describe_tasks(env_id: str, env_kwargs: Mapping[str, Any], tasks: Sequence[TaskRef]) -> tuple[list[str], str]:
    """Each task in words, and the license of the data they come from (a Hub license id).

    ToolQA: the question; ALFWorld: the goal; both as ``info["instruction"]`` at reset.
    ScienceWorld: the task's title and variation (the engine words a variation only once it is
    loaded, which takes a JVM). A user's env: ``info["instruction"]`` of a reset into each task,
    under the license ``other`` (its data's license is its author's to state)."""
    kind = family(env_id)
    if kind == OTHER:
        return _instructions_at_reset(env_id, env_kwargs, tasks), "other"
    if kind == "scienceworld":
        titles = {name: (number, title) for name, number, title in TASKS}
        texts = []
        for t in tasks:
            name, _, variation = t.task_id.partition("/")
            number, title = titles.get(name, ("?", name))
            texts.append(f"{title} (ScienceWorld task {number}, variation {variation})")
        return texts, "apache-2.0"
    env = gym.make(env_id, **{**env_kwargs, "expert": False})
    try:
        inner = env.unwrapped
        by_split: dict[str, dict[str, str]] = {}
        generated = True
        for split in dict.fromkeys(str(t.options.get("split", "")) for t in tasks):
            if kind == "toolqa":
                by_split[split] = {q.id: q.question for q in inner.data.questions(split)}
            else:
                games = {g.task_id: g.path for g in inner.games_in(split)}
                wanted = {t.task_id for t in tasks if str(t.options.get("split", "")) == split}
                by_split[split] = {i: _alfworld_goal(games[i]) for i in wanted if i in games}
                generated = generated and all(_alfworld_generated(games[i]) for i in wanted if i in games)
    finally:
        env.close()
    texts = []
    for t in tasks:
        text = by_split[str(t.options.get("split", ""))].get(t.task_id)
        if text is None:
            raise ValueError(f"{env_id} has no task {short_repr(t.task_id)} on split "
                             f"{short_repr(t.options.get('split'))} "
                             "with these kwargs: export the split again into a new folder")
        texts.append(text)
    if kind == "toolqa":
        return texts, "other" if env_kwargs.get("dataset") is not None else "apache-2.0"
    return texts, "apache-2.0" if generated else "mit"


def _instructions_at_reset(env_id: str, env_kwargs: Mapping[str, Any], tasks: Sequence[TaskRef]) -> list[str]:
    """``info["instruction"]`` at a reset into each task, one env per split the tasks name."""
    texts = []
    envs: dict[str, Any] = {}
    try:
        for t in tasks:
            split = str(t.options.get("split", ""))
            if split not in envs:
                envs[split] = gym.make(env_id, **{**env_kwargs, **({"split": split} if split else {}), "expert": False})
            try:
                _, info = envs[split].reset(options=dict(t.options))
            except (ValueError, KeyError) as e:
                raise ValueError(f"{env_id} cannot start its own task {short_repr(t.task_id)} "
                                 f"(reset options {short_repr(t.options)}): {e}") from None
            texts.append(str(info.get("instruction", "")))
    finally:
        for env in envs.values():
            env.close()
    return texts


_GOAL = re.compile(r'Your task is to: ((?:[^"\\]|\\.)*)"')


def _alfworld_goal(game_file: str) -> str:
    """An ALFWorld game's goal, as the env's ``info["instruction"]`` gives it: the grammar's task
    line (the sentence the game states at its start), else the task description of ``traj_data.json``."""
    try:
        with open(game_file, encoding="utf-8") as f:
            game = json.load(f)
    except (OSError, ValueError):  # the env says what is wrong with the game when it plays it
        game = None
    grammar = game.get("grammar") if isinstance(game, dict) else None
    match = _GOAL.search(grammar if isinstance(grammar, str) else json.dumps(grammar))
    if match:  # the env cuts one final period, as here
        return re.sub(r"\.?\s*$", "", json.loads(f'"{match.group(1)}"'), count=1)
    try:
        with open(os.path.join(os.path.dirname(game_file), "traj_data.json"), encoding="utf-8") as f:
            return str(json.load(f)["turk_annotations"]["anns"][0]["task_desc"]).rstrip(".")
    except (OSError, ValueError, KeyError, IndexError, TypeError):
        return ""


def _alfworld_generated(game_file: str) -> bool:
    """Whether agentgym's generator made the game (else it is ALFWorld's own data)."""
    try:
        with open(os.path.join(os.path.dirname(game_file), "traj_data.json"), encoding="utf-8") as f:
            return (json.load(f).get("generator") or {}).get("name") == "agentgym"
    except (OSError, ValueError, AttributeError):
        return False


# ----- the command --------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="agentgym export-tasks", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("env_id", help="registered env id (`agentgym list`), or module:EnvId for a user's env")
    parser.add_argument("--split", required=True, help="the split (or level) whose tasks to write; the set names it so")
    parser.add_argument("--out", required=True, help="a new or empty folder, or a task set of the same env and "
                                                     "kwargs (the split is added to it, or replaces its namesake)")
    parser.add_argument("--env-kwargs", default="{}", metavar="JSON", help="keyword arguments of gym.make")
    parser.add_argument("--tasks", nargs="+", default=None, help="keep tasks whose id or type matches a glob")
    parser.add_argument("--limit", type=int, default=None, help="keep the first n tasks (balanced over types)")
    args = parser.parse_args(argv)
    require_for_script(["pyarrow", "yaml"], "datasets", "agentgym export-tasks")
    import pyarrow as pa

    kwargs = env_kwargs_from_json(args.env_kwargs)
    try:
        check_split_name(args.split)
    except ValueError as e:
        raise SystemExit(f"--split: {e}") from None
    try:
        env_id = registered_env_id(args.env_id)  # a user's env as module:EnvId
    except ValueError as e:
        raise SystemExit(f"agentgym export-tasks: {e}") from None
    check_env(env_id, kwargs)
    try:
        written = export_tasks(env_id, args.split, args.out, kwargs, args.tasks, args.limit)
        whole = load_tasks(args.out)
    except ValueError as e:
        raise SystemExit(str(e)) from None
    except (OSError, pa.ArrowException) as e:
        raise SystemExit(f"cannot write the task set to {args.out}: {getattr(e, 'strerror', None) or one_line(e)}") \
            from None
    counts = ", ".join(f"{name} ({len(refs)} tasks)" for name, refs in whole.splits.items())
    print(f"wrote {len(written.tasks)} tasks of {env_id} ({written.split}) to {args.out}; the set holds {counts}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
