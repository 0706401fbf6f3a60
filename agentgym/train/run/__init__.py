"""One training run as it happens: built, stepped, logged and saved.

- :mod:`.setup`: what a run trains with (``RunSetup``: model, reference, optimizer, generator,
  envs, task stream, PRS schedule), built once before the first step, saved and restored.
- :mod:`.pipeline`: where each step's episodes come from, played at the step's start or ahead by
  a rollout thread (``--async-steps``).
- :mod:`.checkpoint`: checkpoints that resume exactly; :mod:`.episode_log`: the episodes a run keeps
  on disk (``--log-episodes``) for reading and ``agentgym view``.

A run's settings are in :mod:`agentgym.train.config` (a method's own group in its module);
its state, metrics, threads and checkpoint record in :mod:`agentgym.train.base`.
"""
