"""GCD on the GRPO (or GiGPO) loop (SPEC §4.4): the actor is also trained as a generative judge of
its own steps, and the mistakes its critiques name go into later system prompts.

Each step, after the policy's advantages:

1. Steps of the batch are labelled by rule (:func:`~agentgym.train.methods.gcd.steps.labelled_steps`:
   bad if invalid or its start state comes back later, good if it ended a successful episode);
   with ``judge_url``, an external judge labels up to ``external_steps`` unlabelled steps too.
2. The labels are balanced (``balance``) and capped at ``max_judged_steps`` steps.
3. For each judged step the policy samples ``k`` judgments of the judge prompt; each earns 1 when
   its verdict is the label, and the k form one GRPO group. They return as samples of kind
   ``judge``, trained in the same backward pass as the policy with weight ``lam`` and their own
   loss settings: ``L = L_policy + lam * L_judge``.
4. Critiques of bad steps (the judgments that called a bad step bad) are gathered; every
   ``correction_every`` steps they are summarized into a "Common mistakes" list, by the model
   itself or the external judge, or counted offline (``correction_source``; ``auto`` uses the
   model's list only when it reads as text and otherwise counts the readable critique phrases:
   :mod:`agentgym.train.methods.gcd.correction_source`). The list goes into every later episode's system
   prompt, into ``OUTPUT_DIR/gcd_mistakes.jsonl`` when it changes, and into checkpoints with its
   source.
"""

from __future__ import annotations

import copy
import json
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np

from agentgym.agents import SamplingConfig
from agentgym.train.base.errors import ConfigError
from agentgym.train.base.flags import from_recorded
from agentgym.train.base.metrics import trim_to_step
from agentgym.train.base.records import trainer_record
from agentgym.train.config.coldstart import SFTConfig
from agentgym.train.config.optim import LossConfig
from agentgym.train.config.run import RunConfig
from agentgym.train.config.tree import TrainConfig
from agentgym.train.hooks import SampleKind, StepContext, TrainerExtension
from agentgym.train.methods.gcd.coldstart import judge_cold_start_samples
from agentgym.train.methods.gcd.correction import CorrectionState, mistakes_summary_prompt, parse_mistakes
from agentgym.train.methods.gcd.correction_source import CORRECTION_SOURCES, MistakesChoice, choose_mistakes, env_text
from agentgym.train.methods.gcd.external import ExternalJudge, JudgeUnavailable
from agentgym.train.methods.gcd.judge import critique_of, judge_prompt, judge_reward, parse_verdict, rule_critique
from agentgym.train.methods.gcd.labels import BAD, BALANCE_MODES, GOOD, balance_labels
from agentgym.train.methods.gcd.steps import JudgedStep, cap_steps, judgment_metrics, labelled_steps
from agentgym.train.methods.gigpo import GiGPO, GiGPOConfig
from agentgym.train.methods.grpo import group_advantages
from agentgym.train.methods.registry import Method, register
from agentgym.train.rollout.chat import ChatEncoder
from agentgym.train.rollout.samples import Sample

MISTAKES_FILE = "gcd_mistakes.jsonl"
"""Under OUTPUT_DIR: one ``{"step", "mistakes", "source", "critiques", "readability"}`` line per
change of the list (``readability``: the model's list's score at that refresh, null when no model
wrote one)."""


@dataclass
class GCDConfig:
    """GCD's own settings (flags ``--gcd.*``)."""

    lam: float = 1.0
    """weight of the judge loss: L = L_policy + lam * L_judge"""
    k: int = 4
    """judgments sampled per judged step (one GRPO group)"""
    max_judged_steps: int = 8
    """judged steps per training step at most (after balancing; half good, half bad)"""
    balance: Literal["downsample", "none"] = "downsample"
    """equal good and bad steps (`downsample`; a batch with one class empty trains no judge), or all"""
    judge_max_new_tokens: int = 128
    """most tokens of one judgment (a short critique, then the verdict)"""
    # no KL by default: the reference never judged; seq-mean: a verbose judgment weighs no more
    judge_loss: LossConfig = field(default_factory=lambda: LossConfig(beta=0.0, aggregation="seq-mean"))
    """the judge samples' token loss (flags --gcd.judge-loss.*)"""
    judge_url: str | None = None
    """OpenAI-compatible endpoint (with /v1) of an external judge that labels more steps"""
    judge_model: str = "judge"
    """the external judge's served model name"""
    judge_api_key_env: str | None = None
    """name of the environment variable holding the external judge's API key (none: no key sent)"""
    judge_timeout: float = 30.0
    """seconds one external judge attempt may take, all of it"""
    judge_retries: int = 2
    """external judge attempts after the first"""
    judge_on_error: Literal["skip", "raise"] = "skip"
    """external judge down: log it and go on with the rule labels (`skip`), or stop the run"""
    external_steps: int = 8
    """unlabelled steps sent to the external judge per training step at most"""
    correction: bool = True
    """prompt-based correction: the "Common mistakes" list in later system prompts"""
    correction_every: int = 5
    """refresh the list every this many training steps (K)"""
    correction_items: int = 5
    """mistakes in the list at most"""
    correction_rule_critiques: bool = False
    """also gather the templated critiques of rule-labelled bad steps (not only the model's own)"""
    summary_max_new_tokens: int = 128
    """most tokens of the model's own mistakes summary (decoded greedily)"""
    correction_source: Literal["auto", "model", "offline"] = "auto"
    """who writes the list: `model` (the actor, or the external judge), `offline` (the critique count),
    or `auto` (the model's list when it reads as text, else the count of readable critiques)"""
    correction_min_readability: float = 0.85
    """auto: the least share of real words (common English, the env's own text) a list or critique needs"""
    base: Literal["grpo", "gigpo"] = "grpo"
    """the method GCD is added to; `gigpo` chains the GiGPO extension (flags --gigpo.*)"""


    def validate(self) -> None:
        if not (np.isfinite(self.lam) and self.lam >= 0):
            raise ConfigError(f"--gcd.lam must be a finite number >= 0, got {self.lam}")
        if self.k < 2:
            raise ConfigError(f"--gcd.k must be >= 2 (group advantages compare judgments of one step), got {self.k}")
        if self.max_judged_steps < (2 if self.balance == "downsample" else 1):
            raise ConfigError(f"--gcd.max-judged-steps must be >= 2 with --gcd.balance downsample (one good, "
                              f"one bad) and >= 1 otherwise, got {self.max_judged_steps}")
        if self.correction_source not in CORRECTION_SOURCES:
            raise ConfigError(f"--gcd.correction-source must be one of {CORRECTION_SOURCES}, "
                              f"got {self.correction_source!r}")
        if not 0.0 <= self.correction_min_readability <= 1.0:
            raise ConfigError(f"--gcd.correction-min-readability must be in [0, 1] (a share of words), "
                              f"got {self.correction_min_readability}")
        if self.balance not in BALANCE_MODES:
            raise ConfigError(f"--gcd.balance must be one of {BALANCE_MODES}, got {self.balance!r}")
        for name in ("judge_max_new_tokens", "summary_max_new_tokens", "correction_every", "correction_items"):
            if getattr(self, name) < 1:
                raise ConfigError(f"--gcd.{name.replace('_', '-')} must be >= 1, got {getattr(self, name)}")
        if not self.judge_timeout > 0:
            raise ConfigError(f"--gcd.judge-timeout must be > 0 seconds, got {self.judge_timeout}")
        if self.judge_retries < 0 or self.external_steps < 0:
            raise ConfigError(f"--gcd.judge-retries and --gcd.external-steps must be >= 0, got "
                              f"{self.judge_retries} and {self.external_steps}")
        if self.judge_url is not None and not self.judge_url.startswith(("http://", "https://")):
            raise ConfigError(f"--gcd.judge-url must be an http(s) URL ending in /v1, got {self.judge_url!r}")

    def loss_config(self) -> LossConfig:
        """The judge samples' :class:`~agentgym.train.config.optim.LossConfig` (checked with the config's
        other groups: ``--gcd.judge-loss.*``)."""
        return self.judge_loss


class GCD(TrainerExtension):
    """The GCD extension; pass ``GCD(config.gcd)`` to :func:`agentgym.train.loop.train` (after
    ``GiGPO(config.gigpo)`` for ``base="gigpo"``: :func:`gcd_extensions` builds the list)."""

    name = "gcd"
    generates_in_hooks = True  # the judge samples and the mistakes summary
    summed_metrics = frozenset({"gcd/steps", "gcd/reason_invalid", "gcd/reason_revisit", "gcd/reason_solved",
                                "gcd/labels_good_before", "gcd/labels_bad_before", "gcd/labels_unlabelled",
                                "gcd/labels_good", "gcd/labels_bad", "gcd/judged_steps", "gcd/judge_samples",
                                "gcd/judge_too_long", "gcd/external_asked", "gcd/external_good", "gcd/external_bad"})

    def __init__(self, cfg: GCDConfig | None = None, judge=None):
        self.cfg = cfg or GCDConfig()
        self.sample_kinds = {"judge": SampleKind(weight=self.cfg.lam, loss=self.cfg.loss_config())}
        self.correction = CorrectionState(self.cfg.correction_every)
        self.judge = judge if judge is not None else self._external_judge()
        self._metrics: dict[str, float] = {}
        self._log_checked = False
        self._fallback_said = False

    def _external_judge(self):
        if not self.cfg.judge_url:
            return None

        key = os.environ.get(self.cfg.judge_api_key_env) if self.cfg.judge_api_key_env else None
        return ExternalJudge(self.cfg.judge_url, self.cfg.judge_model, timeout=self.cfg.judge_timeout,
                             retries=self.cfg.judge_retries, api_key=key)

    # ----- hooks -----
    def cold_start_samples(self, env, encoder, requests, settings, seed):
        """``--cold-start.judge-samples`` judge samples (critique and verdict from step labels,
        balanced) from episodes of the cold start's tasks, mixed into its expert data."""
        if settings.judge_samples < 1:
            return [], ""
        samples, stats = judge_cold_start_samples(env, encoder, settings.judge_samples, requests, seed=seed)
        return samples, (f"{len(samples)} judge samples ({stats['good']} good, {stats['bad']} bad; before balancing "
                         f"{stats['good_before']} good, {stats['bad_before']} bad) from {stats['episodes']} episodes")

    def system_prompt(self, prompt: str) -> str:
        return self.correction.system_prompt(prompt) if self.cfg.correction else prompt

    def frozen_system_prompt(self):
        if not self.cfg.correction:
            return lambda prompt: prompt
        return copy.deepcopy(self.correction).system_prompt

    def extra_samples(self, ctx: StepContext, episodes) -> list[Sample]:
        m: dict[str, float] = {}
        items = labelled_steps(episodes)
        m["gcd/steps"] = float(len(items))
        for reason in ("invalid", "revisit", "solved"):
            m[f"gcd/reason_{reason}"] = float(sum(s.reason == reason for _, s in items))
        critiques: list[str] = []
        if self.judge is not None:
            items = self._external_labels(ctx, items, critiques, m)
        kept, stats = balance_labels(items, ctx.rng, self.cfg.balance)
        m.update({"gcd/labels_good_before": float(stats["good_before"]),
                  "gcd/labels_bad_before": float(stats["bad_before"]),
                  "gcd/labels_unlabelled": float(stats["unlabelled"]),
                  "gcd/balance_downsampled": float(stats["method"] == "downsample"
                                                   and stats["good_before"] != stats["bad_before"]),
                  "gcd/balance_one_class_empty": float(stats["method"] == "one_class_empty")})
        kept = cap_steps(kept, self.cfg.max_judged_steps, ctx.rng, balanced=self.cfg.balance == "downsample")
        m["gcd/labels_good"] = float(sum(label == GOOD for label, _ in kept))
        m["gcd/labels_bad"] = float(sum(label == BAD for label, _ in kept))
        _note_labels(episodes, items)
        samples = self._judge_samples(ctx, kept, critiques, m, episodes)
        if self.cfg.correction_rule_critiques:
            critiques += [rule_critique(s.observation, s.action, BAD, s.reason) for label, s in items
                          if label == BAD and s.reason is not None]
        if self.cfg.correction:
            self._correct(ctx, critiques, m, episodes)
        self._metrics = m
        return samples

    def metrics(self) -> dict[str, float]:
        return dict(self._metrics)

    def state_dict(self) -> dict:
        return {"correction": self.correction.state_dict()}

    def load_state_dict(self, state: dict) -> None:
        if "correction" in state:
            self.correction.load_state_dict(state["correction"])

    def system_prompt_note(self) -> str | None:
        if not (self.cfg.correction and self.correction.mistakes):
            return None
        return f'GCD "Common mistakes" list ({len(self.correction.mistakes)} items) appended'

    # ----- labels from the external judge -----
    def _external_labels(self, ctx, items, critiques, m):
        open_steps = [j for j, (label, _) in enumerate(items) if label is None]
        if len(open_steps) > self.cfg.external_steps:
            open_steps = sorted(int(j) for j in ctx.rng.choice(open_steps, self.cfg.external_steps, replace=False))
        items = list(items)
        asked = good = bad = 0
        m["gcd/external_skipped"] = 0.0
        t0 = time.perf_counter()
        for j in open_steps:
            step = items[j][1]
            try:
                judgment = self.judge.judge_step(step.task, step.observation, step.action, self.correction.mistakes)
            except JudgeUnavailable as e:
                if self.cfg.judge_on_error == "raise":
                    raise JudgeUnavailable(f"{e} (--gcd.judge-on-error skip trains on the rule labels instead)") from e
                # one failure is enough for this step: every further call would wait out its deadline too
                m["gcd/external_skipped"] = 1.0
                self._say(ctx, f"gcd: external judge unavailable at step {ctx.step + 1}, training on rule labels "
                               f"only this step: {e}", err=True)
                break
            asked += 1
            if judgment.verdict in (GOOD, BAD):
                items[j] = (judgment.verdict, step)
                good += judgment.verdict == GOOD
                bad += judgment.verdict == BAD
                if judgment.verdict == BAD and judgment.critique:
                    critiques.append(judgment.critique)
        m.update({"gcd/external_asked": float(asked), "gcd/external_good": float(good),
                  "gcd/external_bad": float(bad), "time/judge_external": time.perf_counter() - t0})
        return items

    # ----- the judge task -----
    def _judge_samples(self, ctx, kept: list[tuple[str, JudgedStep]], critiques: list[str], m,
                       episodes=()) -> list[Sample]:
        m.update({"gcd/judge_samples": 0.0, "time/judge_generate": 0.0, "tokens/judge_generated": 0.0,
                  "gcd/judge_reward_mean": float("nan"), "gcd/judge_zero_adv_frac": float("nan")})
        m.update(judgment_metrics([], []))
        if not kept:
            return []
        encoder = ChatEncoder(ctx.tokenizer)
        limit = ctx.run.max_prompt_tokens
        prompts, steps = [], []
        for label, step in kept:
            ids = encoder.prompt_ids(judge_prompt(step.task, step.observation, step.action, self.correction.mistakes))
            if len(ids) > limit:
                continue  # a prompt past the rollout's limit would not fit the model either
            prompts.append(ids)
            steps.append((label, step))
        m["gcd/judge_too_long"] = float(len(kept) - len(steps))
        if not steps:
            return []
        sampling = SamplingConfig(max_new_tokens=self.cfg.judge_max_new_tokens,
                                  temperature=ctx.run.sampling.temperature, top_p=ctx.run.sampling.top_p)
        k = self.cfg.k
        t0 = time.perf_counter()
        with self._autocast(ctx):
            completions = ctx.policy.generate([ids for ids in prompts for _ in range(k)], sampling)
        m["time/judge_generate"] = time.perf_counter() - t0
        rewards = [judge_reward(c.text, steps[j // k][0]) for j, c in enumerate(completions)]
        adv = group_advantages(rewards, [j // k for j in range(len(completions))], normalize_std=ctx.run.std_normalize)
        samples, verdicts = [], []
        for j, (label, step) in enumerate(steps):
            said = []
            for c, a in zip(completions[j * k:(j + 1) * k], adv[j * k:(j + 1) * k]):
                ids = list(c.token_ids)
                samples.append(Sample(prompts[j] + ids, [0] * len(prompts[j]) + [1] * len(ids), float(a),
                                      kind="judge", episode=step.episode))
                verdict = parse_verdict(c.text)
                said.append(verdict)
                if label == BAD and verdict == BAD:
                    critiques.append(critique_of(c.text))
            verdicts.append(said)
            if step.episode < len(episodes):
                _note_turn(episodes[step.episode], "gcd/verdicts", step.turn, said)
        m.update(judgment_metrics([label for label, _ in steps], verdicts))
        tied = [np.ptp(rewards[j * k:(j + 1) * k]) == 0 for j in range(len(steps))]
        m.update({"gcd/judge_samples": float(len(samples)), "gcd/judged_steps": float(len(steps)),
                  "tokens/judge_generated": float(sum(len(c.token_ids) for c in completions)),
                  "gcd/judge_reward_mean": float(np.mean(rewards)), "gcd/judge_zero_adv_frac": float(np.mean(tied))})
        return samples

    @staticmethod
    def _autocast(ctx):
        # generate under the same autocast as the rollout, so judgments are sampled like actions
        return ctx.run.autocast()

    # ----- prompt-based correction -----
    def _correct(self, ctx, critiques: list[str], m, episodes) -> None:
        dist = ctx.dist
        if dist is not None and dist.active:
            # data-parallel: one list for the run, from every rank's critiques and rank 0's summary
            critiques = [c for part in dist.all_gather(critiques) for c in part]
        self.correction.add_critiques(critiques)
        m["gcd/critiques_gathered"] = float(len(critiques))
        m["gcd/critiques_pending"] = float(len(self.correction.critiques))
        done = ctx.step + 1
        for key in ("refreshed", "source_self", "source_external", "source_offline", "dropped"):
            m[f"gcd/correction_{key}"] = 0.0
        m["gcd/correction_readability"] = float("nan")
        self._list_metrics(m)
        self._trim_log(ctx, done - 1)
        if not self.correction.due(done):
            return
        pending = list(self.correction.critiques)
        before = list(self.correction.mistakes)
        t0 = time.perf_counter()
        score, dropped = None, 0
        if pending:
            main = dist is None or dist.is_main
            choice = self._summarize(ctx, pending, episodes) if main else None
            if dist is not None:
                choice = dist.broadcast(choice)
            source, score, dropped = choice.source, choice.readability, choice.dropped
            self.correction.update(done, choice.mistakes, source)
        else:  # nothing new to go on: keep the list and its source, restart the period
            source = "kept"
            self.correction.update(done, before, self.correction.source)
        m["time/correction"] = time.perf_counter() - t0
        m["gcd/correction_refreshed"] = 1.0
        if source in ("self", "external", "offline"):
            m[f"gcd/correction_source_{source}"] = 1.0
        m["gcd/correction_readability"] = float("nan") if score is None else float(score)
        m["gcd/correction_dropped"] = float(dropped)
        self._list_metrics(m)
        if self.correction.mistakes != before:
            self._write_list(ctx, done, source, len(pending), score)

    def _list_metrics(self, m) -> None:
        # the list in force from now on: its length, and 1 when a model wrote it, 0 when counted
        m["gcd/correction_items"] = float(len(self.correction.mistakes))
        src = self.correction.source
        m["gcd/correction_source"] = float("nan") if src is None else float(src != "offline")

    def _summarize(self, ctx, critiques: list[str], episodes) -> MistakesChoice:
        mode = self.cfg.correction_source
        got, writer = self._model_list(ctx, critiques) if mode != "offline" else (None, None)
        choice = choose_mistakes(critiques, got, writer, mode=mode, env_texts=env_text(episodes),
                                 max_items=self.cfg.correction_items,
                                 min_readability=self.cfg.correction_min_readability)
        if choice.fallback is not None and not self._fallback_said:
            self._fallback_said = True
            self._say(ctx, f"gcd: the {writer} mistakes summary at step {ctx.step + 1} {choice.fallback}; "
                           f"counting the critiques offline instead ({len(critiques) - choice.dropped} of "
                           f"{len(critiques)} name a mistake in readable text; --gcd.correction-source model "
                           f"keeps the model's list)")
        return choice

    def _model_list(self, ctx, critiques: list[str]) -> tuple[list[str], str]:
        """The summarizing model's list (``[]`` when its reply holds none) and who wrote it."""
        n = self.cfg.correction_items
        if self.judge is None:
            return parse_mistakes(self._self_summary(ctx, critiques), n), "self"

        try:
            return self.judge.summarize_mistakes(critiques, n), "external"
        except JudgeUnavailable as e:
            self._say(ctx, f"gcd: external judge unavailable for the mistakes summary, counted offline: {e}",
                      err=True)
            return [], "external"

    def _self_summary(self, ctx, critiques: list[str]) -> str:
        ids = ChatEncoder(ctx.tokenizer).prompt_ids(mistakes_summary_prompt(critiques, self.cfg.correction_items))
        # greedy: the summary is an answer, not an exploration, and draws no random numbers
        with self._autocast(ctx):
            (c,) = ctx.policy.generate([ids], SamplingConfig(max_new_tokens=self.cfg.summary_max_new_tokens,
                                                             temperature=0.0))
        return c.text

    # ----- the list as text -----
    def _log_path(self, ctx) -> Path | None:
        out = ctx.run.output_dir
        return Path(out) / MISTAKES_FILE if out else None

    def _trim_log(self, ctx, upto: int) -> None:
        """Once per run: drop lines written after the step this run started from (a resume), as
        metrics.jsonl does, so the file reads as if the run had never stopped."""
        if self._log_checked or (ctx.dist is not None and not ctx.dist.is_main):
            return
        self._log_checked = True
        path = self._log_path(ctx)
        if path is None or not path.exists():
            return
        if ctx.step > 0:
            trim_to_step(path, upto)  # a hand-edited step: one error naming the line
        else:
            path.write_text("")

    def _write_list(self, ctx, step: int, source: str, n_critiques: int, score: float | None) -> None:
        if ctx.dist is not None and not ctx.dist.is_main:
            return
        path = self._log_path(ctx)
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            with path.open("a") as f:
                f.write(json.dumps({"step": step, "mistakes": self.correction.mistakes, "source": source,
                                    "critiques": n_critiques,
                                    "readability": None if score is None else round(score, 4)}) + "\n")
        listed = "".join(f"\n  - {x}" for x in self.correction.mistakes) or " (empty)"
        self._say(ctx, f"gcd: common mistakes at step {step} ({source}, from {n_critiques} critiques):{listed}")

    @staticmethod
    def _say(ctx, text: str, err: bool = False) -> None:
        if ctx.run.quiet and not err:
            return
        from tqdm.auto import tqdm

        tqdm.write(text, file=sys.stderr if err else sys.stdout)


def _note_turn(ep, name: str, turn: int, value) -> None:
    """Set one turn's signal of ``ep`` (for the saved episodes, ``--log-episodes``)."""
    if turn < len(ep.turns):
        ep.turn_signals.setdefault(name, [None] * len(ep.turns))[turn] = value


def _note_labels(episodes, items: list[tuple[str | None, JudgedStep]]) -> None:
    """Each labelled step's label, and why the rules gave it, on its episode's turn."""
    for label, step in items:
        if step.episode < len(episodes):
            _note_turn(episodes[step.episode], "gcd/label", step.turn, label)
            _note_turn(episodes[step.episode], "gcd/reason", step.turn, step.reason)


def trained_mistakes(model_dir: str) -> list[str]:
    """The "Common mistakes" list a checkpoint was trained with (empty when there is none, or when
    the run had ``--no-gcd.correction``): evaluation puts it in the system prompt, as training did."""
    record = trainer_record(model_dir)
    if record is None or "gcd" not in record.state.extension:
        return []
    gcd = GCD(from_recorded(GCDConfig, record.config.get("gcd") or {}))
    gcd.load_state_dict(record.state.extension["gcd"])
    return list(gcd.correction.mistakes) if gcd.cfg.correction else []


def gcd_extensions(config) -> list[TrainerExtension]:
    """The extensions of a GCD run: GiGPO first when ``config.gcd.base == "gigpo"``, then GCD."""
    base = [GiGPO(getattr(config, "gigpo", None))] if config.gcd.base == "gigpo" else []
    return base + [GCD(config.gcd)]


@dataclass
class GCDTrainConfig(TrainConfig):
    gcd: GCDConfig = field(default_factory=GCDConfig)
    gigpo: GiGPOConfig = field(default_factory=GiGPOConfig)
    """GiGPO's settings, used with --gcd.base gigpo"""


def gcd_defaults() -> GCDTrainConfig:
    # as the paper's cold start: judge samples mixed into the expert data
    return GCDTrainConfig(run=RunConfig(output_dir="runs/gcd"), cold_start=SFTConfig(judge_samples=64))


GCD_METHOD = register(Method(
    name="gcd", summary="GCD: the actor co-trained as a judge of its own steps, plus a \"Common mistakes\" list",
    description="""GCD: GRPO (or GiGPO) with the actor co-trained as a generative judge of its own steps, and a
"Common mistakes" list from its critiques put into later system prompts (SPEC §4.4).

    python trainers/gcd.py                                    # tiny model on ToolQA-v0, CPU, minutes
    python trainers/gcd.py --env-id ALFWorld-v0 --layout window --gcd.base gigpo
    python trainers/gcd.py --gcd.lam 0.5 --gcd.k 8 --gcd.judge-url http://127.0.0.1:8000/v1 --gcd.judge-model judge

Every GRPO flag works here; GCD's own are --gcd.* and, with --gcd.base gigpo, GiGPO's --gigpo.*
(--help lists them). The mistakes list is printed and written to OUTPUT_DIR/gcd_mistakes.jsonl
each time it changes.
""",
    config=GCDTrainConfig, defaults=gcd_defaults, extensions=gcd_extensions, extension=(GCD, GCDConfig),
    run_name=lambda config: f"gcd-{config.gcd.base}", doc="docs/trainers.md#gcd-the-actor-as-a-judge-of-its-own-steps-trainersgcdpy"))
