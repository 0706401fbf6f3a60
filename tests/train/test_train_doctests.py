"""Every docstring example of the trainer core runs as a test."""

import doctest
import importlib

import pytest

MODULES = ["agentgym.train.run.config", "agentgym.train.run.flags", "agentgym.train.run.presets",
           "agentgym.train.run.state", "agentgym.train.run.view", "agentgym.train.rollout.tasks",
           "agentgym.train.optim.distributed", "agentgym.train.coldstart.sft", "agentgym.train.coldstart.expert",
           "agentgym.train.methods.grpo", "agentgym.train.methods.vspo", "agentgym.train.methods.dapo",
           "agentgym.train.methods.gigpo", "agentgym.train.methods.ppo", "agentgym.train.methods.gcd.labels",
           "agentgym.train.methods.gcd.judge", "agentgym.train.methods.gcd.correction",
           "agentgym.train.methods.gcd.external", "agentgym.train.methods.gcd.steps",
           "agentgym.train.methods.gcd.coldstart", "agentgym.train.methods.gcd.readability",
           "agentgym.train.methods.gcd.correction_source", "agentgym.train.moved", "agentgym.rewards.prs"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
