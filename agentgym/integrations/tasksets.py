"""Task sets as Hugging Face datasets: a split's tasks, pinned, so an evaluation can be repeated.

    agentgym export-tasks ToolQA-v0 --split test --out tasks/toolqa-test
    agentgym leaderboard --agents expert --envs ToolQA-v0 --split test --tasks tasks/toolqa-test --out runs/b

``export-tasks`` writes, in the layout the Hugging Face Hub reads (``pip install "agentgym[datasets]"``):

- ``data/<split>-00000-of-00001.parquet``: one row per task: ``task_id``, ``task_type``, ``split``
  and ``options`` (the reset options that start exactly that task, as JSON);
- ``environment.yaml``: the env id and keyword arguments, the split, the task count and list hash,
  the agentgym and engine versions it was made with, and how to run it;
- ``README.md``: a dataset card whose header tells ``datasets.load_dataset`` where the parquet is.

Upload the folder as a dataset repo and pin it by revision (``huggingface_hub.snapshot_download(
repo, repo_type="dataset", revision=COMMIT)`` gives the folder back). :func:`load_tasks` reads a
folder; ``gym.make(ENV_ID, tasks=DIR)`` (or :meth:`TaskSet.make`) makes the env with the set's
keyword arguments under the caller's and plays exactly those tasks (:mod:`agentgym.envs.task_sets`);
the leaderboard's ``--tasks DIR`` plays every task of the set.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import warnings
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import gymnasium as gym

from agentgym.leaderboard.tasks import TaskRef

SPEC_FILE = "environment.yaml"
FORMAT = 1
"""The layout of the folder, written as ``task_set_format``; raised when the layout changes, so an
older agentgym refuses a set it would misread. A set without the field is format 1."""


def is_task_set(path: str) -> bool:
    return os.path.isfile(os.path.join(str(path), SPEC_FILE))


def _yaml_value(value: Any) -> str:
    # JSON is YAML: every value is written as JSON, so any YAML reader gets the exact types back.
    return json.dumps(value, sort_keys=True)


def export_tasks(env_id: str, split: str, out: str, env_kwargs: Mapping[str, Any] | None = None,
                 select: Sequence[str] | None = None, limit: int | None = None) -> "TaskSet":
    """Write the tasks of ``env_id`` on ``split`` (filtered by ``select`` globs, the first ``limit``)
    to ``out`` as a dataset; returns the :class:`TaskSet` written."""
    from datasets import Dataset

    import agentgym  # noqa: F401  registers the envs
    from agentgym.leaderboard.stamps import code_stamps, task_list_hash
    from agentgym.leaderboard.tasks import enumerate_tasks

    env_kwargs = dict(env_kwargs or {})
    if env_kwargs.get("tasks") is not None:
        raise ValueError("env kwargs of an export may not hold tasks=: export the env's own split, not another set")
    tasks = enumerate_tasks(env_id, split, env_kwargs, select, limit)
    canonical = tasks[0].options.get("split", split)
    rows = {"task_id": [t.task_id for t in tasks], "task_type": [t.task_type for t in tasks],
            "split": [canonical] * len(tasks), "options": [json.dumps(t.options, sort_keys=True) for t in tasks]}
    data_dir = os.path.join(out, "data")
    os.makedirs(data_dir, exist_ok=True)
    Dataset.from_dict(rows).to_parquet(os.path.join(data_dir, f"{canonical}-00000-of-00001.parquet"))
    stamps = code_stamps()
    spec = {"task_set_format": FORMAT, "env_id": env_id, "env_kwargs": env_kwargs, "split": canonical,
            "num_tasks": len(tasks), "task_list_hash": task_list_hash(t.task_id for t in tasks),
            "agentgym_version": stamps["agentgym_version"], "git_commit": stamps["git_commit"],
            "engines": stamps["engines"]}
    run = {"python": f'import agentgym, gymnasium as gym; env = gym.make("{env_id}", tasks="{out}")',
           "leaderboard": f"agentgym leaderboard --agents expert --envs {env_id} --split {canonical} "
                          f"--tasks {out} --out runs/board"}
    with open(os.path.join(out, SPEC_FILE), "w", encoding="utf-8") as f:
        f.write(f"# agentgym task set: {len(tasks)} tasks of {env_id}, split {canonical}\n")
        for key, value in spec.items():
            f.write(f"{key}: {_yaml_value(value)}\n")
        f.write("run:\n" + "".join(f"  {k}: {_yaml_value(v)}\n" for k, v in run.items()))
    with open(os.path.join(out, "README.md"), "w", encoding="utf-8") as f:
        f.write(f"---\nconfigs:\n- config_name: default\n  data_files:\n  - split: {canonical}\n"
                f"    path: data/{canonical}-*.parquet\n---\n\n# {env_id} tasks, split {canonical}\n\n"
                f"{len(tasks)} tasks of the agentgym env `{env_id}` (keyword arguments "
                f"`{json.dumps(env_kwargs)}`), made with agentgym {stamps['agentgym_version']}. "
                f"`{SPEC_FILE}` says how to run them; pin this dataset by revision to repeat an evaluation.\n")
    return load_tasks(out)


@dataclass
class TaskSet:
    """The tasks of one env split, read back from a folder :func:`export_tasks` wrote."""

    env_id: str
    env_kwargs: dict[str, Any]
    split: str
    tasks: list[TaskRef]
    spec: dict[str, Any] = field(default_factory=dict)
    path: str | None = None
    """The folder it was read from (None for a set made in code)."""

    @property
    def task_ids(self) -> list[str]:
        return [t.task_id for t in self.tasks]

    @property
    def where(self) -> str:
        """The folder, for messages."""
        return self.path if self.path is not None else f"(a {self.env_id} set in memory)"

    def make(self, **overrides: Any) -> gym.Env:
        """``gym.make(env_id, tasks=this set, **overrides)``: the set's env, its kwargs under
        ``overrides``; a reset without a ``task_id`` starts one of these tasks (drawn with the seed)."""
        import agentgym  # noqa: F401  registers the envs

        return gym.make(self.env_id, **{**overrides, "tasks": self})

    def refs_for(self, env_id: str, split: str) -> list[TaskRef]:
        """The tasks, for a board that plays ``env_id`` on ``split``: the set must be of both."""
        if env_id != self.env_id:
            raise ValueError(f"the task set holds {self.env_id} tasks, not {env_id} ones")
        if split != self.split and self.tasks[0].options.get("split") != split:
            raise ValueError(f"the task set holds split {self.split!r}, not {split!r}")
        return list(self.tasks)


def load_tasks(path: str) -> TaskSet:
    """Read a task set folder (``environment.yaml`` and the parquet beside it)."""
    import glob

    import pyarrow.parquet as pq  # what datasets reads parquet with, without its cache or progress bars
    import yaml

    from agentgym import __version__

    spec_path = os.path.join(str(path), SPEC_FILE)
    if not os.path.isfile(spec_path):
        raise ValueError(f"{path} is not a task set: it has no {SPEC_FILE} (write one with agentgym export-tasks)")
    try:
        with open(spec_path, encoding="utf-8") as f:
            spec = yaml.safe_load(f)
    except yaml.YAMLError as e:
        raise ValueError(f"{spec_path} is not valid YAML: {' '.join(str(e).split())}") from None
    if not isinstance(spec, dict):
        raise ValueError(f"{spec_path} is not a task set's {SPEC_FILE}: it holds no keys")
    made_with = spec.get("agentgym_version")
    form = spec.get("task_set_format", 1)
    if isinstance(form, bool) or not isinstance(form, int) or not 1 <= form <= FORMAT:
        raise ValueError(f"the task set at {path} has task_set_format {form!r} (made by agentgym {made_with}); "
                         f"agentgym {__version__} reads formats 1 to {FORMAT}: install the agentgym that made it")
    missing = {"env_id", "env_kwargs", "split", "task_list_hash"} - set(spec)
    if missing:
        raise ValueError(f"{spec_path} lacks {sorted(missing)}")
    if not isinstance(spec["env_kwargs"], dict) or "tasks" in spec["env_kwargs"]:
        raise ValueError(f"env_kwargs in {spec_path} must be a mapping without tasks=, got {spec['env_kwargs']!r}")
    files = sorted(glob.glob(os.path.join(glob.escape(str(path)), "data", "*.parquet")))
    if not files:
        raise ValueError(f"the task set at {path} has no parquet under data/ (export it again)")
    rows = [row for name in files for row in pq.read_table(name).to_pylist()]
    tasks = [TaskRef(r["task_id"], r["task_type"], json.loads(r["options"])) for r in rows]
    from agentgym.leaderboard.stamps import task_list_hash

    if task_list_hash(t.task_id for t in tasks) != spec["task_list_hash"]:
        raise ValueError(f"the tasks under {path}/data do not match the task_list_hash of its {SPEC_FILE}")
    if made_with != __version__:
        warnings.warn(f"the task set at {path} was made with agentgym {made_with}, this is {__version__}",
                      stacklevel=2)
    return TaskSet(spec["env_id"], dict(spec["env_kwargs"]), spec["split"], tasks, spec, str(path))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="agentgym export-tasks", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("env_id", help="registered env id (`agentgym list`)")
    parser.add_argument("--split", required=True, help="the split (or level) whose tasks to write")
    parser.add_argument("--out", required=True, help="folder to write the dataset into")
    parser.add_argument("--env-kwargs", default="{}", metavar="JSON", help="keyword arguments of gym.make")
    parser.add_argument("--tasks", nargs="+", default=None, help="keep tasks whose id or type matches a glob")
    parser.add_argument("--limit", type=int, default=None, help="keep the first n tasks (balanced over types)")
    args = parser.parse_args(argv)
    from agentgym.extras import require_for_script
    from agentgym.integrations.serve import check_env, env_kwargs_from_json

    require_for_script(["datasets", "yaml"], "datasets", "agentgym export-tasks")
    kwargs = env_kwargs_from_json(args.env_kwargs)
    check_env(args.env_id, kwargs)
    try:
        written = export_tasks(args.env_id, args.split, args.out, kwargs, args.tasks, args.limit)
    except ValueError as e:
        raise SystemExit(str(e)) from None
    print(f"wrote {len(written.tasks)} tasks of {args.env_id} ({written.split}) to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
