"""The trainer core's former module paths import as the modules' new homes (agentgym/train/moved.py)."""

import importlib
import json
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

import agentgym.train
from agentgym.train.moved import MOVED, new_path

TRAIN = Path(agentgym.train.__file__).parent


def _fresh(code: str) -> str:
    """What ``code`` prints in a fresh interpreter (no module of this process's imports)."""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_every_former_path_imports_in_a_fresh_interpreter_as_the_module_it_moved_to():
    code = ("import importlib, json, sys; from agentgym.train.moved import MOVED\n"
            "out = {}\n"
            "for old, new in MOVED.items():\n"
            "    module = importlib.import_module(old)\n"
            "    out[old] = [module is importlib.import_module(new), module.__name__, module.__spec__.name,\n"
            "                sys.modules[old] is sys.modules[new]]\n"
            "print(json.dumps(out))")
    seen = json.loads(_fresh(code).splitlines()[-1])
    assert seen == {old: [True, new, new, True] for old, new in MOVED.items()}


def test_no_former_path_is_also_a_module_of_the_tree():
    # A former path that is also a file or folder here would be two modules under one name.
    for old in MOVED:
        rel = Path(*old.split(".")[2:])
        assert not (TRAIN / rel).with_suffix(".py").exists() and not (TRAIN / rel).is_dir(), old


@pytest.mark.parametrize("old, name", [("agentgym.train.config", "TrainConfig"),
                                       ("agentgym.train.checkpoint", "resume_point"),
                                       ("agentgym.train.setup", "load_model"),
                                       ("agentgym.train.run_setup", "set_up")])
def test_names_import_from_their_former_module_path(old, name):
    assert getattr(importlib.import_module(old), name) is getattr(importlib.import_module(new_path(old)), name)


def test_patching_a_former_path_patches_the_code_that_runs(monkeypatch):
    from agentgym.train.run.helpers import parse_env_kwargs

    monkeypatch.setattr("agentgym.train.setup.parse_env_kwargs", lambda text: {"patched": text})
    from agentgym.train.run import helpers

    assert helpers.parse_env_kwargs("{}") == {"patched": "{}"} and parse_env_kwargs('{"a": 1}') == {"a": 1}


def test_an_object_pickled_under_a_former_path_unpickles_as_the_class_in_use():
    # What `agentgym convert-checkpoint --trust-pickle` meets in a trainer_state.pt written before the move.
    from agentgym.train.run.state import RunState

    data = pickle.dumps(RunState(step=3, data_position=7), protocol=0)
    assert b"agentgym.train.run.state" in data
    state = pickle.loads(data.replace(b"agentgym.train.run.state", b"agentgym.train.run_state"))
    assert type(state) is RunState and (state.step, state.data_position) == (3, 7)


def test_a_path_that_never_existed_is_still_not_found():
    with pytest.raises(ModuleNotFoundError, match="agentgym.train.no_such_module"):
        importlib.import_module("agentgym.train.no_such_module")
    assert new_path("agentgym.train.no_such_module") is None


def test_the_former_rollout_module_names_import_from_the_package_that_took_its_path():
    code = ("from agentgym.train.rollout import Episode, GroupRequest, RolloutConfig, Turn, collect_episodes\n"
            "from agentgym.train.rollout import chat\n"
            "import agentgym.train.rollout as r, agentgym.train.rollout.episodes as e\n"
            "print(Episode is e.Episode, collect_episodes is e.collect_episodes, r.by_group is e.by_group,\n"
            "      chat.__name__, hasattr(r, 'no_such_name'))")
    assert _fresh(code).split() == ["True", "True", "True", "agentgym.train.rollout.chat", "False"]


def test_a_moved_package_takes_its_submodules_with_it():
    from agentgym.train.gcd.judge import parse_verdict
    from agentgym.train.methods.gcd import judge

    assert parse_verdict is judge.parse_verdict
    assert new_path("agentgym.train.gcd.judge") == "agentgym.train.methods.gcd.judge"
    assert new_path("agentgym.train.extensions.gcd") == "agentgym.train.methods.gcd.extension"


def test_a_methods_math_and_its_extension_import_from_both_former_paths():
    from agentgym.train.extensions.vspo import VSPO
    from agentgym.train.methods import vspo
    from agentgym.train.vspo import ValueBuffer

    assert (VSPO, ValueBuffer) == (vspo.VSPO, vspo.ValueBuffer)
