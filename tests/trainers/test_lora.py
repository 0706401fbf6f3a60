"""LoRA (``--lora.r``): every method trains adapters, a run resumes bitwise, the reference is the base
with its adapters off, and an adapter directory loads (merged) wherever a model directory does."""

import json

import grpo
import pytest
import torch
from safetensors.torch import load_file
from trainer_helpers import TOOLQA_SMALL, small_config

from agentgym.agents import HFPolicy, load_model_and_tokenizer
from agentgym.agents.lora import adapter_base, is_adapter_dir, load_causal_lm
from agentgym.agents.lora import main as merge_main
from agentgym.train.command import main as train_main
from agentgym.train.evaluate import main as eval_main
from agentgym.train.methods import METHODS
from agentgym.train.run.setup import set_up

pytest.importorskip("peft")

VOLATILE = ("time/", "tokens_per_second")


def rows(run_dir):
    return [json.loads(line) for line in open(run_dir / "metrics.jsonl")]


def adapters(step_dir):
    return load_file(str(step_dir / "adapter_model.safetensors"))


@pytest.mark.learning
@pytest.mark.parametrize("name", list(METHODS))
def test_every_method_trains_lora_adapters(name, tmp_path, tiny_path):
    out = tmp_path / name
    common = ["--model", "tiny", "--env-kwargs", TOOLQA_SMALL, "--num-steps", "1", "--output-dir", str(out),
              "--quiet", "--no-progress", "--no-tensorboard", "--cpu-threads", "1", "--lora.r", "8"]
    if METHODS[name].cold_start:
        assert train_main([name, *common, "--num-episodes", "2"]) == 0
        saved = out / "final"
    else:
        assert train_main([name, *common, "--preset", "none", "--cold-start.num-steps", "0", "--eval-episodes", "0",
                           "--num-groups", "2", "--group-size", "2", "--max-new-tokens", "8"]) == 0
        assert [r["step"] for r in rows(out)] == [1]
        saved = out / "checkpoints" / "step_1"
    # the checkpoint is the adapter alone, and it names the base it goes on
    assert is_adapter_dir(saved) and not (saved / "model.safetensors").exists()
    assert adapter_base(saved) == tiny_path
    weights = adapters(saved)
    assert weights and all("lora_" in k for k in weights)
    if METHODS[name].cold_start:  # SFT always has a gradient: its adapters moved off their zero start
        assert any(k.endswith("lora_B.weight") and v.abs().sum() > 0 for k, v in weights.items())


@pytest.mark.learning
def test_a_lora_run_resumes_bitwise_and_trains_only_its_adapters(tmp_path, cold_model):
    kw = dict(model=cold_model, num_groups=2, group_size=4, max_new_tokens=24, lora={"r": 8, "alpha": 16})
    grpo.main(small_config(tmp_path / "full", **kw))
    grpo.main(small_config(tmp_path / "cut", num_steps=2, **kw))
    grpo.main(small_config(tmp_path / "cut", resume="auto", **kw))
    full, cut = rows(tmp_path / "full" / "run"), rows(tmp_path / "cut" / "run")
    strip = lambda log: [{k: v for k, v in r.items() if not k.startswith(VOLATILE)} for r in log]  # noqa: E731
    assert strip(cut) == strip(full) and [r["step"] for r in cut] == [1, 2, 3, 4]
    assert any(r.get("update/skipped", 0.0) == 0.0 for r in full)  # some step did update
    a = adapters(tmp_path / "full" / "run" / "checkpoints" / "step_4")
    b = adapters(tmp_path / "cut" / "run" / "checkpoints" / "step_4")
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    assert any(k.endswith("lora_B.weight") and v.abs().sum() > 0 for k, v in a.items())
    # `agentgym eval` takes the adapter checkpoint as it takes any other, its env settings recorded
    assert eval_main(["--model", str(tmp_path / "full" / "run" / "checkpoints" / "step_4"), "--num-episodes", "2",
                      "--max-new-tokens", "8"]) == 0


def test_the_reference_is_the_base_with_adapters_off_not_a_second_copy(tmp_path, tiny_path):
    from agentgym.train.optim.update import sample_logprobs
    from agentgym.train.rollout.samples import Sample

    cfg = small_config(tmp_path, num_steps=1, beta=0.04, lora={"r": 4})
    run, _ = set_up(cfg)
    try:
        assert run.ref_model is None and run.uses_reference
        frozen = sum(p.numel() for p in run.model.parameters() if not p.requires_grad)
        trained = [n for n, p in run.model.named_parameters() if p.requires_grad]
        assert trained and all("lora_" in n for n in trained)
        assert frozen > 10 * sum(p.numel() for p in run.model.parameters() if p.requires_grad)
        optimized = {id(p) for g in run.optimizer.param_groups for p in g["params"]}
        assert optimized == {id(p) for p in run.model.parameters() if p.requires_grad}
        with torch.no_grad():  # adapters that change the policy
            for n, p in run.model.named_parameters():
                if "lora_B" in n:
                    p.normal_(0, 0.5)
        ids = run.tokenizer("Search with <search>a query</search>")["input_ids"]
        sample = Sample(input_ids=ids, loss_mask=[0] * 3 + [1] * (len(ids) - 3), advantage=0.0)
        base = load_causal_lm(tiny_path).eval()
        expected = sample_logprobs(base, [sample], run.tokenizer.pad_token_id, 4)[0]
        reference = run.reference_logprobs([sample], 4, 1.0)[0]
        policy = sample_logprobs(run.model, [sample], run.tokenizer.pad_token_id, 4)[0]
        assert torch.allclose(reference, expected, atol=1e-6)
        assert not torch.allclose(policy, expected, atol=1e-3)
        assert all(p.requires_grad for n, p in run.model.named_parameters() if n in trained)  # adapters back on
    finally:
        run.close()


def test_merge_lora_gives_the_log_probs_of_base_plus_adapter(tmp_path, tiny_path, capsys):
    from agentgym.train.base.models import add_adapters, load_model
    from agentgym.train.config.lora import LoraConfig

    model = add_adapters(load_model(tiny_path, "cpu", trainable=False), LoraConfig(r=4, target_modules=("q_proj", "v_proj", "down_proj")), tiny_path)
    with torch.no_grad():
        for n, p in model.named_parameters():
            if "lora_B" in n:
                p.normal_(0, 0.3)
    adapter_dir = tmp_path / "adapter"
    model.save_pretrained(adapter_dir)
    assert merge_main([str(adapter_dir), str(tmp_path / "merged")]) == 0
    assert "merged" in capsys.readouterr().out
    merged, tokenizer = load_model_and_tokenizer(str(tmp_path / "merged"))
    assert not is_adapter_dir(tmp_path / "merged")
    ids = torch.tensor([tokenizer("Search with <search>the capital</search> then answer")["input_ids"]])
    model.eval()
    with torch.no_grad():
        want = torch.log_softmax(model(input_ids=ids).logits, -1)
        got = torch.log_softmax(merged(input_ids=ids).logits, -1)
        base = torch.log_softmax(load_causal_lm(tiny_path)(input_ids=ids).logits, -1)
    assert torch.allclose(got, want, atol=1e-5)
    assert not torch.allclose(base, want, atol=1e-3)  # the adapter mattered
    # the adapter directory loads merged where a model directory is taken (eval, leaderboard, HFPolicy)
    direct = HFPolicy(str(adapter_dir))
    with torch.no_grad():
        assert torch.allclose(torch.log_softmax(direct.model(input_ids=ids).logits, -1), want, atol=1e-5)
    # a second merge into the same place is refused, not overwritten
    assert merge_main([str(adapter_dir), str(tmp_path / "merged")]) == 2
    assert "exists" in capsys.readouterr().err


def test_an_adapter_whose_base_is_gone_is_one_line_naming_it(tmp_path):
    (tmp_path / "adapter_config.json").write_text(json.dumps({"base_model_name_or_path": "/nowhere/base"}))
    with pytest.raises(ValueError, match="/nowhere/base.*not a model directory here"):
        adapter_base(tmp_path)


@pytest.mark.parametrize("argv,problem", [(["--lora.r", "-1"], "--lora.r must be an integer >= 0"),
                                          (["--lora.dropout", "1.5"], "--lora.dropout must be in"),
                                          (["--lora.target-modules", "all-linear", "q_proj"], "give it alone")])
def test_lora_settings_that_cannot_work_are_one_line(argv, problem, capsys):
    with pytest.raises(SystemExit):
        train_main(["grpo", *argv, "--num-steps", "1"])
    assert problem in capsys.readouterr().err


@pytest.mark.learning
def test_an_async_lora_run_plays_with_published_adapters_and_resumes_bitwise(tmp_path, cold_model):
    kw = dict(model=cold_model, num_groups=2, group_size=4, max_new_tokens=24, async_steps=1, lora={"r": 8})
    grpo.main(small_config(tmp_path / "full", **kw))
    grpo.main(small_config(tmp_path / "cut", num_steps=2, **kw))
    grpo.main(small_config(tmp_path / "cut", resume="auto", **kw))
    full, cut = rows(tmp_path / "full" / "run"), rows(tmp_path / "cut" / "run")
    strip = lambda log: [{k: v for k, v in r.items() if not k.startswith(VOLATILE)} for r in log]  # noqa: E731
    assert strip(cut) == strip(full)
    # batch b plays the adapters of version max(b - 1, the last checkpoint): step 2 is one
    assert [r["async/version_lag"] for r in full] == [0.0, 1.0, 0.0, 1.0]
    # played with older adapters, the ratio is no longer exactly one
    assert any(abs(r["ratio/mean"] - 1.0) > 1e-6 for r in full if r["async/version_lag"] > 0)
    a = adapters(tmp_path / "full" / "run" / "checkpoints" / "step_4")
    b = adapters(tmp_path / "cut" / "run" / "checkpoints" / "step_4")
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_a_lora_run_resumes_on_its_own_base_wherever_the_checkpoint_says_the_base_was(tmp_path):
    kw = dict(num_groups=2, group_size=2, max_new_tokens=8, lora={"r": 4}, save_every=1)
    grpo.main(small_config(tmp_path, num_steps=1, **kw))
    config_file = tmp_path / "run" / "checkpoints" / "step_1" / "adapter_config.json"
    recorded = json.loads(config_file.read_text())
    config_file.write_text(json.dumps({**recorded, "base_model_name_or_path": "/moved/away"}))
    grpo.main(small_config(tmp_path, num_steps=2, resume="auto", **kw))  # the run's --model is the base
    assert [r["step"] for r in rows(tmp_path / "run")] == [1, 2]
    assert is_adapter_dir(tmp_path / "run" / "checkpoints" / "step_2")


def test_resuming_lora_adapters_on_another_base_says_which_model_they_need(tmp_path):
    from agentgym.train.base.errors import ConfigError

    kw = dict(num_groups=2, group_size=2, max_new_tokens=8, lora={"r": 4}, save_every=1)
    grpo.main(small_config(tmp_path, num_steps=1, **kw))
    with pytest.raises(ConfigError, match="its LoRA adapters were trained on .*resume with --model"):
        grpo.main(small_config(tmp_path, num_steps=2, resume="auto", model="tiny-small", **kw))
