"""Logits of the loss positions only: equal to the full forward's where the model's head is plain,
and the full forward for a model that post-processes its logits."""

import torch
from transformers import AutoModelForCausalLM, Gemma2Config, Gemma2ForCausalLM

from agentgym.train.optim.update import masked_next_token_logits, plain_head


def _batch(vocab):
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(1, vocab, (3, 12), generator=g)
    attention = torch.ones_like(ids)
    attention[2, 9:] = 0  # a right-padded row
    mask = torch.zeros(3, 11)
    mask[0, 4:8] = 1
    mask[1, 10] = 1
    mask[2, 2:8] = 1
    return ids, attention, mask


def test_the_loss_positions_logits_equal_the_full_forward_and_carry_the_same_gradient(tiny_path):
    model = AutoModelForCausalLM.from_pretrained(tiny_path).train()
    assert plain_head(model)
    ids, attention, mask = _batch(model.config.vocab_size)
    full = model(input_ids=ids, attention_mask=attention).logits[:, :-1]
    keep = mask.bool()
    logits, targets = masked_next_token_logits(model, ids, attention, mask)
    assert logits.shape == (int(mask.sum()), model.config.vocab_size)
    assert torch.equal(targets, ids[:, 1:][keep])
    assert torch.allclose(logits, full[keep], atol=1e-5)
    # the SFT loss and its gradient are the full forward's
    torch.nn.functional.cross_entropy(logits, targets, reduction="sum").backward()
    mine = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    nll = torch.nn.functional.cross_entropy(full.transpose(1, 2), ids[:, 1:], reduction="none")
    (nll * mask).sum().backward()
    assert all(torch.allclose(a, p.grad, atol=1e-5) for a, p in zip(mine, model.parameters()))
    assert model.training  # the check left the model's mode as it was


def test_a_soft_capped_head_is_not_plain_and_keeps_the_full_forward():
    torch.manual_seed(0)
    config = Gemma2Config(vocab_size=64, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                          num_attention_heads=2, num_key_value_heads=1, head_dim=8, final_logit_softcapping=0.5)
    model = Gemma2ForCausalLM(config)
    assert not plain_head(model)
    ids, attention, mask = _batch(64)
    logits, _ = masked_next_token_logits(model, ids, attention, mask)
    full = model(input_ids=ids, attention_mask=attention).logits[:, :-1]
    assert torch.allclose(logits, full[mask.bool()], atol=1e-6)
    assert logits.abs().max() <= 0.5  # capped: the full forward's logits, not the raw head's


def test_reply_and_prompt_logits_split_every_real_position_between_reply_and_prompt(tiny_path):
    from agentgym.train.optim.update import reply_and_prompt_logits

    model = AutoModelForCausalLM.from_pretrained(tiny_path).eval()
    ids, attention, mask = _batch(model.config.vocab_size)
    full = model(input_ids=ids, attention_mask=attention).logits[:, :-1]
    (reply, reply_targets), (prompt, prompt_targets) = reply_and_prompt_logits(model, ids, attention, mask)
    keep = mask.bool()
    rest = attention[:, 1:].bool() & ~keep
    assert torch.allclose(reply, full[keep], atol=1e-5) and torch.equal(reply_targets, ids[:, 1:][keep])
    assert torch.allclose(prompt, full[rest], atol=1e-5) and torch.equal(prompt_targets, ids[:, 1:][rest])
    # the padded row's positions past its end are in neither; every other position is in one
    assert reply.shape[0] + prompt.shape[0] == 3 * 11 - 3
