"""The examples in docs/vector.md run as written."""

import doctest
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "vector.md"


def test_vector_docs_examples_run():
    pytest.importorskip("agentgym.envs.toolqa.env")
    result = doctest.testfile(str(DOC), module_relative=False, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 10 and result.failed == 0
