"""Every docstring example in the modules below is run as a test."""
import doctest
import importlib

import pytest

MODULES = [
    "agentgym.rewards.bleu", "agentgym.rewards.qa_metrics", "agentgym.rewards.judges", "agentgym.prompts",
    "agentgym.envs.spaces", "agentgym.envs.toolqa.calculator", "agentgym.envs.toolqa.retriever",
    "agentgym.envs.toolqa.env", "agentgym.rewards.fact_check", "agentgym.envs.interpreter_commands",
    "agentgym.extras", "agentgym.envs.arguments", "agentgym.envs.parsing", "agentgym.envs.observations",
    "agentgym.http_request", "agentgym.rewards.claims",
    "agentgym.rewards.components", "agentgym.vector.options", "agentgym.envs.alfworld.search_expert",
    "agentgym.agents.tiny", "agentgym.envs.grammar_expressions",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
