"""PPO with a value head on the GRPO loop (SPEC §4.5): a critic instead of the group baseline. The
math over turns (generalized advantage estimation from the value head, the advantages' whitening,
the optionally clipped value loss), then :class:`PPO`, the extension.

A turn is one step of the MDP: its state is the prompt the policy saw, its action the completion,
its reward the env's step reward. ``V_t`` is the value head's estimate at the end of turn t's
prompt; after the last turn the episode is over, so ``V_T = 0`` (also for an episode the turn limit
ended: the limit is part of the task). With ``delta_t = r_t + gamma * V_{t+1} - V_t``:

    A_t = delta_t + gamma * lam * A_{t+1}          (A_T = 0)
    R_t = A_t + V_t                                 (the value head's target)

A hand-computed episode of two turns, rewards (0, 1), values (0.5, 0.8), gamma 0.9, lam 0.5:
``delta_1 = 1 - 0.8 = 0.2``, ``delta_0 = 0 + 0.9 * 0.8 - 0.5 = 0.22``, ``A_1 = 0.2``,
``A_0 = 0.22 + 0.45 * 0.2 = 0.31``, ``R = (0.81, 1.0)``:

>>> adv, ret = gae([0.0, 1.0], [0.5, 0.8], gamma=0.9, lam=0.5)
>>> adv.round(6).tolist(), ret.round(6).tolist()
([0.31, 0.2], [0.81, 1.0])

``lam = 1`` gives the Monte Carlo return minus the value; ``lam = 0`` the one-step TD error:

>>> gae([0.0, 1.0], [0.5, 0.8], gamma=1.0, lam=1.0)[0].round(6).tolist()
[0.5, 0.2]
>>> gae([0.0, 1.0], [0.5, 0.8], gamma=1.0, lam=0.0)[0].round(6).tolist()
[0.3, 0.2]

On the loop (:class:`PPO`, flags ``--ppo.*``):

- ``build``: a linear value head on the policy's last hidden state (``hidden_size -> 1``, started
  at zero, so every value starts at 0), its parameters a second optimizer group at
  ``value_lr_scale`` x ``--learning-rate``. It trains with the policy, in the same optimizer steps.
- ``transform_advantages``: one pass of the policy without gradient over the step's samples gives
  the value at each turn's prompt end (the last token before the turn's sampled ids); GAE over the
  turns of each episode, with the env's step rewards (:func:`gae`), replaces
  the group-relative advantage, and the advantages are whitened over the batch's turns (every
  rank's). Episodes need no group: ``--group-size 1`` is allowed.
- ``extra_loss``: in every micro-batch of the update, the value head on the same forward pass's
  hidden states at those positions, ``value_coef * 0.5 * (V - R)^2`` (clipped around the values
  before the update with ``value_clip``), so the policy's trunk and the head learn together. It
  is a mean over the batch's turns, beside the policy loss.
- ``state_dict``: the head's weights, which checkpoints keep (a resumed run is bitwise the same).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import ClassVar, NamedTuple

import numpy as np

from agentgym.train.base.errors import ConfigError
from agentgym.train.config.rollout import RolloutConfig
from agentgym.train.config.run import RunConfig
from agentgym.train.config.tree import TrainConfig
from agentgym.train.hooks import MicroBatch, StepContext, TrainerExtension
from agentgym.train.methods.registry import Method, register
from agentgym.train.rollout.episodes import Episode
from agentgym.train.rollout.samples import Sample, episode_samples
from agentgym.train.view import RunView


def gae(rewards: Sequence[float], values: Sequence[float], gamma: float = 1.0,
        lam: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Advantages and value targets of one episode's turns (module docstring), float64.

    Args:
        rewards: the env's reward for each turn.
        values: the value head's estimate at each turn's prompt end (one per reward).
        gamma: discount per turn.
        lam: GAE's lambda: 1 is the Monte Carlo return minus the value, 0 the one-step TD error.
    """
    r = np.asarray(rewards, dtype=np.float64)
    v = np.asarray(values, dtype=np.float64)
    if r.shape != v.shape or r.ndim != 1:
        raise ValueError(f"need one value per reward, got {v.shape} values for {r.shape} rewards")
    adv = np.zeros_like(r)
    running = 0.0
    for t in range(len(r) - 1, -1, -1):
        next_value = v[t + 1] if t + 1 < len(r) else 0.0
        delta = r[t] + gamma * next_value - v[t]
        running = delta + gamma * lam * running
        adv[t] = running
    return adv, adv + v


def whiten(advantages: Sequence[np.ndarray], count: float, total: float, total_sq: float,
           eps: float = 1e-8) -> list[np.ndarray]:
    """Advantages minus their mean, over their std (population), with the mean and std from
    ``count`` values summing to ``total`` and their squares to ``total_sq`` (a batch's, summed
    over ranks, so every rank whitens alike).

    >>> a = [np.array([1.0, 3.0]), np.array([2.0])]
    >>> [x.round(4).tolist() for x in whiten(a, 3, 6.0, 14.0)]
    [[-1.2247, 1.2247], [0.0]]
    """
    if count <= 0:
        return [np.asarray(a, dtype=np.float64) for a in advantages]
    mean = total / count
    std = float(np.sqrt(max(total_sq / count - mean * mean, 0.0)))
    return [(np.asarray(a, dtype=np.float64) - mean) / (std + eps) for a in advantages]


def explained_variance(values: np.ndarray, returns: np.ndarray) -> float:
    """``1 - Var(R - V) / Var(R)``: 1 when the values predict the targets, 0 when no better than
    their mean, negative when worse; nan when the targets do not vary.

    >>> explained_variance(np.array([0.0, 1.0]), np.array([0.0, 1.0]))
    1.0
    >>> explained_variance(np.array([0.5, 0.5]), np.array([0.0, 1.0]))
    0.0
    """
    var = float(np.var(returns))
    return float("nan") if var == 0 else 1.0 - float(np.var(returns - values)) / var


def value_loss(values, old_values, returns, clip: float | None = None):
    """Per-item value loss ``0.5 * (V - R)^2`` (torch tensors in, a tensor out). With ``clip``
    (PPO2's clipped value loss) the larger of that and the loss of ``V`` kept within ``clip`` of
    the value before the update, so one batch cannot move a value far:
    ``0.5 * max((V - R)^2, (V_old + clamp(V - V_old, -clip, clip) - R)^2)``.

    >>> import torch
    >>> v, old, ret = torch.tensor([1.0, 0.3]), torch.tensor([0.5, 0.5]), torch.tensor([0.6, 0.0])
    >>> [round(x, 6) for x in value_loss(v, old, ret).tolist()]
    [0.08, 0.045]
    >>> [round(x, 6) for x in value_loss(v, old, ret, clip=0.1).tolist()]
    [0.08, 0.08]
    """
    import torch

    loss = (values - returns) ** 2
    if clip is not None:
        clipped = old_values + torch.clamp(values - old_values, -clip, clip)
        loss = torch.maximum(loss, (clipped - returns) ** 2)
    return 0.5 * loss


@dataclass
class PPOConfig:
    """PPO's own settings (flags ``--ppo.*``)."""

    min_group_size: ClassVar[int] = 1  # the value head is the baseline: a task needs one episode

    gae_gamma: float = 1.0
    """discount per turn (1: the undiscounted PRS return the env pays)"""
    gae_lambda: float = 0.95
    """GAE lambda over turns (1: Monte Carlo return minus the value; 0: one-step TD error)"""
    value_coef: float = 0.5
    """weight of the value loss 0.5 * (V - R)^2 beside the policy loss"""
    value_clip: float | None = None
    """clip the value loss around the values before the update by this much (PPO2's clipped value loss; None: off)"""
    value_lr_scale: float = 10.0
    """the value head's learning rate over --learning-rate (it starts at zero and has few weights)"""
    normalize_advantages: bool = True
    """whiten the advantages over the batch's turns (mean 0, std 1)"""

    # a flat name means one setting across the trainers: `gamma` is GiGPO's, `lam` GCD's

    def validate(self) -> None:
        if not 0 <= self.gae_gamma <= 1:
            raise ConfigError(f"--ppo.gae-gamma must be in [0, 1], got {self.gae_gamma}")
        if not 0 <= self.gae_lambda <= 1:
            raise ConfigError(f"--ppo.gae-lambda must be in [0, 1], got {self.gae_lambda}")
        if not self.value_coef >= 0:
            raise ConfigError(f"--ppo.value-coef must be >= 0, got {self.value_coef}")
        if self.value_clip is not None and not self.value_clip > 0:
            raise ConfigError(f"--ppo.value-clip must be > 0 (or left out), got {self.value_clip}")
        if not self.value_lr_scale > 0:
            raise ConfigError(f"--ppo.value-lr-scale must be > 0, got {self.value_lr_scale}")


class _Targets(NamedTuple):
    """One training sample's value positions (its turns' prompt ends) and their targets."""

    positions: list[int]
    returns: list[float]
    old_values: list[float]


def value_positions(sample: Sample, episodes: list[Episode]) -> list[tuple[int, int]]:
    """``(turn, position)`` of each turn a policy sample holds: the position in ``input_ids`` of
    the last token of the turn's prompt, whose hidden state the value head reads."""
    ep = episodes[sample.episode]
    if sample.turn >= 0:  # window layout: the turn's prompt, then its sampled ids
        return [(sample.turn, len(ep.turns[sample.turn].prompt_ids) - 1)]
    if len(ep.turn_spans) != len(ep.turns):
        raise ValueError("PPO's values in the concat layout need each turn's span in the episode's sequence")
    return [(t, start - 1) for t, (start, _) in enumerate(ep.turn_spans)]


class PPO(TrainerExtension):
    """The PPO extension; pass ``PPO(config.ppo)`` to :func:`agentgym.train.loop.train`."""

    name = "ppo"
    needs_hidden_states = True

    def __init__(self, cfg: PPOConfig | None = None):
        self.cfg = cfg or PPOConfig()
        self.head = None
        self.model = None
        self.run: RunView | None = None
        self._loaded: dict | None = None
        self._targets: dict[tuple[int, int], _Targets] = {}
        self._metrics: dict[str, float] = {}

    # ----- the value head -----
    def build(self, run: RunView, model) -> list[dict]:
        import torch

        self.run, self.model = run, model
        # made empty then zeroed: no draw from the run's random streams
        self.head = torch.nn.utils.skip_init(torch.nn.Linear, model.config.hidden_size, 1, device=run.device)
        with torch.no_grad():
            self.head.weight.zero_()
            self.head.bias.zero_()
        if self._loaded is not None:
            self.load_state_dict(self._loaded)
        return [{"params": list(self.head.parameters()), "lr": run.learning_rate * self.cfg.value_lr_scale}]

    def _values(self, hidden):
        """The head on hidden states ``[n, hidden]``, in float32 whatever the autocast."""
        import torch

        with torch.autocast(hidden.device.type, enabled=False):
            return self.head(hidden.float()).squeeze(-1)

    def _turn_values(self, samples: list[Sample], episodes: list[Episode]) -> dict[tuple[int, int], float]:
        """Value at every turn's prompt end, by ``(episode, turn)``, under the current weights."""
        import torch

        from agentgym.train.optim.update import last_hidden_state, pad_batch

        run, out = self.run, {}
        was_training = self.model.training
        self.model.eval()
        try:
            with torch.no_grad():
                for start in range(0, len(samples), run.micro_batch_size):
                    chunk = samples[start:start + run.micro_batch_size]
                    batch = pad_batch(chunk, run.pad_token_id, run.device)
                    with run.autocast():
                        hidden = last_hidden_state(self.model, batch["input_ids"], batch["attention_mask"])
                    for row, s in enumerate(chunk):
                        turns = value_positions(s, episodes)
                        values = self._values(hidden[row, [p for _, p in turns]]).tolist()
                        out.update({(s.episode, t): v for (t, _), v in zip(turns, values)})
        finally:
            self.model.train(was_training)
        return out

    # ----- advantages -----
    def transform_advantages(self, ctx: StepContext, advantages, episodes):
        if self.head is None:
            raise RuntimeError("the PPO extension trains only in a run that built it (train() calls build)")
        t0 = time.perf_counter()
        episodes = list(episodes)
        samples = episode_samples(episodes, [np.zeros(len(ep.turns)) for ep in episodes], ctx.run.layout)
        by_turn = self._turn_values(samples, episodes)
        values, raw, returns = [], [], []
        for i, ep in enumerate(episodes):
            n = len(ep.turns)
            v = np.array([by_turn[(i, t)] for t in range(n)], dtype=np.float64)
            rewards = np.zeros(n)
            got = ep.rewards[:n]
            rewards[:len(got)] = got
            a, ret = gae(rewards, v, self.cfg.gae_gamma, self.cfg.gae_lambda)
            ep.turn_signals["ppo/value"] = v.tolist()  # for the saved episodes (--log-episodes)
            values.append(v)
            raw.append(a)
            returns.append(ret)
        flat = np.concatenate(raw) if raw else np.zeros(0)
        count, total, total_sq = ctx.run.dist.sum_floats([len(flat), flat.sum(), (flat ** 2).sum()])
        out = whiten(raw, count, total, total_sq) if self.cfg.normalize_advantages else raw
        self._targets = {}
        for s in samples:
            turns = value_positions(s, episodes)
            self._targets[(s.episode, s.turn)] = _Targets(
                [p for _, p in turns], [float(returns[s.episode][t]) for t, _ in turns],
                [float(values[s.episode][t]) for t, _ in turns])
        all_v = np.concatenate(values) if values else np.zeros(0)
        all_r = np.concatenate(returns) if returns else np.zeros(0)
        nan = float("nan")
        self._metrics = {
            "ppo/value_mean": float(all_v.mean()) if len(all_v) else nan,
            "ppo/return_mean": float(all_r.mean()) if len(all_r) else nan,
            "ppo/explained_variance": explained_variance(all_v, all_r) if len(all_v) else nan,
            "ppo/advantage_mean": float(flat.mean()) if len(flat) else nan,
            "ppo/advantage_std": float(flat.std()) if len(flat) else nan,
            "time/value": time.perf_counter() - t0,
        }
        return out

    # ----- the value loss -----
    def loss_items(self, sample: Sample) -> int:
        got = self._targets.get((sample.episode, sample.turn)) if sample.kind == "policy" else None
        return len(got.positions) if got is not None else 0

    def extra_loss(self, batch: MicroBatch):
        import torch

        rows, positions, returns, olds = [], [], [], []
        for row, s in enumerate(batch.samples):
            got = self._targets.get((s.episode, s.turn)) if s.kind == "policy" else None
            if got is not None:
                rows += [row] * len(got.positions)
                positions += got.positions
                returns += got.returns
                olds += got.old_values
        if not rows:
            return None
        device = batch.hidden.device
        values = self._values(batch.hidden[torch.tensor(rows, device=device), torch.tensor(positions, device=device)])
        ret = torch.tensor(returns, dtype=torch.float32, device=device)
        old = torch.tensor(olds, dtype=torch.float32, device=device)
        per_item = value_loss(values, old, ret, self.cfg.value_clip)
        metrics = {"loss/value": float(per_item.detach().sum())}
        if self.cfg.value_clip is not None:
            metrics["ppo/value_clip_frac"] = float(((values - old).abs() > self.cfg.value_clip).float().sum())
        return self.cfg.value_coef * per_item.sum(), metrics

    # ----- logging and checkpoints -----
    def metrics(self) -> dict[str, float]:
        return dict(self._metrics)

    def state_dict(self) -> dict:
        if self.head is None:
            return dict(self._loaded or {})
        return {"value_head": {k: v.detach().to("cpu").clone() for k, v in self.head.state_dict().items()}}

    def load_state_dict(self, state: dict) -> None:
        weights = (state or {}).get("value_head")
        if not weights or any(v is None for v in weights.values()):
            return  # nothing saved, or read without its tensors (agentgym eval needs no value head)
        if self.head is None:  # loaded before the run built the head: it takes them when it does
            self._loaded = {"value_head": dict(weights)}
            return
        import torch

        with torch.no_grad():
            for key, param in self.head.state_dict().items():
                param.copy_(weights[key].to(param.device, param.dtype))


@dataclass
class PPOTrainConfig(TrainConfig):
    ppo: PPOConfig = field(default_factory=PPOConfig)

    def validate(self) -> None:
        super().validate()
        if self.model.fsdp:
            raise ConfigError("--fsdp does not shard the value head yet: run PPO without --fsdp (torchrun without it "
                              "still trains data-parallel)")


def ppo_defaults() -> PPOTrainConfig:
    # GRPO's 4 tasks x 8 episodes, as 32 tasks x 1: the same episodes per step, no group needed
    return PPOTrainConfig(run=RunConfig(output_dir="runs/ppo"), rollout=RolloutConfig(num_groups=32, group_size=1))


PPO_METHOD = register(Method(
    name="ppo", summary="PPO with a value head on the policy and GAE over turns",
    description="""PPO with a value head: a critic on the policy's last hidden state, GAE over turns (SPEC §4.5).

    python trainers/ppo.py                                    # tiny model on ToolQA-v0, CPU, minutes
    python trainers/ppo.py --model runs/sft/final --ppo.gae-lambda 0.9 --ppo.value-clip 0.2
    python trainers/ppo.py --env-id ALFWorld-v0 --layout window --model /ckpt/Qwen2.5-1.5B-Instruct

Each step plays one episode on each of 32 tasks (no groups: the value head is the baseline), scores
every turn's prompt with the value head, and trains on GAE advantages over the turns with the
same token-level PPO-clip loss as GRPO, plus a value loss that trains the head and the policy
together. Every GRPO flag works here; PPO's own are --ppo.* (--help lists them).
""",
    config=PPOTrainConfig, defaults=ppo_defaults, extensions=lambda config: [PPO(config.ppo)],
    extension=(PPO, PPOConfig), doc="docs/trainers.md#ppo"))
