"""A run's env settings are checked when the command line is parsed, before a model is built: a
bad split or env keyword is one line naming the flag, exit status 2."""

import pytest

from agentgym.train.base.errors import ConfigError
from agentgym.train.base.flags import build
from agentgym.train.config.cli import parse
from agentgym.train.config.env_check import check_env, env_keywords
from agentgym.train.config.tree import SFTRunConfig, TrainConfig


def refused(cls, argv, capsys) -> str:
    with pytest.raises(SystemExit) as stop:
        parse(cls, argv)
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    return err


@pytest.mark.parametrize("cls", [TrainConfig, SFTRunConfig])
def test_an_unknown_split_is_refused_when_parsed(cls, capsys):
    err = refused(cls, ["--split", "nosuchsplit"], capsys)
    assert err.startswith("error: --split 'nosuchsplit': unknown split") and "'train', 'valid'" in err


def test_an_unknown_eval_split_is_refused_unless_nothing_is_evaluated(capsys):
    assert "--eval-split 'heldout'" in refused(TrainConfig, ["--eval-split", "heldout"], capsys)
    assert parse(TrainConfig, ["--eval-split", "heldout", "--eval-episodes", "0"]).eval.eval_split == "heldout"


def test_several_eval_splits_are_each_checked_and_a_malformed_list_is_refused(capsys):
    assert parse(TrainConfig, ["--eval-split", "valid, test"]).eval.eval_splits == ("valid", "test")
    assert "--eval-split 'heldout'" in refused(TrainConfig, ["--eval-split", "valid,heldout"], capsys)
    for bad in ("valid,valid", "valid,", ",valid", "valid,,test"):
        err = refused(TrainConfig, ["--eval-split", bad], capsys)
        assert "give one split, or distinct splits separated by commas" in err, bad


@pytest.mark.parametrize("cls", [TrainConfig, SFTRunConfig])
def test_an_unknown_env_keyword_is_refused_when_parsed(cls, capsys):
    err = refused(cls, ["--env-kwargs", '{"foo": 1}'], capsys)
    assert err.startswith("error: --env-kwargs: ToolQA-v0 has no argument 'foo' (it takes: ") and "top_k" in err
    assert "did you mean 'top_k'?" in refused(cls, ["--env-kwargs", '{"top_kk": 1}'], capsys)


def test_a_value_the_env_refuses_is_one_line_naming_env_kwargs(capsys):
    err = refused(TrainConfig, ["--env-kwargs", '{"max_turns": -5}'], capsys)
    assert err.startswith("error: --env-kwargs: ToolQA-v0 refused its arguments:") and "max_turns" in err


def test_env_keywords_follow_kwargs_up_the_class_chain():
    names = env_keywords("ToolQA-v0")
    assert {"top_k", "question_kinds", "max_turns", "system_prompt", "reward_mode"} <= set(names)
    assert "split" in env_keywords("ALFWorld-v0") and "prs_stage" in env_keywords("ALFWorld-v0")


def test_a_config_built_in_code_gets_the_same_check_as_a_value_error():
    cfg = build(TrainConfig, split="nope", eval_episodes=0)
    with pytest.raises(ValueError, match="--split 'nope'"):
        cfg.validate()
    check_env("ToolQA-v0", {"top_k": 1}, {"--split": "valid"})  # a good one passes (and is remembered)
    with pytest.raises(ConfigError, match="has no argument 'topk'"):
        check_env("ToolQA-v0", {"topk": 1}, {})


def test_toolqa_search_latency_goes_through_env_kwargs(capsys):
    cfg = parse(TrainConfig, ["--env-kwargs", '{"search_latency": 0.2}'])
    assert cfg.env.kwargs(cfg.model.model)["search_latency"] == 0.2
    err = refused(TrainConfig, ["--env-kwargs", '{"search_latency": -1}'], capsys)
    assert err.startswith("error: --env-kwargs: ToolQA-v0 refused its arguments: search_latency must be")
