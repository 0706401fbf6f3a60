"""The memory estimate (``agentgym.train.base.memory``): its counts are the model's, its parts add up
as the formula says, and ``--dry-run`` prints it without loading a model."""

import pytest
from transformers import AutoConfig

from agentgym.train.base.memory import GIB, estimate, shape_of
from agentgym.train.base.models import add_adapters, load_model, trainable_parameters
from agentgym.train.command import main as train_main
from agentgym.train.config.lora import LoraConfig
from agentgym.train.config.tree import TrainConfig

TINY_ENV = '{"question_kinds": ["single_hop"], "max_turns": 2}'


@pytest.mark.parametrize("targets", [("all-linear",), ("q_proj", "v_proj"), ("down_proj",)])
def test_the_counts_are_the_models_and_peft_adapters(tiny_path, targets):
    pytest.importorskip("peft")
    lora = LoraConfig(r=4, target_modules=targets)
    shape = shape_of(AutoConfig.from_pretrained(tiny_path), lora)
    model = load_model(tiny_path, "cpu", trainable=False)
    assert shape.parameters == sum(p.numel() for p in model.parameters())
    adapted = add_adapters(model, lora, tiny_path)
    assert shape.lora_parameters == sum(p.numel() for p in trainable_parameters(adapted)) > 0


def test_the_parts_follow_the_formula():
    from agentgym.train.base.memory import Shape

    shape = Shape(parameters=500_000_000, layers=24, hidden=896, intermediate=4864, vocab=151936)
    full = estimate(shape, micro_batch=2, seq_len=256, reply_tokens=128, reference=True)
    assert full.weights == full.reference == full.gradients == 4 * 500_000_000
    assert full.optimizer == 2 * full.gradients
    assert full.peak == full.overhead + full.weights + full.reference + max(
        full.activations + full.logits + full.gradients, full.gradients + full.optimizer)
    lora = estimate(Shape(**{**shape.__dict__, "lora_parameters": 8_800_000}), micro_batch=2, seq_len=256,
                    reply_tokens=128, reference=True)
    assert lora.reference == 0 and lora.weights == full.weights and lora.gradients == 4 * 8_800_000
    assert lora.peak < full.peak - 2 * GIB
    # checkpointing keeps less per layer; bf16 halves the activations; FSDP shards the states
    assert estimate(shape, micro_batch=2, seq_len=256, reply_tokens=128, reference=True,
                    checkpointing=True).activations < full.activations
    assert estimate(shape, micro_batch=2, seq_len=256, reply_tokens=128, reference=True,
                    bf16=True).activations == full.activations / 2
    sharded = estimate(shape, micro_batch=2, seq_len=256, reply_tokens=128, reference=True, shards=4)
    assert sharded.weights == full.weights / 4 and sharded.optimizer == full.optimizer / 4
    # the activations grow with the tokens of a micro-batch
    assert estimate(shape, micro_batch=2, seq_len=1024, reply_tokens=128, reference=True).activations == pytest.approx(
        4 * full.activations)


def test_dry_run_prints_the_estimate_and_trains_nothing(tmp_path, capsys):
    out = tmp_path / "run"
    assert train_main(["grpo", "--model", "tiny", "--preset", "none", "--env-kwargs", TINY_ENV, "--dry-run",
                       "--output-dir", str(out), "--micro-batch-size", "2", "--max-prompt-tokens", "200"]) == 0
    text = capsys.readouterr().out
    longest = 200 + TrainConfig().rollout.sampling.max_new_tokens
    assert "memory: about" in text and f"micro-batches of 2 sequences of {longest} tokens" in text
    assert "nothing was trained" in text and not out.exists()
    with_lora = ["grpo", "--model", "tiny", "--preset", "none", "--env-kwargs", TINY_ENV, "--dry-run", "--lora.r", "8",
                 "--output-dir", str(out)]
    pytest.importorskip("peft")
    assert train_main(with_lora) == 0
    assert "reference 0.00" in capsys.readouterr().out
