"""The names of a run's settings (agentgym/train/run/flags.py): one flag and at most one flat name per
setting, checked when a config class is defined; former spellings still parse."""

from dataclasses import dataclass, field
from typing import Annotated

import pytest

from agentgym.train.base.flags import FlagClash, Flat, build, settings
from agentgym.train.base.renamed import RENAMED_FLAGS
from agentgym.train.config.cli import parse
from agentgym.train.config.tree import SFTRunConfig, TrainConfig


@dataclass
class StepTolerance:
    tol: float = 1e-6
    """a tie tolerance"""


@dataclass
class DropTolerance:
    tol: float = 0.1
    """another one"""


def test_two_method_groups_with_one_field_name_are_an_error_when_the_config_is_defined():
    with pytest.raises(FlagClash, match=r"flat name 'tol' would be both first\.tol and second\.tol"):
        @dataclass
        class Clashing(TrainConfig):
            first: StepTolerance = field(default_factory=StepTolerance)
            second: DropTolerance = field(default_factory=DropTolerance)


def test_a_method_field_named_like_a_flat_flag_is_an_error_when_the_config_is_defined():
    @dataclass
    class Normalize:
        std_normalize: bool = False

    with pytest.raises(FlagClash, match=r"'std_normalize' would be both optim\.std_normalize and mine\.std_normalize"):
        @dataclass
        class Clashing(TrainConfig):
            mine: Normalize = field(default_factory=Normalize)


def test_two_flat_groups_with_one_field_name_are_an_error_when_the_config_is_defined():
    with pytest.raises(FlagClash, match=r"'tol' would be both first\.tol and second\.tol"):
        @dataclass
        class Clashing(TrainConfig):
            first: Annotated[StepTolerance, Flat] = field(default_factory=StepTolerance)
            second: Annotated[DropTolerance, Flat] = field(default_factory=DropTolerance)


def test_a_former_flag_that_a_current_setting_spells_is_an_error(monkeypatch):
    @dataclass
    class Renamed:
        spread: float = 0.0
        tol: float = 0.0

    monkeypatch.setitem(RENAMED_FLAGS, "--x.tol", "--x.spread")
    with pytest.raises(FlagClash, match=r"the flag --x\.tol would be both x\.tol and the former name of x\.spread"):
        @dataclass
        class Clashing(TrainConfig):
            x: Renamed = field(default_factory=Renamed)

    monkeypatch.setitem(RENAMED_FLAGS, "--num-steps", "--cold-start.num-steps")
    with pytest.raises(FlagClash, match="--num-steps"):
        @dataclass
        class Shadowing(TrainConfig):
            pass


def test_every_renamed_flag_names_a_current_flag_and_no_current_flag_is_a_former_one():
    from agentgym.train.methods import METHODS

    trees = {method.config for method in METHODS.values()} | {SFTRunConfig}
    current = {s.flag for tree in trees for s in settings(tree)}
    assert set(RENAMED_FLAGS.values()) <= current, set(RENAMED_FLAGS.values()) - current
    assert not set(RENAMED_FLAGS) & current


@pytest.mark.parametrize("argv,message", [
    (["--cold-start-steps", "0"], "--cold-start-steps was renamed --cold-start.num-steps"),
    (["--cold-start-episodes=16"], "--cold-start-episodes was renamed --cold-start.num-episodes"),
    (["--cold-start-chatty-answers", "0.5"], "--cold-start-chatty-answers was renamed --cold-start.chatty-answers"),
])
def test_a_former_flag_fails_in_one_line_naming_the_current_one(argv, message, capsys):
    with pytest.raises(SystemExit) as e:
        parse(TrainConfig, argv + ["--eval-episodes", "0"])
    assert e.value.code == 2 and capsys.readouterr().err == f"error: {message}\n"


@pytest.mark.parametrize("argv,message", [
    (["--num-step", "3"], "unknown flag --num-step; did you mean --num-steps? (--help lists every flag)"),
    (["--lerning-rate=1e-5"], "unknown flag --lerning-rate; did you mean --learning-rate? (--help lists every flag)"),
    (["--cold-start.num-step", "2"],
     "unknown flag --cold-start.num-step; did you mean --cold-start.num-steps? (--help lists every flag)"),
    (["--no-progres"], "unknown flag --no-progres; did you mean --no-progress? (--help lists every flag)"),
    (["--zzzz", "1"], "unknown flag --zzzz (--help lists every flag)"),
])
def test_a_misspelt_flag_fails_in_one_line_naming_the_closest(argv, message, capsys):
    with pytest.raises(SystemExit) as e:
        parse(TrainConfig, ["--eval-episodes", "0"] + argv)
    assert e.value.code == 2 and capsys.readouterr().err == f"error: {message}\n"


def test_every_spelling_tyro_takes_still_parses(tmp_path):
    config = parse(TrainConfig, ["--num_steps", "3", "--cold-start.num-steps=0", "--no-progress", "--eval-episodes",
                                 "0", "--output-dir", str(tmp_path), "--resume", "--env_kwargs={\"top_k\": 1}"])
    assert (config.run.num_steps, config.cold_start.num_steps, config.run.progress) == (3, 0, False)
    assert config.run.resume == "auto" and config.env.env_kwargs == '{"top_k": 1}'


def test_build_refuses_a_former_name_naming_the_current_one():
    with pytest.raises(TypeError, match=r"TrainConfig has no setting 'cold_start_steps' \(cold_start_steps is now "
                                        r"cold_start.num_steps\)"):
        build(TrainConfig, cold_start_steps=3)
    built = build(TrainConfig, cold_start={"num_steps": 3, "batch_size": 2})
    assert (built.cold_start.num_steps, built.cold_start.batch_size) == (3, 2)
    with pytest.raises(TypeError, match="TrainConfig has no setting 'steps'"):
        build(TrainConfig, steps=3)


def test_help_leaves_out_the_settings_for_code_only(capsys):
    with pytest.raises(SystemExit):
        parse(TrainConfig, ["--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "--max-turns" not in out and "--max-action-chars" not in out  # settings for code only


@pytest.mark.parametrize("flags,message", [
    (["--temperature", "-1"], "--temperature must be a finite number >= 0, got -1.0"),
    (["--top-k", "-2"], "--top-k must be an integer >= 0, got -2"),
    (["--batch-wait", "-1"], "--batch-wait must be a finite number >= 0, got -1.0"),
    (["--max-generate-batch", "0"], "--max-generate-batch must be an integer >= 1 or None, got 0"),
    (["--eps-low", "1.5"], "--eps-low must be in [0, 1), got 1.5"),
    (["--cold-start.num-steps", "-1"], "--cold-start.num-steps must be an integer >= 0, got -1"),
    (["--cold-start.chatty-answers", "2"], "--cold-start.chatty-answers is a fraction in [0, 1], got 2.0"),
])
def test_a_bad_nested_setting_is_one_line_naming_its_flag(flags, message, capsys):
    with pytest.raises(SystemExit) as e:
        parse(TrainConfig, flags)
    assert e.value.code == 2 and capsys.readouterr().err == f"error: {message}\n"
