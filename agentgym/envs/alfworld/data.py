"""Finding ALFWorld games: the official layout, split names, and the generated default set.

Official layout (what ``alfworld-download`` unpacks into ``$ALFWORLD_DATA``)::

    <root>/json_2.1.1/{train,valid_seen,valid_unseen}/<task>-<Object>-<mrecep>-<Receptacle>-<scene>/<trial>/game.tw-pddl

``<root>`` may also be the ``json_2.1.1`` folder itself. Like alfworld's loader we skip the
movable-receptacle and sliced-object trials (``movable``/``Sliced`` in the path), which its text
engine does not support, and games marked ``"solvable": false``.

Split names: ``train``, ``valid_seen`` (ALFWorld's in-distribution eval) and ``valid_unseen``
(out-of-distribution: unseen rooms). Aliases: ``valid``/``dev``/``eval_in_distribution`` mean
``valid_seen``; ``test``/``eval_out_of_distribution`` mean ``valid_unseen``. Besides the folders:
the evaluation levels ``L0``/``L1``/``L2`` and ``train_all`` (see
:mod:`agentgym.envs.alfworld.levels`; ``train`` leaves the L2 task types out).

Generated sets (``data_path="generated"`` or ``"generated:N[:ROOM]"``) live in the cache, written
by :mod:`agentgym.envs.alfworld.generate` on first use.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import tempfile
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache

from agentgym.envs.alfworld.cache_folder import cache_root
from agentgym.envs.alfworld.generate import generate, split_counts
from agentgym.envs.alfworld.levels import LEVELS, TRAIN_ALL
from agentgym.envs.alfworld.room_size import ROOM_SIZES
from agentgym.envs.alfworld.tasks import TASK_TYPES

SPLITS = ("train", "valid_seen", "valid_unseen")
"""The split folders of the official layout."""
ENV_SPLITS = SPLITS + (TRAIN_ALL,) + LEVELS
"""Every split name the env takes (besides aliases)."""
SPLIT_ALIASES = {"valid": "valid_seen", "dev": "valid_seen", "eval_in_distribution": "valid_seen",
                 "test": "valid_unseen", "eval_out_of_distribution": "valid_unseen"}
DATA_DIR = "json_2.1.1"

# The generated default set: its version (bump with the generator's GENERATOR_VERSION), seed and size.
DEFAULT_VERSION = 3
DEFAULT_SEED = 0
DEFAULT_COUNTS = {"train": 1200, "valid_seen": 150, "valid_unseen": 150}
"""80/10/10 of 1500 games: ``train`` holds 800 of the four seen types (cold start and RL can take
disjoint games from them), L1 200 games, L2 100."""
GENERATED = "generated"


@dataclass(frozen=True)
class GameRecord:
    path: str
    """Absolute path of the ``game.tw-pddl`` file."""
    task_id: str
    """``<task folder>/<trial>``, unique within a split."""
    task_type: str


def canonical_split(split: str) -> str:
    name = SPLIT_ALIASES.get(split, split)
    if name not in ENV_SPLITS:
        raise ValueError(f"unknown split {split!r}; use one of {ENV_SPLITS} "
                         f"(aliases: {', '.join(f'{k}={v}' for k, v in SPLIT_ALIASES.items())})")
    return name


def split_dir(root: str, split: str) -> str | None:
    """The folder of ``split`` under a data root, or None if there is none."""
    root = os.path.abspath(os.path.expanduser(os.path.expandvars(root)))
    for candidate in (os.path.join(root, DATA_DIR, split), os.path.join(root, split)):
        if os.path.isdir(candidate):
            return candidate
    return None


def _task_type_of(task_folder: str, trial_dir: str) -> str | None:
    prefix = task_folder.split("-", 1)[0]
    if prefix in TASK_TYPES:
        return prefix
    try:
        with open(os.path.join(trial_dir, "traj_data.json")) as f:
            task_type = json.load(f).get("task_type")
    except (OSError, ValueError):
        return None
    return task_type if task_type in TASK_TYPES else None


def _solvable(game_file: str) -> bool:
    try:
        with open(game_file) as f:
            return json.load(f).get("solvable", True) is not False
    except (OSError, ValueError):
        return False


@lru_cache(maxsize=32)
def _index(folder: str) -> tuple[GameRecord, ...]:
    records = []
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames.sort()
        if "game.tw-pddl" not in filenames or "movable" in dirpath or "Sliced" in dirpath:
            continue
        rel = os.path.relpath(dirpath, folder).replace(os.sep, "/")
        task_type = _task_type_of(rel.split("/", 1)[0], dirpath)
        game_file = os.path.join(dirpath, "game.tw-pddl")
        if task_type is not None and _solvable(game_file):
            records.append(GameRecord(game_file, rel, task_type))
    return tuple(sorted(records, key=lambda r: r.task_id))


def find_games(root: str, split: str, task_types=TASK_TYPES) -> list[GameRecord]:
    """The playable games of a split under ``root``, sorted by task id, filtered by task type."""
    split = canonical_split(split)
    if split not in SPLITS:
        raise ValueError(f"find_games reads one split folder ({SPLITS}), not {split!r}")
    folder = split_dir(root, split)
    if folder is None:
        return []
    return [r for r in _index(folder) if r.task_type in task_types]


def parse_generated(data_path: str) -> tuple[int | None, str] | None:
    """``generated[:N][:ROOM]`` as (N or None for the default counts, room size preset), else None.

    ``generated:4000`` is a generated set of 4000 games (80% train, 10% each valid split);
    ``generated:small`` and ``generated:4000:tiny`` have smaller rooms
    (:mod:`agentgym.envs.alfworld.room_size`)."""
    if not isinstance(data_path, str) or data_path.split(":", 1)[0] != GENERATED:
        return None
    num_games, room = None, "full"
    for part in data_path.split(":")[1:]:
        if part.isdigit() and num_games is None and int(part) > 0:
            num_games = int(part)
        elif part in ROOM_SIZES and room == "full":
            room = part
        else:
            raise ValueError(f"data_path {data_path!r}: expected generated[:N][:ROOM] with N > 0 games and ROOM one "
                             f"of {list(ROOM_SIZES)}, e.g. 'generated:4000' or 'generated:2000:small'")
    return num_games, room


def default_data_root(num_games: int | None = None, room: str = "full") -> str:
    """A generated game set in the cache, generated on first use: the default set, or ``num_games``
    games (80% train, 10% each valid split) with rooms of size ``room``.

    Safe when several processes ask at once: each generates into its own temporary folder and
    renames it into place; the first rename wins and the others discard their copy. A generation the
    disk has no room for is refused before it writes (:func:`check_disk_for`); one that is
    terminated removes its folder, and one that was killed has it removed by the next generation."""
    counts = DEFAULT_COUNTS if num_games is None else split_counts(num_games, "all")
    name = f"generated-v{DEFAULT_VERSION}-seed{DEFAULT_SEED}"
    if counts != DEFAULT_COUNTS:
        name += f"-n{num_games}"
    if room != "full":
        name += f"-{room}"
    final = os.path.join(cache_root(), name)
    if os.path.isdir(final):
        return final
    os.makedirs(cache_root(), exist_ok=True)
    remove_abandoned_generations(cache_root())
    check_disk_for(sum(counts.values()), cache_root())
    tmp = tempfile.mkdtemp(prefix=f"{GENERATING}{os.getpid()}-", dir=cache_root())
    try:
        with _terminate_as_exit():
            for split, count in counts.items():
                generate(tmp, count, seed=DEFAULT_SEED, split=split, room=room)
        os.chmod(tmp, 0o755)  # mkdtemp makes it private; the finished set is for every user
        try:
            os.rename(tmp, final)
        except OSError:
            if not os.path.isdir(final):
                raise
    finally:
        if os.path.isdir(tmp):
            shutil.rmtree(tmp, ignore_errors=True)
    return final


GENERATING = ".generating-"  # a generation under way: .generating-<pid>-<random>
BYTES_PER_GAME = 64 * 1024  # measured: 54-63 kB of disk a game (tiny to full rooms), folders included
DISK_MARGIN = 512 * 1024 * 1024  # what a generation leaves free at least, for everything else


def check_disk_for(num_games: int, folder: str) -> None:
    """Refuse, before writing, a generation the disk under ``folder`` has no room for."""
    need = num_games * BYTES_PER_GAME
    free = shutil.disk_usage(folder).free
    if free < need + DISK_MARGIN:
        raise OSError(f"generating {num_games} ALFWorld games needs about {need / 2**20:.0f} MiB in {folder}, and "
                      f"{free / 2**20:.0f} MiB are free (a generation leaves {DISK_MARGIN // 2**20} MiB free): free "
                      f"some space or set AGENTGYM_CACHE to a larger disk")


def remove_abandoned_generations(folder: str) -> None:
    """Remove the temporary folders of generations whose process is gone (killed before it could)."""
    for entry in os.scandir(folder):
        pid = entry.name[len(GENERATING):].split("-", 1)[0]
        if entry.name.startswith(GENERATING) and entry.is_dir(follow_symlinks=False) and pid.isdigit():
            if not _alive(int(pid)):
                shutil.rmtree(entry.path, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process, alive
        return True
    return True


@contextmanager
def _terminate_as_exit():
    """SIGTERM raises ``SystemExit`` for the duration (main thread, default handler only), so a
    terminated generation removes its temporary folder on the way out."""
    if threading.current_thread() is not threading.main_thread() or signal.getsignal(signal.SIGTERM) != signal.SIG_DFL:
        yield
        return

    def stop(signum, frame):
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


def resolve_data_root(data_path: str | None, split: str) -> str:
    """``data_path`` if given; else ``$ALFWORLD_DATA`` when it holds the split; else the default set.

    ``data_path="generated"`` always means the generated default set, ``"generated:N[:ROOM]"`` a
    generated set of N games (see :func:`parse_generated`)."""
    generated = parse_generated(data_path)
    if generated is not None:
        return default_data_root(*generated)
    if data_path is not None:
        return os.path.abspath(os.path.expanduser(os.path.expandvars(data_path)))
    env_root = os.environ.get("ALFWORLD_DATA")
    if env_root and split_dir(env_root, canonical_split(split)) is not None:
        return env_root
    return default_data_root()
