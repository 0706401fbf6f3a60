"""The trainer core every script in ``trainers/`` shares.

- :mod:`~agentgym.train.run.config`: every trainer's settings, nested dataclasses parsed by ``tyro``;
  :mod:`~agentgym.train.run.flags`: their flags and flat names, one of each per setting.
- :mod:`~agentgym.train.loop`: the RL loop (``train(config, extensions)``).
- :mod:`~agentgym.train.rollout.collector`, :mod:`~agentgym.train.rollout.episodes`, :mod:`~agentgym.train.rollout.envs`:
  play grouped episodes with a policy, keeping every token.
- :mod:`~agentgym.train.rollout.generators`: what samples the rollouts (``--generator hf|vllm|openai``) and
  how the trained weights reach it.
- :mod:`~agentgym.train.rollout.tasks`: the task stream, kept apart from the cold start's tasks.
- :mod:`~agentgym.train.rollout.chat`, :mod:`~agentgym.train.rollout.samples`: the ``concat`` and ``window`` layouts.
- :mod:`~agentgym.train.methods.grpo`, :mod:`~agentgym.train.optim.loss`, :mod:`~agentgym.train.optim.update`:
  GRPO advantages, PPO-clip / CISPO with k3 KL, one optimizer step.
- :mod:`~agentgym.train.hooks`, :mod:`~agentgym.train.methods`: how VSPO, GiGPO, DAPO, GCD and
  PPO plug in, reading the run through a :mod:`~agentgym.train.run.view`; their math in
  :mod:`~agentgym.train.methods.vspo`, :mod:`~agentgym.train.methods.gigpo`, :mod:`~agentgym.train.methods.dapo`,
  :mod:`~agentgym.train.methods.ppo` and :mod:`~agentgym.train.methods.gcd`.
- :mod:`~agentgym.train.coldstart.sft`, :mod:`~agentgym.train.coldstart.expert`: the SFT cold start.
- :mod:`~agentgym.train.run.checkpoint`, :mod:`~agentgym.train.run.metrics`: exact resume and logging.
- :mod:`~agentgym.train.run.threads`: CPU thread count and OpenMP wait policy;
  :mod:`~agentgym.train.run.env_check`: the env settings checked before a run starts.

Importing this package does not import torch; the modules that need it do. It does set
``OMP_WAIT_POLICY=PASSIVE`` (unless set already) for the OpenMP runtime torch will load, so that
idle threads sleep rather than spin on cores another run needs (:mod:`~agentgym.train.run.threads`).
"""

from agentgym.train import moved
from agentgym.train.run.threads import prefer_passive_wait

moved.install()
prefer_passive_wait()
