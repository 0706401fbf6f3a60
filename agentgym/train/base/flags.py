"""The names of a run's settings: one flag and at most one flat name per setting.

A run's config (:class:`~agentgym.train.config.tree.TrainConfig`, ``SFTRunConfig``) is a tree of
dataclass groups. A group annotated :data:`Flat` gives its settings flags without a prefix
(``--num-steps``, and ``--temperature`` from the sampling group inside the rollout group); any other
group gives them its own name as a prefix (``--vspo.eta``, ``--cold-start.num-steps``,
``--gcd.judge-loss.eps-low``). In Python, :func:`build` takes each setting by its flat name:
every setting with an unprefixed flag, and the direct settings of a method's group (``eta``).
A group annotated :data:`Grouped` (the cold start, whose settings mirror the run's own:
``num_steps``, ``learning_rate``) has no flat names; ``build(..., cold_start={"num_steps": 0})``
names them through the group.

Both rules are checked when a config class is defined (:class:`ConfigTree`), so a name never
means two settings: no flat name belongs to two settings, and no flag is spelled twice. A
:class:`FlagClash` says which settings collide.

A renamed setting's former flag is a line of one table, :data:`~agentgym.train.base.renamed.RENAMED_FLAGS`
(``"--gcd.judge-eps-low": "--gcd.judge-loss.eps-low"``), so that the old spelling fails in one line
naming the new one: the flag (and ``--no-`` forms of a boolean; :func:`reject_former_flags`) and the
keyword of :func:`build`. No old name is read as the new one, and no new setting may take an old name.
"""

from __future__ import annotations

import argparse
import ast
import copy
import dataclasses
import difflib
import functools
import inspect
import sys
import textwrap
import typing
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, is_dataclass
from typing import Any, TypeVar

import tyro

from agentgym.train.base.errors import ConfigError
from agentgym.train.base.renamed import RENAMED_FLAGS

Flat = tyro.conf.OmitArgPrefixes
"""Marks a group whose settings' flags carry no prefix (``Annotated[RolloutConfig, Flat]``)."""
Hidden = tyro.conf.Suppress
"""Marks a setting that is not a flag: code may set it (``build`` and the constructor take it)."""


class _Marker:
    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return self.name


Grouped = _Marker("Grouped")
"""Marks a prefixed group whose settings have no flat name (only ``group={...}`` in :func:`build`)."""

C = TypeVar("C")


class FlagClash(TypeError):
    """Two settings of one config class would share a flat name or a flag."""


@dataclass(frozen=True)
class Setting:
    """One setting of a config tree, as its flag and flat name spell it."""

    path: tuple[str, ...]
    """attribute path from the root (``("rollout", "sampling", "temperature")``)"""
    flag: str
    """its flag (``--temperature``, ``--cold-start.num-steps``)"""
    flat: str | None
    """the name :func:`build` takes for it without a group (None: only through its group)"""
    hidden: bool
    """set in code only, not a flag"""
    is_bool: bool
    doc: str

    @property
    def negative_flag(self) -> str:
        """A boolean's ``--no-`` form (``--gigpo.no-step-std-normalize``)."""
        return _negative(self.flag)


def _negative(flag: str) -> str:
    head, _, last = flag[2:].rpartition(".")
    return f"--{head + '.' if head else ''}no-{last}"


def _dashed(name: str) -> str:
    return name.replace("_", "-")


def _field_types(cls: type) -> list[tuple[str, Any, tuple]]:
    """``(name, type, Annotated metadata)`` of each field, in declaration order, class variables
    left out. Works on a class that is not yet a dataclass (while it is being defined)."""
    try:
        hints = typing.get_type_hints(cls, include_extras=True)
    except NameError:
        hints = _hints_one_by_one(cls)
    out = []
    for name, tp in hints.items():
        meta: tuple = ()
        if typing.get_origin(tp) is typing.Annotated:
            meta, tp = tp.__metadata__, tp.__origin__
        if typing.get_origin(tp) is typing.ClassVar or tp is typing.ClassVar or name.startswith("_"):
            continue
        out.append((name, tp, meta))
    return out


def _hints_one_by_one(cls: type) -> dict[str, Any]:
    """Annotations resolved one at a time, for a class whose annotations name a class only its
    defining function knows (postponed annotations): such a field's type is its default's."""
    hints: dict[str, Any] = {}
    for klass in reversed(cls.__mro__):
        module = vars(sys.modules.get(klass.__module__, typing))
        for name, annotation in vars(klass).get("__annotations__", {}).items():
            if not isinstance(annotation, str):
                hints[name] = annotation
                continue
            try:
                hints[name] = eval(annotation, module, dict(vars(klass)))  # noqa: S307  the class's own source
                continue
            except NameError:
                if annotation.startswith(("ClassVar", "typing.ClassVar")):
                    continue
            default = vars(klass).get("__dataclass_fields__", {}).get(name, vars(klass).get(name))
            if isinstance(default, dataclasses.Field):
                default = (default.default_factory() if default.default_factory is not dataclasses.MISSING
                           else default.default)
            hints[name] = type(default)
    return hints


def _is_group(tp: Any) -> bool:
    return isinstance(tp, type) and is_dataclass(tp)


def _field_docs(cls: type) -> dict[str, str]:
    """Each field's one-line doc: the string literal right under it in the class body."""
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if klass is object or "__annotations__" not in vars(klass):
            continue
        try:
            body = ast.parse(textwrap.dedent(inspect.getsource(klass))).body[0].body
        except (OSError, TypeError, IndexError, AttributeError):
            continue
        for node, nxt in zip(body, body[1:] + [None]):
            if (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and isinstance(nxt, ast.Expr)
                    and isinstance(nxt.value, ast.Constant) and isinstance(nxt.value.value, str)):
                docs[node.target.id] = " ".join(nxt.value.value.split())
    return docs


@dataclass(frozen=True)
class _Group:
    """A group of the tree: where it is, its flag prefix, and whether its settings get flat names."""

    cls: type
    path: tuple[str, ...]
    prefix: str
    flat: str
    """``all`` (flat names for every setting below), ``direct`` (a method's group: its own
    settings only) or ``none``"""


@functools.cache
def _groups(cls: type) -> tuple[_Group, ...]:
    """Every group of the tree under ``cls``, the root first, parents before children."""
    out = [_Group(cls, (), "", "all")]
    for group in out:
        for name, tp, meta in _field_types(group.cls):
            if not _is_group(tp):
                continue
            if Flat in meta:
                out.append(_Group(tp, group.path + (name,), group.prefix, group.flat))
            else:
                method_group = not group.path and Grouped not in meta
                out.append(_Group(tp, group.path + (name,), f"{group.prefix}{_dashed(name)}.",
                                  "direct" if method_group else "none"))
    return tuple(out)


@functools.cache
def settings(cls: type) -> tuple[Setting, ...]:
    """Every setting of config class ``cls``, in declaration order (a group's where it is declared)."""
    by_path = {g.path: g for g in _groups(cls)}
    result: list[Setting] = []

    def walk(group: _Group) -> None:
        docs = _field_docs(group.cls)
        for name, tp, meta in _field_types(group.cls):
            if _is_group(tp):
                walk(by_path[group.path + (name,)])
                continue
            flat = name if group.flat in ("all", "direct") else None
            result.append(Setting(group.path + (name,), f"--{group.prefix}{_dashed(name)}", flat, Hidden in meta,
                                  tp is bool, docs.get(name, "")))

    walk(by_path[()])
    return tuple(result)


@functools.cache
def former_names(cls: type) -> tuple[tuple[str, tuple[str, ...], str, Setting], ...]:
    """``(former flag, its group's path, its former keyword, the setting it now is)`` of every
    :data:`~agentgym.train.base.renamed.RENAMED_FLAGS` entry whose current flag ``cls`` has."""
    by_flag = {s.flag: s for s in settings(cls)}
    paths: dict[str, tuple[str, ...]] = {}
    for group in _groups(cls):  # the root first: flat groups share its empty prefix
        paths.setdefault(group.prefix, group.path)
    out = []
    for old, new in RENAMED_FLAGS.items():
        if new in by_flag:
            prefix, _, name = old[2:].rpartition(".")
            out.append((old, paths.get(f"{prefix}." if prefix else "", ()), name.replace("-", "_"), by_flag[new]))
    return tuple(out)


def check_names(cls: type) -> None:
    """Raise :class:`FlagClash` when two settings of ``cls`` share a flat name or a flag (a former
    spelling included)."""
    flat: dict[str, Setting] = {}
    flags: dict[str, str] = {}

    def claim(flag: str, owner: str) -> None:
        if flag in flags:
            raise FlagClash(f"{cls.__name__}: the flag {flag} would be both {flags[flag]} and {owner}; "
                            "give one of them another name")
        flags[flag] = owner

    for s in settings(cls):
        where = ".".join(s.path)
        if s.flat is not None:
            if s.flat in flat:
                raise FlagClash(f"{cls.__name__}: the flat name {s.flat!r} would be both {'.'.join(flat[s.flat].path)} "
                                f"and {where}; give one of them another name (base/renamed.py keeps the old flag's "
                                "refusal)")
            flat[s.flat] = s
        claim(s.flag, where)
        if s.is_bool:
            claim(s.negative_flag, where)
    for flag, path, old, target in former_names(cls):
        where = f"the former name of {'.'.join(target.path)}"
        claim(flag, where)
        if target.is_bool:
            claim(_negative(flag), where)
        if not path and old in flat:
            raise FlagClash(f"{cls.__name__}: {old!r} is the flat name of {'.'.join(flat[old].path)} and {where}")


class ConfigTree:
    """Base of a run's config: defining a subclass checks its names (:func:`check_names`)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        try:
            check_names(cls)
        except NameError:
            pass  # an annotation naming a class not defined yet: checked at first use (parse, build)


def _get(obj: Any, path: tuple[str, ...]) -> Any:
    for name in path:
        obj = getattr(obj, name)
    return obj


def _set(obj: Any, path: tuple[str, ...], value: Any) -> None:
    setattr(_get(obj, path[:-1]), path[-1], value)


def groups(config: Any) -> Iterator[tuple[Any, str]]:
    """``(group, flag prefix)`` of every group of a config instance, the root first."""
    for group in _groups(type(config)):
        yield _get(config, group.path), group.prefix


def reject_former_flags(cls: type, argv: list[str]) -> None:
    """Raise :class:`~agentgym.train.base.errors.ConfigError` naming the current flag when ``argv``
    spells a setting by its former name (``--cold-start-steps``, ``--gcd.judge-beta=0.1``,
    ``--gigpo.no-std-normalize``): a renamed flag fails in one line rather than meaning something else."""
    check_names(cls)
    renamed: dict[str, str] = {}
    for flag, _, _, target in former_names(cls):
        renamed[flag] = target.flag
        if target.is_bool:
            renamed[_negative(flag)] = target.negative_flag
    for arg in argv:
        name = arg.partition("=")[0]
        if name in renamed:
            raise ConfigError(f"{name} was renamed {renamed[name]}")


def reject_unknown_flags(cls: type, argv: list[str]) -> None:
    """Raise :class:`~agentgym.train.base.errors.ConfigError` naming the closest flag when ``argv``
    holds a flag no setting of ``cls`` has (``--num-step``): one line, where tyro would draw a box
    listing several near flags. Spellings tyro takes (``--num_steps``, ``--flag=value``) pass."""
    known = {"--help", "-h"}
    for s in settings(cls):
        if not s.hidden:
            known.update((s.flag, s.negative_flag) if s.is_bool else (s.flag,))
    for arg in argv:
        if arg == "--":
            break
        name = arg.partition("=")[0]
        # --tyro-print-completion / --tyro-write-completion: tyro's own, for shell completion
        if not name.startswith("--") or name.replace("_", "-") in known or name.startswith(("--tyro-", "--tyro_")):
            continue
        close = difflib.get_close_matches(name.replace("_", "-"), sorted(known), n=1)
        hint = f"; did you mean {close[0]}?" if close else ""
        raise ConfigError(f"unknown flag {name}{hint} (--help lists every flag)")


def build(config_cls: type[C], _default: C | None = None, **values: Any) -> C:
    """A config from flat names, as the flags spell them with underscores:
    ``build(TrainConfig, env_id="ALFWorld-v0", num_steps=5, vspo={"eta": 0.5})``, starting from
    ``config_cls()`` or from a copy of ``_default`` (a trainer script's ``defaults()``). A group's
    settings can also be given as a dict (``cold_start={"num_steps": 0}``); a former name raises a
    ``TypeError`` naming the current one.

    >>> from agentgym.train.config.tree import TrainConfig
    >>> config = build(TrainConfig, num_steps=5, group_size=4, temperature=0.5, cold_start={"num_steps": 0})
    >>> config.rollout.group_size, config.rollout.sampling.temperature, config.cold_start.num_steps
    (4, 0.5, 0)
    >>> build(TrainConfig, _default=config, cold_start={"learning_rate": 0.01}).run.num_steps
    5
    """
    config = copy.deepcopy(_default) if _default is not None else config_cls()
    cls = type(config)
    check_names(cls)
    flat = {s.flat: s for s in settings(cls) if s.flat is not None}
    top = {name: tp for name, tp, _ in _field_types(cls)}
    for key, value in values.items():
        if key in top and _is_group(top[key]) and isinstance(value, dict):
            _apply(config, (key,), value, cls)
        elif key in flat:
            _set(config, flat[key].path, value)
        elif key in top:
            setattr(config, key, value)
        else:
            moved = [t for _, path, old, t in former_names(cls) if old == key]
            hint = f" ({key} is now {', '.join('.'.join(t.path) for t in moved)})" if moved else ""
            raise TypeError(f"{cls.__name__} has no setting {key!r}{hint}")
    return config


def from_recorded(group_cls: type[C], values: Mapping[str, Any]) -> C:
    """A group rebuilt from its recorded dict (a checkpoint's config, as ``to_dict`` wrote it in this
    version or an older one): a nested group from its nested dict over the group's own default (GCD's
    judge loss keeps its ``seq-mean``), a key this version does not know left out.

    >>> from agentgym.train.methods.gigpo import GiGPOConfig
    >>> from_recorded(GiGPOConfig, {"step_std_normalize": False, "omega": 0.5, "gone": 1}).step_std_normalize
    False
    """
    return _fill(group_cls(), values)


def _fill(group: Any, values: Mapping[str, Any]) -> Any:
    values = copy.deepcopy(dict(values))
    types = {name: tp for name, tp, _ in _field_types(type(group))}
    changes = {}
    for key, value in values.items():
        if key not in types:
            continue
        if _is_group(types[key]) and isinstance(value, Mapping):
            value = _fill(getattr(group, key), value)
        changes[key] = value
    return dataclasses.replace(group, **changes)


def _apply(config: Any, path: tuple[str, ...], values: dict, cls: type) -> None:
    """Set a group's settings from a dict: its own fields and those of the groups flat inside it,
    and a nested group's settings by a nested dict (a former name raises, naming the current one)."""
    by_path = {g.path: g for g in _groups(cls)}
    group = by_path[path]
    own = {s.path[-1]: s for s in settings(cls)
           if s.path[:len(path)] == path and by_path[s.path[:-1]].prefix == group.prefix}
    former = {old: t for _, p, old, t in former_names(cls) if p == path}
    nested = {name for name, tp, _ in _field_types(group.cls) if _is_group(tp)}
    for key, value in values.items():
        if key in nested and isinstance(value, dict):
            _apply(config, path + (key,), value, cls)
        elif key in own:
            _set(config, own[key].path, value)
        elif key in nested:
            _set(config, path + (key,), value)
        else:
            hint = f" ({key} is now {'.'.join(former[key].path)})" if key in former else ""
            raise TypeError(f"{cls.__name__}.{'.'.join(path)} has no field {key!r}{hint}")


def flag_rows(config: Any) -> list[tuple[str, str, str]]:
    """``(flag, default, doc)`` of every flag of a config instance, in declaration order."""
    check_names(type(config))
    return [(s.flag, repr(_get(config, s.path)), s.doc) for s in settings(type(config)) if not s.hidden]


def flag_table(config: Any) -> str:
    """A Markdown table of every flag of a config (docs/trainers.md is checked against it)."""
    lines = ["| flag | default | meaning |", "|---|---|---|"]
    lines += [f"| `{flag}` | `{default}` | {doc} |" for flag, default, doc in flag_rows(config)]
    return "\n".join(lines)


def add_arguments(parser, group: Any, names: tuple[str, ...] | None = None, notes: dict[str, str] | None = None,
                  defaults: dict[str, Any] | None = None) -> None:
    """Add a group's settings to an ``argparse`` parser as unprefixed flags, with the doc and type
    their dataclass declares (for commands that do not parse with ``tyro``, as ``agentgym eval``).
    ``defaults`` replaces some defaults and ``notes`` adds to some helps: say there why a default
    differs from the trainers'."""
    docs = _field_docs(type(group))
    defaults = defaults or {}
    notes = notes or {}
    for name, tp, meta in _field_types(type(group)):
        if names is not None and name not in names or _is_group(tp) or Hidden in meta:
            continue
        default = defaults.get(name, getattr(group, name))
        help_text = docs.get(name, "") + (f"; {notes[name]}" if name in notes else "")
        kwargs: dict[str, Any] = {"default": default, "help": help_text.replace("%", "%%")}
        args = typing.get_args(tp)
        if tp is bool:
            kwargs["action"] = argparse.BooleanOptionalAction
        elif typing.get_origin(tp) is typing.Literal:
            kwargs["choices"] = list(args)
        else:
            base = next((a for a in args if a is not type(None)), tp) if args else tp
            optional = type(None) in args
            kwargs["type"] = _none_or(base) if optional else base
        parser.add_argument(f"--{_dashed(name)}", dest=name, **kwargs)


def _none_or(convert):
    def parse(text: str):
        return None if text == "None" else convert(text)

    parse.__name__ = convert.__name__
    return parse


def to_dict(config: Any) -> dict[str, Any]:
    """A config as a plain nested dict (for checkpoints and logs)."""
    if is_dataclass(config):
        return {f.name: to_dict(getattr(config, f.name)) for f in dataclasses.fields(config)}
    return config
