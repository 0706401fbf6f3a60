"""A run's settings tree: the groups that are the run's own, and how they compose with the groups
that live beside the code reading them (rollout, optim, cold start, each method).

- :mod:`.env`: which env and how it is rewarded (``EnvConfig``), :mod:`.presets`: named env
  kwargs, :mod:`.env_check`: the env settings checked before anything is built.
- :mod:`.model`, :mod:`.run`: the model, the run basics, its length, resume and evaluation.
- :mod:`.tree`: ``TrainConfig`` and ``SFTRunConfig``, the trees the trainer scripts parse;
  :mod:`.cli`: parsing a command line into one, a bad setting one line.
"""
