"""Renamed flags: each former flag with the flag that replaced it.

A former spelling fails in one line naming the current one (``--ppo.gamma was renamed
--ppo.gae-gamma``), on the command line (a boolean's ``--no-`` form too) and as a keyword of
:func:`~agentgym.train.base.flags.build`; it is never read as the new setting, and no new setting
may take a former flag (:func:`~agentgym.train.base.flags.check_names`). An entry applies to every
config tree that has its current flag. Renaming a setting is one line here.
"""

RENAMED_FLAGS: dict[str, str] = {
    # the cold start's settings became a group of their own
    "--cold-start-steps": "--cold-start.num-steps",
    "--cold-start-episodes": "--cold-start.num-episodes",
    "--cold-start-lr": "--cold-start.learning-rate",
    "--cold-start-batch-size": "--cold-start.batch-size",
    "--cold-start-judge-samples": "--cold-start.judge-samples",
    "--cold-start-chatty-answers": "--cold-start.chatty-answers",
    # GCD's judge loss became a LossConfig like the policy's
    "--gcd.judge-eps-low": "--gcd.judge-loss.eps-low",
    "--gcd.judge-eps-high": "--gcd.judge-loss.eps-high",
    "--gcd.judge-beta": "--gcd.judge-loss.beta",
    "--gcd.judge-aggregation": "--gcd.judge-loss.aggregation",
    # method settings whose names now say what they are
    "--gigpo.std-normalize": "--gigpo.step-std-normalize",
    "--dapo.tol": "--dapo.spread-tol",
    "--ppo.gamma": "--ppo.gae-gamma",
    "--ppo.lam": "--ppo.gae-lambda",
}
