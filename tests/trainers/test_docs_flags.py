"""docs/trainers.md lists every flag of every registered method, with its default and doc, as the config
classes declare them."""

import os

from agentgym.train.base.flags import flag_rows
from agentgym.train.methods import METHODS

DOC = open(os.path.join(os.path.dirname(__file__), "..", "..", "docs", "trainers.md")).read()


def test_every_flag_is_documented_as_declared():
    configs = [method.config() for method in METHODS.values()]  # every registered method's flags
    missing = [f"| `{flag}` | `{default}` | {doc} |" for config in configs
               for flag, default, doc in flag_rows(config) if f"| `{flag}` | `{default}` | {doc} |" not in DOC]
    assert not missing, "docs/trainers.md is out of date:\n" + "\n".join(missing)
