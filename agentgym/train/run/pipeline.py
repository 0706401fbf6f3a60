"""Where each training step's episodes come from: played at the start of the step, or played ahead
by a rollout thread while the learner updates (``--async-steps K``).

:class:`StepRollouts` (``--async-steps 0``, the default) plays a step's groups with the weights
the step then trains: rollout, update, rollout, update. The envs and the generator idle during the
update, and the update waits for the slowest episode.

:class:`AsyncRollouts` (``K >= 1``) plays them on a rollout thread, with a behaviour policy
(:mod:`agentgym.train.rollout.behaviour`) at most K updates behind the learner. What each batch is
played with is fixed by the config, never by timing, so a seeded run is reproducible:

- **Versions.** Version v is the weights after v updates. Batch b is played with version
  ``v(b) = max(b - K, c(b))``, where ``c(b)`` is the last checkpoint step at or before b (the step
  a run starts or resumes at counts as one). The learner trains batch b at version b, so its lag
  ``b - v(b)`` is at most K, and one batch is never split across versions (VSPO's resampled and
  DAPO's oversampled groups are played with the batch's version too).
- **Publishing.** The learner publishes version v right after update v - 1 (at a checkpoint step,
  once the checkpoint is written): the weights, the extensions' system-prompt rewrite and the PRS
  schedule as they are then, so a batch's prompts and PRS stage lag by as many steps as its weights.
- **Order.** The rollout thread plays batches in order. Batch b's groups are played once v(b) is
  published; then the extensions' ``after_rollout`` runs, and for an extension that has one of its
  own (VSPO, DAPO) only once the learner has finished step b - 1, so their state changes in the
  same order as in a synchronous run.
- **One draw at a time.** Sampling draws from the process's random stream. Whatever draws from it on
  the learner's side (a held-out evaluation, GCD's judge sampling) first :meth:`~AsyncRollouts.paused`:
  it waits until the rollout thread has done every job it may do and holds it there.
- **A budget is not overrun.** With ``--max-episodes`` the thread stops once the batches it has
  played reach the budget: the learner stops at or before the last of them.
- **Checkpoints drain the pipeline.** At a checkpoint step nothing is in flight: the batch of that
  step is played after the checkpoint, with its weights. A killed run resumes from the checkpoint
  and plays exactly what the run would have played (the task stream's position is the last trained
  batch's), so no episode is lost or counted twice; the price is that a checkpoint step overlaps
  nothing (``--save-every``).

The learner's ratio is computed against the log-probabilities recorded at sampling
(:attr:`~agentgym.train.rollout.samples.Sample.behaviour_logprobs`), so PPO's clip corrects for
the lag.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agentgym.train.hooks import StepContext
from agentgym.train.optim import fsdp
from agentgym.train.rollout.behaviour import behaviour_weights
from agentgym.train.rollout.episodes import Episode
from agentgym.train.rollout.tasks import StepTasks

TIMELINE_SPANS = 100_000
"""the most timeline spans kept (the latest ones)"""


@dataclass
class RolloutBatch:
    """One step's episodes, after the extensions' ``after_rollout``, and how they were played."""

    step: int
    episodes: list[Episode]
    ctx: StepContext
    """the step's context for the learner's hooks (its ``policy`` is the learner's)"""
    stage: float | None
    """the PRS stage it was played at (None: the final stage)"""
    stats: dict[str, float]
    """the collector's rollout cost (:meth:`~agentgym.train.rollout.collector.Collector.stats`)"""
    played: list[Episode]
    """every fault-free episode played, also those an extension then dropped"""
    version: int
    """the weights' version (updates done) it was played with"""
    tasks: Any = None
    """its :class:`~agentgym.train.rollout.tasks.StepTasks`"""
    end_position: int | None = None
    """the task stream's position after it (set once the step's extra tasks are counted)"""
    wait: float = 0.0
    """seconds the learner waited for it"""
    gathered: Any = None
    """FSDP: the weights gathered for its rollout, released after the learner's hooks"""


class _Timeline:
    """Who was busy when: ``(who, what, start, end)`` spans in ``time.perf_counter`` seconds."""

    def __init__(self, collector):
        self.spans: deque = deque(maxlen=TIMELINE_SPANS)
        collector.trace = _Tagged(self.spans, "rollout")

    def add(self, who: str, what: str, start: float) -> float:
        end = time.perf_counter()
        self.spans.append((who, what, start, end))
        return end - start

    def as_dicts(self, origin: float) -> list[dict[str, Any]]:
        """The spans as dicts, in seconds since ``origin``."""
        return [{"who": who, "what": what, "start": round(s - origin, 6), "end": round(e - origin, 6)}
                for who, what, s, e in list(self.spans)]


class _Tagged:
    """The collector's trace: its ``(what, start, end)`` spans go to the timeline as ``who``'s."""

    def __init__(self, spans: deque, who: str):
        self._spans, self._who = spans, who

    def append(self, span) -> None:
        self._spans.append((self._who, *span))


class StepRollouts:
    """``--async-steps 0``: each step plays its groups with the weights it trains."""

    asynchronous = False

    def __init__(self, run, state):
        self.run, self.position = run, state.data_position
        self.timeline = _Timeline(run.collector)

    def next(self, step: int) -> RolloutBatch:
        """The step's episodes, played now."""
        run, r, dist = self.run, self.run.config.rollout, self.run.dist
        stage = run.prs_stage(step)
        run.envs.set_prs_stage(stage)
        run.collector.start_step()
        tasks = StepTasks(run.stream, self.position, r.num_groups, dist.rank, dist.world_size)
        ctx = run.step_context(step, tasks.extra)
        gathered = fsdp.gather(run.model)  # FSDP: ranks generate for episodes of different lengths
        episodes = run.extensions.after_rollout(ctx, run.collector(tasks.batch()))
        return RolloutBatch(step, episodes, ctx, stage, run.collector.stats(), list(run.collector.played), step,
                            tasks=tasks, gathered=gathered)

    def hooks_done(self, batch: RolloutBatch) -> int:
        """The learner's hooks of ``batch`` are done: release what its rollout held; returns the
        task stream's position after it."""
        fsdp.release(batch.gathered)
        self.position = batch.tasks.end(most_taken=self.run.dist.max_int(batch.tasks.taken))
        return self.position

    @contextlib.contextmanager
    def paused(self):
        """Nothing plays beside the learner here."""
        yield

    def before_update(self) -> None:
        self.run.generator.before_update()

    def after_update(self, version: int) -> dict[str, float]:
        """The update made version ``version``: the generator gets it for the next step."""
        run = self.run
        return run.generator.sync(version, run.model, run.config.run.output_dir)

    def step_done(self, step: int) -> None:
        """Step ``step`` is logged, evaluated and checkpointed."""

    def metrics(self, batch: RolloutBatch) -> dict[str, float]:
        return {}

    def close(self) -> None:
        pass


class _Closing(Exception):
    """The rollout thread is asked to stop."""


@dataclass
class _Published:
    snapshot: Any
    system_prompt: Callable[[str], str]
    schedule: Any


def _learner_only(*args, **kwargs):
    raise RuntimeError("under --async-steps an extension plays extra groups (ctx.collect, ctx.next_requests) "
                       "only in after_rollout, which runs on the rollout thread")


class AsyncRollouts:
    """``--async-steps K``: a rollout thread plays up to K steps ahead (see the module's docstring)."""

    asynchronous = True

    def __init__(self, run, state, k: int, end_step: int):
        self.run, self.k, self.start, self.end = run, int(k), state.step, int(end_step)
        self.save_every = run.config.run.save_every
        self.weights = behaviour_weights(run.model, run.generator, run.tokenizer, state.step)
        run.collector.policy = self.weights.policy
        self.timeline = _Timeline(run.collector)
        self.position = state.data_position
        self.budget = run.config.run.max_episodes
        self.played = state.episodes
        """episodes played through the last batch played: those trained, and those in flight"""
        self.cond = threading.Condition()
        self.published: dict[int, _Published] = {}
        self.pending: dict[int, tuple] = {}
        self.batches: dict[int, RolloutBatch] = {}
        self.done_through = self.start - 1
        self.deferred: int | None = None
        self.waiting, self.finished, self.hold, self.closing = False, False, False, False
        self.next_gate: Callable[[], bool] = lambda: True
        self.error: BaseException | None = None
        self._publish(self.start)
        self.thread = threading.Thread(target=self._play, name="agentgym-rollouts", daemon=True)
        self.thread.start()

    # ----- the schedule -----
    def version_for(self, step: int) -> int:
        """The weights' version batch ``step`` is played with."""
        checkpoint = self.start
        if self.save_every > 0:
            checkpoint = max(checkpoint, step // self.save_every * self.save_every)
        return max(step - self.k, checkpoint)

    def _checkpoint_step(self, version: int) -> bool:
        return self.save_every > 0 and version % self.save_every == 0

    # ----- the rollout thread -----
    def _play(self) -> None:
        try:
            for b in range(self.start, self.end):
                if 0 < self.budget <= self.played:
                    break  # --max-episodes: the learner stops at or before the last batch played
                v = self.version_for(b)
                self._job(lambda v=v: v in self.published, lambda b=b, v=v: self._collect(b, v))
                gated = self.run.extensions.rewrites_rollouts
                self._job(lambda b=b, gated=gated: not gated or self.done_through >= b - 1, lambda b=b: self._finish(b))
        except _Closing:
            pass
        except BaseException as e:  # handed to the learner, which raises it
            with self.cond:
                self.error = e
                self.cond.notify_all()
        finally:
            with self.cond:
                self.finished = True
                self.cond.notify_all()

    def _job(self, gate: Callable[[], bool], work: Callable[[], None]) -> None:
        """Wait until ``gate`` holds (and the learner does not hold the thread), then do ``work``."""
        with self.cond:
            self.next_gate = gate
            while not (self.closing or (gate() and not self.hold)):
                self.waiting = True
                self.cond.notify_all()
                self.cond.wait()
            self.waiting = False
            if self.closing:
                raise _Closing
        try:
            work()
        finally:
            with self.cond:
                self.cond.notify_all()

    def _collect(self, step: int, version: int) -> None:
        run, r = self.run, self.run.config.rollout
        with self.cond:
            pub = self.published[version]
            for old in [v for v in self.published if v < version]:
                del self.published[old]
        loaded = self.weights.load(version, pub.snapshot)
        stage = None if run.config.env.prs_schedule == "none" else pub.schedule.stage_at(step)
        run.envs.set_prs_stage(stage)
        run.collector.start_step()
        run.collector.hook = pub.system_prompt
        tasks = StepTasks(run.stream, self.position, r.num_groups)
        ctx = dataclasses.replace(run.step_context(step, tasks.extra), policy=self.weights.policy)
        self.pending[step] = (ctx, tasks, run.collector(tasks.batch()), stage, version, loaded)

    def _finish(self, step: int) -> None:
        run = self.run
        ctx, tasks, episodes, stage, version, loaded = self.pending.pop(step)
        episodes = run.extensions.after_rollout(ctx, episodes)
        self.position = tasks.end(most_taken=tasks.taken)
        learner_ctx = dataclasses.replace(ctx, policy=run.policy, collect=_learner_only, next_requests=_learner_only)
        batch = RolloutBatch(step, episodes, learner_ctx, stage, {**run.collector.stats(), **loaded},
                             list(run.collector.played), version, tasks=tasks, end_position=self.position)
        self.played += int(batch.stats["episodes/played"])
        with self.cond:
            self.batches[step] = batch

    # ----- the learner's side -----
    def next(self, step: int) -> RolloutBatch:
        """Batch ``step``, once the rollout thread has played it."""
        t = time.perf_counter()
        with self.cond:
            while step not in self.batches and self.error is None and not self.finished:
                self.cond.wait()
            if self.error is not None:
                raise self.error
            if step not in self.batches:
                raise RuntimeError(f"the rollout thread stopped before playing step {step}")
            batch = self.batches.pop(step)
        batch.wait = self.timeline.add("learner", "wait", t)
        return batch

    def hooks_done(self, batch: RolloutBatch) -> int:
        return batch.end_position

    @contextlib.contextmanager
    def paused(self):
        """Hold the rollout thread once it has done every job it may do now (so what it played
        before the pause does not depend on timing)."""
        with self.cond:
            while not (self.finished or self.error is not None or (self.waiting and not self.next_gate())):
                self.cond.wait()
            self.hold = True
        try:
            yield
        finally:
            with self.cond:
                self.hold = False
                self.cond.notify_all()

    def before_update(self) -> None:
        pass

    def after_update(self, version: int) -> dict[str, float]:
        """The update made version ``version``: publish it (at a checkpoint step, after the checkpoint)."""
        if self._checkpoint_step(version):
            self.deferred = version
        else:
            self._publish(version)
        return {}

    def step_done(self, step: int) -> None:
        """Step ``step`` is logged, evaluated and checkpointed: publish a version held for the
        checkpoint, and let ``after_rollout`` of step ``step + 1`` run."""
        if self.deferred is not None:
            self._publish(self.deferred)
            self.deferred = None
        with self.cond:
            self.done_through = step
            self.cond.notify_all()

    def _publish(self, version: int) -> None:
        if version > self.version_for(self.end - 1):
            return  # no batch left to play with it
        run = self.run
        t = time.perf_counter()
        pub = _Published(self.weights.snapshot(run.model, version, run.config.run.output_dir),
                         run.extensions.frozen_system_prompt(), copy.deepcopy(run.schedule))
        self.timeline.add("learner", "publish", t)
        with self.cond:
            self.published[version] = pub
            self.cond.notify_all()

    def metrics(self, batch: RolloutBatch) -> dict[str, float]:
        return {"async/version_lag": float(batch.step - batch.version), "time/rollout_wait": batch.wait}

    def close(self) -> None:
        """Stop the rollout thread (after the job it is doing) and give the collector its policy back."""
        with self.cond:
            self.closing = True
            self.cond.notify_all()
        self.thread.join()
        self.run.collector.policy = self.run.policy
        self.run.collector.hook = self.run.extensions.system_prompt


def make_rollouts(run, state, end_step: int):
    """The run's rollout source: :class:`AsyncRollouts` with ``--async-steps`` > 0, else :class:`StepRollouts`."""
    k = run.config.rollout.async_steps
    return AsyncRollouts(run, state, k, end_step) if k > 0 else StepRollouts(run, state)
