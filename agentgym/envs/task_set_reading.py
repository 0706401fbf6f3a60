"""Reading a task set folder (what ``agentgym export-tasks`` writes, :mod:`agentgym.integrations.tasksets`):
:func:`load_tasks` gives a :class:`TaskSet`, every split of it or one. Envs read sets here
(``tasks=``, :mod:`agentgym.envs.task_sets`); the integrations write them and export this reader.

A set can come from anyone (a Hugging Face Hub dataset), so reading is safe whatever the folder
holds: sizes are checked before anything is read or unpacked, YAML anchors and aliases and tags
that build objects are refused, files must lie inside the set's ``data/``, every value is checked
for its type and length, and counts and hashes must agree with ``environment.yaml``. Every
refusal is one ``ValueError`` line that shows at most a short prefix of any value.
"""

from __future__ import annotations

import glob
import json
import os
import re
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym

import agentgym.envs  # noqa: F401  registers the env ids a set names
from agentgym import __version__
from agentgym.envs.task_refs import TaskRef, task_list_hash

SPEC_FILE = "environment.yaml"
FORMAT = 2
"""The newest layout this agentgym reads, written as ``task_set_format``; raised when the layout
changes, so an older agentgym refuses a set it would misread. Format 1: one split, its parquet the
files under ``data/``; format 2: several splits, each recorded under ``splits``. A set of one split
is written as format 1 (a format-1 reader reads it right); a set without the field is format 1."""

SPLIT_NAME = re.compile(r"^\w+(\.\w+)*$")
"""What a split may be called: the names Hugging Face ``datasets`` takes."""
MAX_SPEC_BYTES = 1 << 20
"""``environment.yaml`` is a few hundred bytes; a larger one is refused before it is read."""
MAX_PARQUET_BYTES = 256 << 20
"""Of a split's file, on disk and of the columns loading reads once decompressed (the largest
split here, with its text, is a few MB)."""
MAX_TASKS = 1_000_000
"""Per split; the largest split of any env here holds about 7,000 tasks."""
MAX_ID_CHARS = 1000
"""Of a ``task_id`` or ``task_type``."""
MAX_OPTIONS_CHARS = 100_000
READ_COLUMNS = ("task_id", "task_type", "options")
"""What loading needs (sets of format 1 have no ``instruction``)."""


def is_task_set(path: str) -> bool:
    return os.path.isfile(os.path.join(str(path), SPEC_FILE))


def short_repr(value: Any, limit: int = 60) -> str:
    """``repr(value)``, cut to ``limit`` characters: what an error shows of a value read from a file."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


def one_line(error: BaseException, limit: int = 200) -> str:
    text = " ".join(str(error).split()) or type(error).__name__
    return text if len(text) <= limit else text[:limit] + "..."


def check_split_name(split: Any) -> str:
    if not isinstance(split, str) or len(split) > 100 or not SPLIT_NAME.match(split):
        raise ValueError(f"split names are letters, digits, '_' and '.' (what Hugging Face datasets takes), "
                         f"got {short_repr(split)}")
    return split


@dataclass
class TaskSet:
    """Tasks of an env read back from a folder ``agentgym export-tasks`` wrote: one split, or several."""

    env_id: str
    env_kwargs: dict[str, Any]
    split: str
    """The split's name; for a set loaded with several splits, their names joined by ", "."""
    tasks: list[TaskRef]
    """Every task, split after split."""
    spec: dict[str, Any] = field(default_factory=dict)
    path: str | None = None
    """The folder it was read from (None for a set made in code)."""
    splits: dict[str, list[TaskRef]] = field(default_factory=dict)
    """Split name -> its tasks (one entry, ``split``, unless loaded with several)."""

    def __post_init__(self):
        if not self.splits:
            self.splits = {self.split: list(self.tasks)}

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
        return gym.make(self.env_id, **{**overrides, "tasks": self})

    def refs_for(self, env_id: str, split: str) -> list[TaskRef]:
        """The tasks of a board that plays ``env_id`` on ``split``: the set's split of that name, or
        its tasks that start on that split of the env (``valid_unseen`` for ALFWorld's ``test``)."""
        if env_id != self.env_id:
            raise ValueError(f"the task set holds {self.env_id} tasks, not {env_id} ones")
        if split in self.splits:
            return list(self.splits[split])
        refs = [t for t in self.tasks if t.options.get("split") == split]
        if not refs:
            raise ValueError(f"the task set holds splits {list(self.splits)}, not {split!r}")
        return refs


def _no_alias_loader():
    import yaml

    class NoAliasLoader(yaml.SafeLoader):
        """Safe YAML without anchors and aliases: an alias makes a small file a huge structure."""

        def compose_node(self, parent, index):
            event = self.peek_event()
            if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
                raise yaml.composer.ComposerError(None, None, "YAML anchors and aliases are not allowed here",
                                                  event.start_mark)
            return super().compose_node(parent, index)

    return NoAliasLoader


def _read_spec(spec_path: str) -> dict[str, Any]:
    import yaml

    try:
        size = os.path.getsize(spec_path)
        if size > MAX_SPEC_BYTES:
            raise ValueError(f"{spec_path} is {size} bytes, more than a task set's {MAX_SPEC_BYTES}: "
                             "it is not one agentgym wrote")
        with open(spec_path, "rb") as f:
            text = f.read(MAX_SPEC_BYTES + 1).decode("utf-8")
        spec = yaml.load(text, Loader=_no_alias_loader())  # noqa: S506  a safe loader, aliases refused
    except yaml.YAMLError as e:
        if "anchors and aliases" in str(e):
            raise ValueError(f"{spec_path} uses YAML anchors and aliases, which a task set's {SPEC_FILE} may not "
                             "(they can make a small file a huge value): export the set again") from None
        raise ValueError(f"{spec_path} is not valid YAML: {one_line(e)}") from None
    except UnicodeDecodeError:
        raise ValueError(f"{spec_path} is not UTF-8 text") from None
    except RecursionError:
        raise ValueError(f"{spec_path} nests values too deeply to be a task set's {SPEC_FILE}") from None
    except OSError as e:
        raise ValueError(f"cannot read {spec_path}: {e.strerror or one_line(e)}") from None
    if not isinstance(spec, dict) or not spec:
        raise ValueError(f"{spec_path} is not a task set's {SPEC_FILE}: it holds no keys")
    return spec


def _split_records(spec: dict[str, Any], spec_path: str, path: str) -> dict[str, dict[str, Any]]:
    """The ``splits`` of a spec, each checked: a parquet file inside the set, a task count, a hash.
    A spec without ``splits`` (written before sets held several) has one split: every parquet under
    ``data/``."""
    if "splits" not in spec:
        missing = {"split", "task_list_hash"} - set(spec)
        if missing:
            raise ValueError(f"{spec_path} lacks {sorted(missing)}")
        name = spec["split"]
        if not isinstance(name, str) or not name or len(name) > 100:
            raise ValueError(f"split in {spec_path} must be a split name, got {short_repr(name)}")
        files = [f for f in sorted(glob.glob(os.path.join(glob.escape(path), "data", "*.parquet")))
                 if _is_inside(f, path)]
        if not files:
            raise ValueError(f"the task set at {path} has no parquet under data/ (export it again)")
        return {name: {"files": [os.path.relpath(f, path) for f in files], "task_list_hash": spec["task_list_hash"],
                       "num_tasks": spec.get("num_tasks")}}
    splits = spec["splits"]
    if not isinstance(splits, dict) or not splits:
        raise ValueError(f"splits in {spec_path} must map split names to their files, got {short_repr(splits)}")
    records = {}
    for name, record in splits.items():
        try:
            check_split_name(name)
        except ValueError as e:
            raise ValueError(f"{spec_path}: {e}") from None
        if not isinstance(record, dict) or not {"file", "num_tasks", "task_list_hash"} <= set(record):
            raise ValueError(f"split {name!r} in {spec_path} must hold file, num_tasks and task_list_hash, "
                             f"got {short_repr(record)}")
        file = record["file"]
        inside = isinstance(file, str) and not os.path.isabs(file) and file.endswith(".parquet") and (
            os.path.normpath(file).startswith("data" + os.sep))
        if not inside or not _is_inside(os.path.join(path, file), path):
            raise ValueError(f"split {name!r} in {spec_path} names file {short_repr(file)}; a split's file is a "
                             ".parquet under the set's data/")
        records[name] = {**record, "files": [file]}
    # a set of one split repeats its record at the top, for readers of format 1: the two must agree
    name, record = next(iter(records.items())) if len(records) == 1 else (None, {})
    for key, expected in (("split", name), ("num_tasks", record.get("num_tasks")),
                          ("task_list_hash", record.get("task_list_hash"))):
        if key in spec and spec[key] != expected:
            raise ValueError(f"{spec_path} gives {key} {short_repr(spec[key])} at its top and "
                             f"{short_repr(expected)} under splits: export the set again")
    return records


def _is_inside(file: str, folder: str) -> bool:
    return os.path.realpath(file).startswith(os.path.realpath(folder) + os.sep)


def load_tasks(path: str | os.PathLike, split: str | None = None) -> TaskSet:
    """Read a task set folder (``environment.yaml`` and the parquet it names): every split, or the
    split named ``split``. Anything that is not such a set is a one-line ``ValueError``."""
    path = os.fspath(path)
    spec_path = os.path.join(path, SPEC_FILE)
    if not os.path.isfile(spec_path):
        raise ValueError(f"{path} is not a task set: it has no {SPEC_FILE} (write one with agentgym export-tasks)")
    spec = _read_spec(spec_path)
    made_with = spec.get("agentgym_version")
    form = spec.get("task_set_format", 1)
    if isinstance(form, bool) or not isinstance(form, int) or not 1 <= form <= FORMAT:
        raise ValueError(f"the task set at {path} has task_set_format {short_repr(form)} (made by agentgym "
                         f"{str(made_with)[:30]}); agentgym {__version__} reads formats 1 to {FORMAT}: install "
                         "the agentgym that made it")
    missing = {"env_id", "env_kwargs"} - set(spec)
    if missing:
        raise ValueError(f"{spec_path} lacks {sorted(missing)}")
    env_id, env_kwargs = spec["env_id"], spec["env_kwargs"]
    if not isinstance(env_id, str) or not 0 < len(env_id) <= 200:
        raise ValueError(f"env_id in {spec_path} must be an env id, got {short_repr(env_id)}")
    if env_id not in gym.registry:
        raise ValueError(f"the task set at {path} holds tasks of {env_id!r}, which is not a registered env id here "
                         "(a user's env: import the module that registers it first; the set's card names it)")
    if not isinstance(env_kwargs, dict) or not all(isinstance(k, str) for k in env_kwargs) or "tasks" in env_kwargs:
        raise ValueError(f"env_kwargs in {spec_path} must be a mapping of names without tasks=, "
                         f"got {short_repr(env_kwargs)}")
    try:
        json.dumps(env_kwargs)
    except (TypeError, ValueError):  # a YAML date or set: what export-tasks never writes
        raise ValueError(f"env_kwargs in {spec_path} must hold JSON values, got {short_repr(env_kwargs)}") from None
    records = _split_records(spec, spec_path, path)
    if split is not None:
        if split not in records:
            raise ValueError(f"the task set at {path} holds splits {list(records)}, not {split!r}")
        records = {split: records[split]}
    splits = {name: _read_split(path, name, record) for name, record in records.items()}
    versions = {str(r.get("agentgym_version", made_with)) for r in records.values()} - {__version__}
    if versions:
        warnings.warn(f"the task set at {path} was made with agentgym {', '.join(sorted(versions))[:60]}, "
                      f"this is {__version__}", stacklevel=2)
    return TaskSet(env_id, dict(env_kwargs), ", ".join(splits), [t for refs in splits.values() for t in refs],
                   spec, path, splits)


def _read_split(path: str, split: str, record: Mapping[str, Any]) -> list[TaskRef]:
    """One split's tasks, every value checked, and checked against its record's count and hash."""
    tasks = [task for file in record["files"] for task in _read_parquet(path, file)]
    seen: set[str] = set()
    for t in tasks:
        if t.task_id in seen:
            raise ValueError(f"the task set at {path} lists task {short_repr(t.task_id)} twice in split {split!r}")
        seen.add(t.task_id)
    if not tasks:
        raise ValueError(f"the task set at {path} holds no tasks in split {split!r} (export it again)")
    count = record.get("num_tasks")
    if count is not None and (isinstance(count, bool) or not isinstance(count, int) or count != len(tasks)):
        raise ValueError(f"the task set at {path} records {short_repr(count)} tasks in split {split!r}, its file holds "
                         f"{len(tasks)}")
    if task_list_hash(t.task_id for t in tasks) != record["task_list_hash"]:
        raise ValueError(f"the tasks under {path}/data do not match the task_list_hash of its {SPEC_FILE}")
    return tasks


def _read_parquet(path: str, file: str) -> list[TaskRef]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    full = os.path.join(path, file)
    if not os.path.isfile(full):
        raise ValueError(f"the task set at {path} has no parquet under data/ at {short_repr(file, 100)} "
                         "(export it again)")
    if os.path.getsize(full) > MAX_PARQUET_BYTES:
        raise ValueError(f"{full} is {os.path.getsize(full)} bytes, more than a task set's {MAX_PARQUET_BYTES}")
    try:
        parquet = pq.ParquetFile(full)
        if parquet.metadata.num_rows > MAX_TASKS:
            raise ValueError(f"{full} holds {parquet.metadata.num_rows} rows, more than a split's {MAX_TASKS}")
        names = parquet.schema_arrow.names
        missing = [c for c in READ_COLUMNS if c not in names]
        if missing:
            raise ValueError(f"{full} lacks the column(s) {missing} of a task set's rows")
        meta = parquet.metadata
        unpacked = sum(meta.row_group(g).column(c).total_uncompressed_size
                       for g in range(meta.num_row_groups) for c in range(meta.num_columns)
                       if meta.row_group(g).column(c).path_in_schema in READ_COLUMNS)
        if unpacked > MAX_PARQUET_BYTES:
            raise ValueError(f"{full} unpacks to {unpacked} bytes, more than a task set's {MAX_PARQUET_BYTES}")
        table = parquet.read(columns=list(READ_COLUMNS))
    except (pa.ArrowException, OSError) as e:
        raise ValueError(f"{full} is not a readable parquet file ({one_line(e)})") from None
    for name in READ_COLUMNS:
        column = table.column(name)
        if not (pa.types.is_string(column.type) or pa.types.is_large_string(column.type)) or column.null_count:
            raise ValueError(f"column {name!r} of {full} must hold strings, it holds {column.type}"
                             f"{' with nulls' if column.null_count else ''}")
    rows = table.to_pydict()
    tasks = []
    for task_id, task_type, options in zip(rows["task_id"], rows["task_type"], rows["options"]):
        if not task_id or len(task_id) > MAX_ID_CHARS or len(task_type) > MAX_ID_CHARS:
            raise ValueError(f"{full} holds a task id or type of {max(len(task_id), len(task_type))} characters "
                             f"({short_repr(task_id)}); a task set's are 1 to {MAX_ID_CHARS}")
        try:
            if len(options) > MAX_OPTIONS_CHARS:
                raise ValueError(f"{len(options)} characters")
            value = json.loads(options)
        except (ValueError, RecursionError) as e:
            raise ValueError(f"the options of task {short_repr(task_id)} in {full} are not a JSON object "
                             f"({one_line(e, 80)})") from None
        if not isinstance(value, dict):
            raise ValueError(f"the options of task {short_repr(task_id)} in {full} must be a JSON object, got "
                             f"{short_repr(value)}")
        tasks.append(TaskRef(task_id, task_type, value))
    return tasks
