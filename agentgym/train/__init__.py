"""The trainer core ``agentgym train`` (and every script in ``trainers/``) runs, grouped by concern.

- :mod:`~agentgym.train.loop`: the RL loop, ``train(config, extensions)``: setup, then per step
  rollout, advantages, update, log and checkpoint, then a held-out evaluation.
- :mod:`~agentgym.train.hooks`: the extension seam (``TrainerExtension``, ``StepContext``,
  ``MicroBatch``) every method plugs in through, reading the run through a
  :class:`~agentgym.train.view.RunView`.
- :mod:`~agentgym.train.evaluate`: ``agentgym eval`` and the held-out evaluation.
- :mod:`~agentgym.train.command`: ``agentgym train METHOD``; :mod:`~agentgym.train.methods.registry`:
  the registered methods every list of methods reads.
- :mod:`~agentgym.train.config`: a run's settings tree (``TrainConfig``, ``SFTRunConfig``), the env,
  model and run groups, presets, recipes and the command line; :mod:`~agentgym.train.base`: what the
  rest stands on (errors, flag names, device, model loading, run state, metrics, state files).
- :mod:`~agentgym.train.run`: one run as it happens: its setup, where each step's episodes come from,
  checkpoints and the episode log.
- :mod:`~agentgym.train.rollout`: grouped episodes with every token kept (``episodes``,
  ``collector``, ``envs``), what samples them (``generators``), the task stream (``tasks``), the
  token layouts and training samples (``chat``, ``samples``), per-step statistics (``stats``).
- :mod:`~agentgym.train.optim`: the policy loss, one update, data-parallel training and FSDP.
- :mod:`~agentgym.train.methods`: GRPO's advantages and each method built on them (VSPO, GiGPO,
  DAPO, PPO, RFT, GCD), its math, its extension and its registration in one module (GCD: one
  package).
- :mod:`~agentgym.train.coldstart`: the SFT cold start on expert episodes.

Importing this package does not import torch; the modules that need it do. It does set
``OMP_WAIT_POLICY=PASSIVE`` (unless set already) for the OpenMP runtime torch will load, so that
idle threads sleep rather than spin on cores another run needs (:mod:`~agentgym.train.base.threads`).
"""

from agentgym.train.base.threads import prefer_passive_wait

prefer_passive_wait()
