"""Run recipes: named settings a trainer script starts from (``--recipe NAME``), before its flags.

A recipe is a whole run's settings (env, model, cold start, method settings, evaluation), where a
preset (:mod:`agentgym.train.config.presets`) is only an env's keyword arguments. The flags given
with ``--recipe`` are applied over it, so ``--recipe alfworld-l0 --seed 1`` changes only the seed.

- ``alfworld-l0``: ALFWorld in tiny rooms on a CPU (``--preset tiny-rooms``): a cold start of
  ``tiny-small`` on 512 expert games of the ``train`` split, then RL on the 128 games of L0 for
  300 steps of 4 groups x 4 episodes (each game about 9 times), evaluated on L0 (the games RL plays)
  and L1 (unseen games of the same types) before, every 100 steps and after
  (docs/benchmarks.md, "ALFWorld-v0: what RL learns at L0").
- ``alfworld-l0-scored``: the same run with ``--preset tiny-rooms-scored``: the actions listed in
  words and the policy choosing one whole, by the softmax over each listed action's summed token
  log-probabilities (``scored_actions=True``, :mod:`agentgym.agents.scoring`), where ``alfworld-l0``
  samples the number of one.
- ``scienceworld-find``: ScienceWorld's three find tasks (``--preset tiny-find-scored``: scored
  actions, the task and the last two steps): a cold start of ``tiny-small`` on the gold paths of
  256 train variations (a sampled softmax against 31 listed actions), then GRPO (``token-mean``) on
  the other train variations for 20 steps of 4 groups x 4 episodes, evaluated on 48 test-variation
  episodes before and after (docs/benchmarks.md, "ScienceWorld-v0: the find tasks with scored
  actions").

>>> from agentgym.train.config.tree import TrainConfig
>>> config = apply_recipe(TrainConfig, TrainConfig(), "alfworld-l0")
>>> config.env.split, config.cold_start.expert_split, config.rollout.group_size
('L0', 'train', 4)
"""

from __future__ import annotations

from typing import Any, TypeVar

from agentgym.train.base.errors import ConfigError
from agentgym.train.base.flags import build

C = TypeVar("C")

RECIPES: dict[str, dict[str, Any]] = {
    "alfworld-l0": {
        "env_id": "ALFWorld-v0", "model": "tiny-small", "preset": "tiny-rooms", "split": "L0",
        "layout": "window", "learning_rate": 1e-4, "beta": 0.0, "aggregation": "episode-mean",
        "num_groups": 4, "group_size": 4, "num_steps": 300, "save_every": 50, "cpu_threads": 1,
        "eval_split": "L0,L1", "eval_episodes": 128, "eval_every": 100, "output_dir": "runs/alfworld-l0",
        "cold_start": {"expert_split": "train", "num_episodes": 512, "num_steps": 500, "batch_size": 16,
                       "explore": 0.2, "prompt_loss_weight": 1.0},
    },
}
# the same run with the policy scoring each listed action's words instead of sampling its number
RECIPES["alfworld-l0-scored"] = {**RECIPES["alfworld-l0"], "preset": "tiny-rooms-scored",
                                 "output_dir": "runs/alfworld-l0-scored"}
RECIPES["scienceworld-find"] = {
    "env_id": "ScienceWorld-v0", "model": "tiny-small", "preset": "tiny-find-scored", "split": "train",
    # token-mean: each turn weighs alike, where episode-mean weighs a short (failed) episode's focus
    # more than a long one's, and the policy unlearned focusing (docs/trainers.md, "Loss aggregation")
    "layout": "window", "learning_rate": 1e-4, "beta": 0.0, "aggregation": "token-mean", "scored_samples": 4,
    "num_groups": 4, "group_size": 4, "num_steps": 20, "save_every": 10, "cpu_threads": 1,
    "eval_split": "test", "eval_episodes": 48, "eval_every": 0, "output_dir": "runs/scienceworld-find",
    "cold_start": {"expert_split": "train", "num_episodes": 256, "num_steps": 150, "batch_size": 16,
                   "scored_negatives": 31},
}
"""Recipe name -> the settings it sets, by the names :func:`agentgym.train.base.flags.build` takes."""


def apply_recipe(config_cls: type[C], default: C, name: str) -> C:
    """``default`` with recipe ``name``'s settings; a :class:`ConfigError` names the choices for an
    unknown name, and says so when this trainer has no such setting."""
    if name not in RECIPES:
        raise ConfigError(f"--recipe {name!r} is not a recipe; choose one of {', '.join(RECIPES)}")
    try:
        return build(config_cls, _default=default, **RECIPES[name])
    except TypeError as e:
        raise ConfigError(f"--recipe {name} does not apply to this trainer: {e}") from None


def recipe_from_argv(argv: list[str]) -> tuple[str | None, list[str]]:
    """``(the --recipe NAME given, argv without it)``; a ``--recipe`` with no name is an error.

    >>> recipe_from_argv(["--recipe", "alfworld-l0", "--seed", "1"])
    ('alfworld-l0', ['--seed', '1'])
    >>> recipe_from_argv(["--recipe=alfworld-l0"])
    ('alfworld-l0', [])
    """
    name, rest, k = None, [], 0
    while k < len(argv):
        arg = argv[k]
        if arg == "--recipe":
            if k + 1 == len(argv) or argv[k + 1].startswith("--"):
                raise ConfigError(f"--recipe needs a name: one of {', '.join(RECIPES)}")
            name, k = argv[k + 1], k + 2
            continue
        if arg.startswith("--recipe="):
            name = arg.partition("=")[2]
        else:
            rest.append(arg)
        k += 1
    return name, rest
