"""The episodes a run keeps on disk (``--log-episodes K``), for reading and for ``agentgym view``.

    OUTPUT_DIR/episodes/step_<N>.jsonl               K groups of training step N, one episode a line
    OUTPUT_DIR/episodes/eval_step_<N>_<split>.jsonl  every episode of the held-out evaluation after
                                                      N steps (0: before training), per split

A training step keeps K of its groups (after the method's ``after_rollout``: the groups it trains
on), spread evenly over the batch (the first and the last among them, so VSPO's resampled groups,
which come last, show up); a step that trains on fewer than K groups adds groups the method dropped
(VSPO's tied groups, RFT's failed episodes), with ``"trained": false``. The choice is fixed by K and the batch, never drawn, so logging leaves
the run's random streams as they are. Each line is one episode: the task, the system prompt, every
turn as the model saw it (the observation before it, its whole reply) with the env's reward terms
and ``action_valid``, the advantage the turn's tokens got, the return and success, and the
method's signals (:attr:`~agentgym.train.rollout.episodes.Episode.signals`, ``turn_signals``), and
the weights version that played it with its lag (above 0 only under ``--async-steps``). :func:`episode_record` lists the fields.

Every text is cut to :data:`MAX_TEXT_CHARS` characters, with a note that says how long it was, so
a step's file stays small whatever the model writes (docs/trainers.md gives the bytes per step). A
file is written whole to a temporary name and renamed, so a reader (or a kill) never sees half a
step. Like ``metrics.jsonl``, a fresh run starts with no episode files, and a resumed run keeps the
files of the steps up to its checkpoint and drops the later ones, which it plays again. Under
``torchrun`` rank 0 writes its own share of the groups.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from agentgym.train.base.errors import RunFileError
from agentgym.train.rollout.episodes import Episode, by_group

EPISODES_DIR = "episodes"
MAX_TEXT_CHARS = 8000
"""Longest text kept of any one observation, reply or system prompt (the rest is cut, with a note)."""
INFO_KEYS = ("parse_error", "chosen_action", "error")
"""Step-info keys kept on a turn besides its reward terms and ``action_valid`` (when present)."""
_FILE = re.compile(r"^(?:eval_)?step_(\d+)(?:_.*)?\.jsonl$")


def cut_text(text: Any, limit: int = MAX_TEXT_CHARS) -> str:
    """``text`` as a string of at most about ``limit`` characters, the cut said at its end.

    >>> cut_text("abcdef", 3)
    'abc… [cut: 6 chars in all]'
    """
    text = str(text)
    return text if len(text) <= limit else f"{text[:limit]}… [cut: {len(text)} chars in all]"


def jsonable(value: Any) -> Any:
    """``value`` as plain JSON data: numpy numbers and arrays unwrapped, non-finite floats as None,
    long strings cut, anything else as its string."""
    if isinstance(value, (bool, type(None))):
        return value
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value) if math.isfinite(float(value)) else None
    if isinstance(value, str):
        return cut_text(value)
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, np.ndarray)):
        return [jsonable(v) for v in value]
    return cut_text(value)


def episode_record(ep: Episode, advantages: Sequence[float] | None = None, **extra: Any) -> dict[str, Any]:
    """One episode as a JSON line: ``task_id``, ``group_key``, ``group``, ``seed``, ``tag``,
    ``system_prompt``, ``instruction``, ``turns`` (each: ``observation`` the model saw before it,
    ``reply`` it wrote, ``reward``, ``terms``, ``action_valid``, ``tokens``, ``advantage``, the
    method's per-turn ``signals``, and the step info's :data:`INFO_KEYS`), ``final_observation``,
    ``return``, ``success``, ``terminated``, ``truncated``, ``cut_by_length``, ``error``,
    ``episode_terms``, ``metrics``, ``advantage`` (the mean over turns) and ``signals``; ``extra``
    adds fields of the caller's (``step``, ``split``, ``trained``, ``version``, ``lag``). ``advantages``: one per turn
    (None: not trained on, as in an evaluation)."""
    turns = []
    for t, turn in enumerate(ep.turns):
        info = ep.step_infos[t] if t < len(ep.step_infos) else {}
        row: dict[str, Any] = {
            "observation": cut_text(ep.observations[t]) if t < len(ep.observations) else "",
            "reply": cut_text(turn.completion.text),
            "reward": jsonable(ep.rewards[t]) if t < len(ep.rewards) else None,
            "terms": jsonable(info.get("reward_terms", {})),
            "action_valid": jsonable(info.get("action_valid")),
            "tokens": len(turn.completion.token_ids),
            "advantage": jsonable(advantages[t]) if advantages is not None and t < len(advantages) else None,
        }
        row.update({k: jsonable(info[k]) for k in INFO_KEYS if info.get(k) is not None})
        if turn.completion.candidate_ids is not None:  # scored actions: the reply was chosen among these
            row["candidates"] = len(turn.completion.candidate_ids)
            row["logprob"] = float(sum(turn.completion.logprobs))
        signals = {name: jsonable(values[t]) for name, values in ep.turn_signals.items() if t < len(values)}
        if signals:
            row["signals"] = signals
        turns.append(row)
    final = ep.observations[len(ep.turns)] if len(ep.observations) > len(ep.turns) else None
    record = {
        **{k: jsonable(v) for k, v in extra.items()},
        "task_id": ep.task_id, "group_key": ep.group_key, "group": ep.group, "seed": ep.seed, "tag": ep.tag,
        "system_prompt": cut_text(ep.system_prompt), "instruction": cut_text(ep.instruction),
        "turns": turns, "final_observation": None if final is None else cut_text(final),
        "return": jsonable(ep.ret), "success": bool(ep.success), "terminated": bool(ep.terminated),
        "truncated": bool(ep.truncated), "cut_by_length": bool(ep.cut_by_length), "error": ep.error,
        "episode_terms": jsonable(ep.episode_terms), "metrics": jsonable(ep.metrics),
        "advantage": jsonable(float(np.mean(advantages))) if advantages is not None and len(advantages) else None,
        "signals": jsonable(ep.signals),
    }
    return record


def write_jsonl(path: str | os.PathLike, records: Sequence[dict]) -> int:
    """Write ``records`` as ``path`` atomically (a temporary file in the same folder, then a rename);
    returns the bytes written."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp")
    data = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records).encode("utf-8")
    try:
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
    return len(data)


def spread(n: int, k: int) -> list[int]:
    """``k`` of the indices ``0..n-1`` spread evenly, the first and the last among them.

    >>> spread(10, 3), spread(4, 1), spread(2, 5)
    ([0, 4, 9], [0], [0, 1])
    """
    if k >= n:
        return list(range(n))
    if k == 1:
        return [0]
    return sorted({round(i * (n - 1) / (k - 1)) for i in range(k)})


def file_step(name: str) -> int | None:
    """The step of an episode file's name (``step_12.jsonl``, ``eval_step_0_valid.jsonl``), else None."""
    m = _FILE.match(name)
    return int(m.group(1)) if m else None


class EpisodeLog:
    """Writes a run's episode files; ``groups=0`` (``--log-episodes 0``) or no directory writes none.

    ``resume_step``: the checkpoint step a resumed run starts from (None: a fresh run, whose
    directory starts with no episode files). ``sink``: also given each training step's records
    (the trackers' episode table)."""

    def __init__(self, output_dir: str | os.PathLike | None, groups: int, resume_step: int | None = None,
                 sink: Callable[[int, list[dict]], None] | None = None):
        self.groups = groups
        self.sink = sink  # the trackers' episode table (--report-to), fed each training step's records
        self.dir = Path(output_dir) / EPISODES_DIR if output_dir is not None else None
        self.bytes_written = 0
        if self.dir is not None and self.dir.exists() and not self.dir.is_dir() and groups > 0:
            raise RunFileError(f"{self.dir} is a file, not the folder the run keeps its episodes in "
                               "(--log-episodes): move it away, then run again")
        if self.dir is None or not self.dir.is_dir():
            return
        stale = [path for path in self.dir.iterdir()
                 if (step := file_step(path.name)) is not None and (resume_step is None or step > resume_step)]
        for path in stale:  # all checked before any is removed
            if path.is_dir() and not path.is_symlink():
                raise RunFileError(f"{path} is a folder, not an episode file of the run (the run replaces it): "
                                   "move it away, then run again")
        for path in stale:
            path.unlink()

    @classmethod
    def off(cls) -> EpisodeLog:
        """A log that writes nothing (ranks other than 0)."""
        return cls(None, 0)

    @property
    def active(self) -> bool:
        return self.dir is not None and self.groups > 0

    def _write(self, name: str, records: list[dict]) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        self.bytes_written += write_jsonl(self.dir / name, records)

    def step(self, step: int, batch, advantages: Sequence[np.ndarray]) -> None:
        """Keep K groups of the training batch ``batch`` (a
        :class:`~agentgym.train.run.pipeline.RolloutBatch`) as ``step_<step>.jsonl``; ``advantages``
        are its episodes' per-turn advantages, in order."""
        if not self.active:
            return
        index = {id(ep): i for i, ep in enumerate(batch.episodes)}
        groups = list(by_group(batch.episodes).values())
        picked = [groups[g] for g in spread(len(groups), self.groups)]
        if len(picked) < self.groups:  # fewer trained groups than asked: show groups the method dropped
            dropped = list(by_group([ep for ep in batch.played if id(ep) not in index]).values())
            picked += [dropped[g] for g in spread(len(dropped), self.groups - len(picked))]
        # the weights version that played it (updates done); lag > 0 only under --async-steps
        extra = {"step": step, "split": "train", "version": batch.version, "lag": batch.step - batch.version}
        records = [episode_record(ep, advantages[index[id(ep)]] if id(ep) in index else None,
                                  trained=id(ep) in index, **extra) for group in picked for ep in group]
        self._write(f"step_{step}.jsonl", records)
        if self.sink is not None:
            self.sink(step, records)

    def evaluation(self, step: int, split: str, episodes: Sequence[Episode]) -> None:
        """Keep every episode of a held-out evaluation after ``step`` steps on ``split``."""
        if not self.active:
            return
        self._write(f"eval_step_{step}_{_file_part(split)}.jsonl",
                    [episode_record(ep, None, step=step, split=split) for ep in episodes])

    def keeper(self, step: int) -> Callable[[str, Sequence[Episode]], None] | None:
        """What :func:`~agentgym.train.loop.run_eval` hands each split's episodes to (None: off)."""
        return (lambda split, episodes: self.evaluation(step, split, episodes)) if self.active else None


def _file_part(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9.+-]+", "_", name).strip("_") or "_"
