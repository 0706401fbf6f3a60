"""Every docstring example of the trainer core runs as a test."""

import doctest
import importlib

import pytest

MODULES = ["agentgym.train.advantages", "agentgym.train.vspo", "agentgym.train.dapo", "agentgym.train.gigpo",
           "agentgym.train.rollout.tasks", "agentgym.train.run.config", "agentgym.train.run.flags", "agentgym.train.optim.distributed",
           "agentgym.rewards.prs", "agentgym.train.gcd.labels", "agentgym.train.gcd.judge",
           "agentgym.train.gcd.correction", "agentgym.train.gcd.external", "agentgym.train.gcd.steps",
           "agentgym.train.gcd.coldstart", "agentgym.train.gcd.readability", "agentgym.train.gcd.correction_source",
           "agentgym.train.coldstart.sft", "agentgym.train.coldstart.expert", "agentgym.train.run.presets", "agentgym.train.run.state",
           "agentgym.train.run.view", "agentgym.train.ppo", "agentgym.train.moved"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
