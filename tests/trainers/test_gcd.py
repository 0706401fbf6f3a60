"""trainers/gcd.py on the real envs with the tiny model: smoke runs on ToolQA (GRPO and GiGPO
bases) and ALFWorld, the external judge against a local stub (up and down), an exact resume with
the mistakes list restored, the cold start's judge samples and the --gcd.correction-source flag.

The random tiny model writes no valid action, so every step it takes is labelled bad: the runs use
``balance="none"`` (a balanced batch would have no good step and train no judge) and the templated
critiques of those steps (``correction_rule_critiques``) so the mistakes list fills.
"""

import json
import socket
import time

import gcd
import pytest
import torch
from safetensors.torch import load_file
from trainer_helpers import TOOLQA_SMALL, small_config

from agentgym.train.base.errors import ConfigError
from agentgym.train.base.flags import build
from agentgym.train.base.records import read_record
from agentgym.train.base.state_file import read_state
from agentgym.train.coldstart.sft import _recipe, run_sft
from agentgym.train.config.tree import SFTRunConfig
from agentgym.train.loop import train
from agentgym.train.methods.gcd.correction import MISTAKES_HEADER
from agentgym.train.methods.gcd.judge import parse_verdict

VOLATILE = ("time/", "tokens_per_second")
JUDGE = dict(k=2, max_judged_steps=4, balance="none", judge_max_new_tokens=12, correction_every=1,
             correction_rule_critiques=True, summary_max_new_tokens=12)


def rows(path, name="metrics.jsonl"):
    return [json.loads(line) for line in open(path / "run" / name)]


@pytest.mark.learning
@pytest.mark.parametrize("base", ["grpo", "gigpo"])
def test_gcd_smoke_on_toolqa_trains_the_judge_in_the_same_update(tmp_path, base):
    cfg = small_config(tmp_path, cls=gcd.GCDTrainConfig, num_steps=2, num_epochs=1, num_minibatches=1,
                       gcd={**JUDGE, "base": base, "lam": 0.5})
    result = gcd.main(cfg)
    assert len(result.history) == 2
    for r in result.history:
        assert r["gcd/judge_samples"] == 2 * r["gcd/judged_steps"] > 0
        assert r["gcd/labels_bad"] == r["gcd/judged_steps"] and "loss/judge" in r and "loss/policy" in r
        assert r["time/judge_generate"] > 0 and r["tokens/judge_generated"] > 0
        assert ("gigpo/step_groups" in r) == (base == "gigpo")
    assert result.history[0]["gcd/correction_refreshed"] == 1
    # the random tiny model writes no readable list, so the (templated, readable) critiques are counted
    for r in rows(tmp_path):
        assert r["gcd/correction_source"] == 0 and 0 <= r["gcd/correction_readability"] < 0.85
    (line,) = rows(tmp_path, "gcd_mistakes.jsonl")
    assert line["step"] == 1 and line["mistakes"] == ["the action was invalid"] and line["source"] == "offline"
    state = read_state(tmp_path / "run" / "checkpoints" / "step_2")
    assert state["extra"]["extension"]["gcd"]["correction"]["mistakes"] == line["mistakes"]
    assert state["extra"]["method"] == f"gcd-{base}"


@pytest.mark.learning
def test_gcd_resume_with_its_mistakes_list_matches_an_uninterrupted_run_bitwise(tmp_path):
    kw = dict(cls=gcd.GCDTrainConfig, gcd=JUDGE)
    gcd.main(small_config(tmp_path / "full", **kw))
    gcd.main(small_config(tmp_path / "cut", num_steps=2, **kw))
    state = read_state(tmp_path / "cut" / "run" / "checkpoints" / "step_2")
    assert state["extra"]["extension"]["gcd"]["correction"]["mistakes"] == ["the action was invalid"]
    result = gcd.main(small_config(tmp_path / "cut", resume="auto", **kw))
    # the resumed run's first episodes already carry the restored list in their system prompt
    assert result.history[0]["step"] == 3
    full, cut = rows(tmp_path / "full"), rows(tmp_path / "cut")
    strip = lambda log: [{k: v for k, v in r.items() if not k.startswith(VOLATILE)} for r in log]  # noqa: E731
    assert strip(cut) == strip(full) and [r["step"] for r in cut] == [1, 2, 3, 4]
    assert sum(r["gcd/judge_samples"] for r in full) > 0
    a = load_file(str(tmp_path / "full" / "run" / "checkpoints" / "step_4" / "model.safetensors"))
    b = load_file(str(tmp_path / "cut" / "run" / "checkpoints" / "step_4" / "model.safetensors"))
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert rows(tmp_path / "cut", "gcd_mistakes.jsonl") == rows(tmp_path / "full", "gcd_mistakes.jsonl")


@pytest.mark.learning
def test_system_prompt_of_later_episodes_carries_the_list(tmp_path):
    from agentgym.train.methods import GCD, GCDConfig

    ext = GCD(GCDConfig(**JUDGE))
    train(small_config(tmp_path, cls=gcd.GCDTrainConfig, num_steps=1, gcd=JUDGE), [ext], name="gcd")
    prompt = ext.system_prompt("Base prompt.")
    assert prompt.startswith("Base prompt.") and f"{MISTAKES_HEADER}\n- the action was invalid" in prompt


def test_external_judge_path_against_a_local_stub(tmp_path, chat_server):
    chat_server.reply = lambda body: ("- Write one well-formed action." if "Critiques of bad actions" in
                                      body["messages"][-1]["content"] else "Fine. <judge>good</judge>")
    result = gcd.main(small_config(tmp_path, cls=gcd.GCDTrainConfig, num_steps=1,
                                   gcd={**JUDGE, "judge_url": chat_server.url, "judge_timeout": 10.0}))
    r = result.history[0]
    assert r["gcd/external_skipped"] == 0 and r["gcd/external_asked"] == len(chat_server.requests) - 1
    assert r["gcd/correction_source_external"] == 1
    assert rows(tmp_path, "gcd_mistakes.jsonl")[0]["mistakes"] == ["Write one well-formed action."]


def test_a_down_external_judge_is_a_logged_skip_and_the_run_goes_on(tmp_path, capsys):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{s.getsockname()[1]}/v1"
    t0 = time.monotonic()
    result = gcd.main(small_config(tmp_path, cls=gcd.GCDTrainConfig, num_steps=1,
                                   gcd={**JUDGE, "judge_url": url, "judge_timeout": 1.0, "judge_retries": 0}))
    assert time.monotonic() - t0 < 60 and len(result.history) == 1
    assert result.history[0]["gcd/correction_source_offline"] == 1
    assert "external judge unavailable" in capsys.readouterr().err


@pytest.mark.engine
@pytest.mark.learning
def test_gcd_runs_alfworld_in_the_window_layout(tmp_path):
    result = gcd.main(small_config(tmp_path, cls=gcd.GCDTrainConfig, env_id="ALFWorld-v0",
                                   env_kwargs='{"max_turns": 3}', layout="window", window=1, num_groups=1,
                                   group_size=2, num_steps=2, max_new_tokens=12, num_epochs=1, num_minibatches=1,
                                   gcd=JUDGE))
    assert len(result.history) == 2 and all(r["gcd/judge_samples"] > 0 for r in result.history)
    assert (tmp_path / "run" / "checkpoints" / "step_2" / "trainer_state.json").exists()


def test_cold_start_mixes_balanced_judge_samples_and_keeps_the_old_recipe_without(tmp_path, capsys):
    from agentgym.agents.tiny import resolve_model_path
    from agentgym.train.base.models import load_tokenizer
    from agentgym.train.coldstart.sft import extension_samples
    from agentgym.train.hooks import Extensions
    from agentgym.train.methods import GCD
    from agentgym.train.rollout.chat import ChatEncoder

    kw = dict(model="tiny", env_kwargs=TOOLQA_SMALL, num_episodes=8, seed=0, progress=False, tensorboard=False)
    plain = build(SFTRunConfig, **kw)
    assert "judge_samples" not in _recipe(plain)["sft"]  # cold starts cached before the flag stay valid
    cfg = build(SFTRunConfig, **kw, judge_samples=8, num_steps=3, output_dir=str(tmp_path / "sft"))
    tok = load_tokenizer(resolve_model_path("tiny"))
    samples, note = extension_samples(cfg, ChatEncoder(tok), Extensions([GCD()]))
    assert len(samples) == 8 and note.startswith("8 judge samples (4 good, 4 bad")
    verdicts = [parse_verdict(tok.decode([t for t, m in zip(s.input_ids, s.loss_mask) if m])) for s in samples]
    assert sorted(verdicts) == ["bad"] * 4 + ["good"] * 4
    with pytest.raises(ConfigError, match="--judge-samples 8: judge samples come from GCD"):
        run_sft(cfg)  # a cold start without GCD's extension has no one to make them
    final = run_sft(cfg, Extensions([GCD()]))
    assert read_record(final)["recipe"]["sft"]["judge_samples"] == 8
    assert "8 judge samples (4 good, 4 bad" in capsys.readouterr().out


@pytest.mark.learning
def test_held_out_evaluation_and_agentgym_eval_use_the_trained_list(tmp_path, capsys):
    from agentgym.agents import Completion, Policy, SamplingConfig
    from agentgym.train import loop
    from agentgym.train.evaluate import evaluate
    from agentgym.train.evaluate import main as eval_main
    from agentgym.train.methods.gcd.extension import trained_mistakes

    class SeesPrompts(Policy):
        sampling = SamplingConfig(max_new_tokens=4)
        seen: list[str] = []

        def generate(self, prompts, sampling=None):
            self.seen += [p[0]["content"] for p in prompts]
            return [Completion(text="<answer>x</answer>") for _ in prompts]

    cfg = small_config(tmp_path, cls=gcd.GCDTrainConfig, num_steps=1, save_every=1, gcd=JUDGE)
    gcd.main(cfg)
    ckpt = str(tmp_path / "run" / "checkpoints" / "step_1")
    assert trained_mistakes(ckpt) == ["the action was invalid"]
    # the trainer's held-out evaluation passes the extensions' rewrite down to every episode
    from agentgym.train.methods import GCD, GCDConfig

    ext = GCD(GCDConfig(**JUDGE))
    ext.correction.update(1, trained_mistakes(ckpt))
    policy = SeesPrompts()
    loop.run_eval(build(gcd.GCDTrainConfig, _default=cfg, eval_episodes=2), policy, json.loads(TOOLQA_SMALL),
                  ext.system_prompt)
    assert len(policy.seen) >= 2 and all(f"{MISTAKES_HEADER}\n- the action was invalid" in p for p in policy.seen)
    policy.seen = []
    evaluate(policy, "ToolQA-v0", json.loads(TOOLQA_SMALL), "valid", num_episodes=2)
    assert policy.seen and not any(MISTAKES_HEADER in p for p in policy.seen)
    # agentgym eval on the checkpoint says it appends the list (a run without correction has none)
    assert eval_main(["--model", ckpt, "--split", "valid", "--num-episodes", "2", "--max-new-tokens", "4"]) == 0
    assert "GCD \"Common mistakes\" list (1 items) appended" in capsys.readouterr().out
    off = small_config(tmp_path / "off", cls=gcd.GCDTrainConfig, num_steps=1, save_every=1,
                       gcd={**JUDGE, "correction": False})
    gcd.main(off)
    assert trained_mistakes(str(tmp_path / "off" / "run" / "checkpoints" / "step_1")) == []


def test_correction_source_flag_takes_its_three_values_and_names_itself_when_wrong(capsys):
    from agentgym.train.config.cli import parse

    for value in ("auto", "model", "offline"):
        cfg = parse(gcd.GCDTrainConfig, ["--gcd.correction-source", value, "--gcd.correction-min-readability", "0.7"])
        assert cfg.gcd.correction_source == value and cfg.gcd.correction_min_readability == 0.7
    assert parse(gcd.GCDTrainConfig, []).gcd.correction_source == "auto"
    with pytest.raises(SystemExit):
        parse(gcd.GCDTrainConfig, ["--gcd.correction-source", "judge"])
    assert "--gcd.correction-source" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        parse(gcd.GCDTrainConfig, ["--gcd.correction-min-readability", "2"])
    assert "--gcd.correction-min-readability must be in [0, 1]" in capsys.readouterr().err
