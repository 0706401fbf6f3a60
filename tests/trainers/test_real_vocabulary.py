"""A real vocabulary through the whole loop at a small depth: Qwen2.5's 151,936 output rows on a
2-layer model. Every pass that reaches the output layer (rollout, reference, old policy, update)
computes logits for the positions it reads only, never the whole vocabulary at every position of a
micro-batch: at Qwen's vocabulary that is what a 0.5-7B run would run out of memory on first."""

import json

import grpo
import pytest
import torch
from trainer_helpers import small_config

from agentgym.agents.tiny import build_tiny_model
from agentgym.train.run import setup

VOCAB = 151_936  # Qwen2.5's output rows (more than its tokenizer's 151,665 ids, as here)


@pytest.fixture(scope="module")
def real_vocab_model(tmp_path_factory):
    """The tiny model's tokenizer on a 2-layer Qwen2 model with Qwen2.5's vocabulary size."""
    from transformers import AutoModelForCausalLM, AutoTokenizer, GenerationConfig, Qwen2Config

    tiny = build_tiny_model()
    tok = AutoTokenizer.from_pretrained(tiny)
    config = Qwen2Config(vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, tie_word_embeddings=True,
                         eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id, bos_token_id=None)
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    with torch.no_grad():  # ids the tokenizer does not have are never sampled, as in a trained model
        model.get_output_embeddings().weight[len(tok):] = 0
        model.get_input_embeddings().weight[len(tok):] = 0
    model.generation_config = GenerationConfig(eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id,
                                               do_sample=True)
    out = tmp_path_factory.mktemp("real-vocab")
    model.save_pretrained(out)
    tok.save_pretrained(out)
    return str(out)


def test_no_pass_computes_the_whole_vocabulary_at_every_position(tmp_path, real_vocab_model, monkeypatch):
    heads = []  # per pass through the output layer: (rows it computed, vocabulary, with gradient)
    positions = []  # per pass through the decoder: batch x length of its input
    load = setup.load_model

    def load_and_watch(*args, **kwargs):
        model = load(*args, **kwargs)

        def head_hook(module, inputs, output):
            x = inputs[0]
            heads.append((x.shape[0] * x.shape[1] if x.dim() == 3 else x.shape[0], output.shape[-1],
                          torch.is_grad_enabled()))

        def decoder_hook(module, args, kwargs):
            ids = kwargs.get("input_ids", args[0] if args else None)
            if ids is not None:
                positions.append(ids.shape[0] * ids.shape[1])

        model.get_output_embeddings().register_forward_hook(head_hook)
        model.get_decoder().register_forward_pre_hook(decoder_hook, with_kwargs=True)
        return model

    monkeypatch.setattr(setup, "load_model", load_and_watch)
    cfg = small_config(tmp_path, model=real_vocab_model, num_steps=1, num_groups=2, group_size=2, max_new_tokens=8,
                       micro_batch_size=4, num_epochs=2, num_minibatches=1, beta=0.04, save_every=0)
    grpo.main(cfg)
    rows = [json.loads(line) for line in open(tmp_path / "run" / "metrics.jsonl")]
    assert rows[0]["step"] == 1 and rows[0]["batch/episodes"] == 4
    assert heads and all(width == VOCAB for _, width, _ in heads)
    # the rollout: one row per sequence and new token (prefill included), never the prompt's
    assert min(r for r, _, _ in heads) == 4
    # the reference, the old policy (two epochs) and the update: the reply tokens only, at most 4
    # samples x 2 turns x 8 tokens, where the micro-batches hold hundreds of positions
    passes = [r for r, _, _ in heads if r > 4]
    assert len(passes) >= 3 and any(grad for _, _, grad in heads)
    assert max(passes) <= 4 * 2 * 8 < max(positions) / 4
    widest = max(r for r, _, _ in heads) * VOCAB * 4
    whole = max(positions) * VOCAB * 4
    assert widest < 48 * 2**20 < whole, (widest, whole)  # the logits of one pass: tens of MiB, not hundreds
