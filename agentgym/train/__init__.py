"""The trainer core every script in ``trainers/`` shares.

- :mod:`~agentgym.train.envs`: the grouped env batch the rollout drives (a list of envs or ``make_vec``).
- :mod:`~agentgym.train.rollout`: play grouped episodes with a policy, keeping every token.
- :mod:`~agentgym.train.chat`: the ``concat`` and ``window`` token layouts.
- :mod:`~agentgym.train.samples`: episodes -> training samples (ids, loss mask, advantage).
- :mod:`~agentgym.train.advantages`: GRPO / Dr. GRPO advantages and the advantage-transform hook.
- :mod:`~agentgym.train.loss`: token-level PPO-clip with k3 KL.
- :mod:`~agentgym.train.update`: forward passes and one optimizer step.
- :mod:`~agentgym.train.checkpoint`, :mod:`~agentgym.train.metrics`: exact resume and logging.

Importing this package does not import torch; the modules that need it do.
"""
