"""Playing grouped episodes with a policy, keeping every token, and turning them into samples.

- :mod:`.episodes`: ``GroupRequest``, ``Episode``, ``Turn`` and ``collect_episodes`` (lockstep or
  overlapped turns); :mod:`.collector`: the trainer's ``Collector`` over the env batch, which
  leaves env faults out and keeps one step's cost; :mod:`.envs`: ``EnvBatch``, a ``make_vec``
  vector env as groups.
- :mod:`.generators`: what samples the rollouts (``--generator hf|vllm|openai``) and how trained
  weights reach it.
- :mod:`.tasks`: the seeded task stream, kept apart from the cold start's tasks.
- :mod:`.chat`, :mod:`.samples`: the ``concat`` and ``window`` token layouts; episodes -> training
  samples. :mod:`.stats`: per-step episode metrics.

What they read is ``RolloutConfig`` and ``LayoutConfig`` (:mod:`agentgym.train.config.rollout`).
"""
