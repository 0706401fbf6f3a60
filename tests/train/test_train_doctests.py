import doctest
import importlib

import pytest


@pytest.mark.parametrize("name", ["agentgym.train.advantages", "agentgym.train.vspo", "agentgym.train.dapo",
                                  "agentgym.train.gigpo", "agentgym.agents.hf"])
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
