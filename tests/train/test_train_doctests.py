"""Every docstring example of the trainer core runs as a test."""

import doctest
import importlib
import pkgutil
from pathlib import Path

import pytest

import agentgym.train

# every module of the trainer core that holds an example, and the PRS schedule the trainers drive
MODULES = sorted(m.name for m in pkgutil.walk_packages(agentgym.train.__path__, "agentgym.train.")
                 if ">>>" in Path(importlib.util.find_spec(m.name).origin).read_text()) + ["agentgym.rewards.prs"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
