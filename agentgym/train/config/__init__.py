"""Every settings group of a run, and the tree that composes them (a method's own group lives in the
method's module, :mod:`agentgym.train.methods`). Each field's help is the docstring under it.

- :mod:`.env`: which env and how it is rewarded (``EnvConfig``), :mod:`.presets`: named env
  kwargs, :mod:`.env_check`: the env settings checked before anything is built.
- :mod:`.model`, :mod:`.run`: the model, the run basics, its length, resume and evaluation.
- :mod:`.rollout`: ``LayoutConfig`` and ``RolloutConfig`` (with the one ``SamplingConfig``);
  :mod:`.optim`: ``LossConfig`` and ``OptimConfig``; :mod:`.coldstart`: ``SFTConfig``.
- :mod:`.tree`: ``TrainConfig`` and ``SFTRunConfig``, the trees the trainer scripts parse;
  :mod:`.cli`: parsing a command line into one, a bad setting one line.

The layers below this one (rollout, optim, cold start, hooks) name these classes only in
annotations, under ``TYPE_CHECKING``: they take a group as they are given it.
"""
