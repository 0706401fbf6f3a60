"""The method registry: every method declared once, and every list of methods read from it."""

import os
import re

import pytest

from agentgym.train.methods import BY_NAME, METHODS, get_method
from agentgym.train.methods.registry import Method, register

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")


def test_every_trainer_script_is_a_registered_method_and_every_method_has_one():
    scripts = {name[:-3] for name in os.listdir(os.path.join(ROOT, "trainers")) if name.endswith(".py")}
    assert scripts <= set(METHODS)  # a new method needs no script: `agentgym train NAME` runs it
    assert {"sft", "grpo", "vspo", "gigpo", "dapo", "gcd", "ppo", "rft"} <= scripts
    assert list(METHODS)[0] == "grpo" and list(METHODS)[-1] == "sft"  # the baseline first, the cold start last


def test_each_method_declares_its_config_defaults_and_doc():
    for name, method in METHODS.items():
        assert method.name == name and method.summary and method.description
        assert isinstance(method.defaults(), method.config)
        page, anchor = method.doc.split("#")
        assert anchor in anchors(page), f"{name}: {method.doc} is no heading"
        assert method.cold_start == (name == "sft")


def anchors(page: str) -> set[str]:
    """The GitHub anchors of a docs page's headings."""
    text = open(os.path.join(ROOT, page)).read()
    return {re.sub(r"[^a-z0-9 -]", "", h.strip().lower()).replace(" ", "-")
            for h in re.findall(r"^#+ (.+)$", text, re.M)}


def test_eval_rebuilds_the_extensions_the_registry_declares():
    assert BY_NAME == {name: m.extension for name, m in METHODS.items() if m.extension is not None}
    assert set(BY_NAME) == set(METHODS) - {"grpo", "sft"}
    for name, (cls, config_cls) in BY_NAME.items():
        assert cls(config_cls()).name == name  # its config group, and its key in checkpoint state


def test_an_unknown_method_names_the_closest():
    with pytest.raises(ValueError, match="unknown training method 'vsop' \\(did you mean vspo\\?\\)"):
        get_method("vsop")


def test_a_second_method_of_a_registered_name_is_refused():
    with pytest.raises(ValueError, match="'grpo' is already registered"):
        register(Method(name="grpo", summary="x", description="x", config=object, defaults=object))
    assert METHODS["grpo"].summary != "x"
