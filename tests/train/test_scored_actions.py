"""Scored actions: with ``scored_actions=True`` a policy scores each listed action whole and samples
from the softmax over the candidates; the update recomputes the same log-probabilities (the chosen
reply's tokens, its last less the candidates' log-sum-exp), so the PPO ratio is taken under the
distribution that sampled."""

import pytest
import torch
from alfworld_rollouts import check_full_forward, play, recorded_and_recomputed

from agentgym.agents import HFPolicy, SamplingConfig
from agentgym.agents.scoring import candidate_logprobs, candidate_scores
from agentgym.train.config.optim import LossConfig
from agentgym.train.optim.update import (
    behaviour_logprobs,
    logprobs_and_hidden,
    pad_batch,
    sample_logprobs,
    scored_candidates,
    train_step,
)
from agentgym.train.rollout.chat import ChatEncoder
from agentgym.train.rollout.samples import Sample, episode_samples


def _play(model, tok, layout: str, temperature: float = 0.7, groups: int = 2, seed: int = 0):
    pytest.importorskip("alfworld")
    # window: the task and last steps, no list (the actions are scored apart)
    kwargs = {"scored_actions": True, **({"observation": "history"} if layout == "window" else {})}
    return play(model, tok, kwargs, layout, temperature, groups, seed)


def test_candidates_scored_from_the_prompts_cache_equal_each_scored_alone(tiny):
    model, _ = tiny
    prefix = list(range(5, 70))
    candidates = [[7, 8, 9, 2], [11, 2], [13, 14, 2], [3], [7, 8, 2]]
    with torch.no_grad():
        lp, lengths = candidate_logprobs(model, prefix, candidates, temperature=0.7, chunk=2)
        for c, row, n in zip(candidates, lp, lengths.tolist()):
            logits = model(input_ids=torch.tensor([prefix + c])).logits[0, len(prefix) - 1:-1] / 0.7
            alone = torch.log_softmax(logits, -1).gather(-1, torch.tensor(c)[:, None]).squeeze(-1)
            assert n == len(c) and torch.allclose(row[:n], alone, atol=1e-5) and (row[n:] == 0).all()


def test_scoring_without_a_cache_gives_the_same_scores_and_gradients(tiny):
    """A model that returns no cache (gradient checkpointing in training) scores each candidate
    after the whole prompt: the same numbers, and the same gradients."""
    from agentgym.agents import load_model_and_tokenizer
    from agentgym.agents.tiny import build_tiny_model

    model, _ = load_model_and_tokenizer(str(build_tiny_model()))
    prefix, candidates = list(range(5, 40)), [[7, 8, 9, 2], [11, 2], [13, 14, 2]]

    def scores_and_grad(use_cache: bool):
        model.zero_grad()
        forward = model.forward
        if not use_cache:
            model.forward = lambda *a, **k: forward(*a, **{**k, "use_cache": False})
        try:
            s = candidate_scores(model, prefix, candidates)
        finally:
            model.forward = forward
        torch.logsumexp(s, 0).backward()
        return s.detach(), model.model.embed_tokens.weight.grad.clone()

    cached, cached_grad = scores_and_grad(True)
    whole, whole_grad = scores_and_grad(False)
    assert torch.allclose(cached, whole, atol=1e-5) and torch.allclose(cached_grad, whole_grad, atol=1e-5)


def test_a_policy_picks_one_listed_reply_whole_and_records_its_softmax_logprob(tiny):
    model, tok = tiny
    policy = HFPolicy(model, tok)
    prompts = [[{"role": "user", "content": "What now?"}]] * 3
    replies = ["go to desk 1", "take mug 1 from desk 1", "look"]
    out = policy.generate(prompts, SamplingConfig(max_new_tokens=2, temperature=1.0), scored=[replies, None, replies])
    assert out[0].text in replies and out[2].text in replies and out[1].candidate_ids is None
    ids = policy.prompt_ids(prompts[0])
    candidates = [tok(r, add_special_tokens=False)["input_ids"] + [tok.eos_token_id] for r in replies]
    assert out[0].candidate_ids == candidates and out[0].token_ids == candidates[replies.index(out[0].text)]
    with torch.no_grad():
        scores = candidate_scores(model, ids, candidates)
    expected = torch.log_softmax(scores, 0)[replies.index(out[0].text)]
    assert sum(out[0].logprobs) == pytest.approx(float(expected), abs=1e-4)  # longer than max_new_tokens too
    greedy = policy.generate(prompts[:1], SamplingConfig(temperature=0), scored=[replies])[0]
    assert greedy.text == replies[int(torch.argmax(scores))]
    # sampled over many draws, each reply about as often as its softmax says
    torch.manual_seed(0)
    picks = [policy.generate(prompts[:1], SamplingConfig(temperature=1.0), scored=[replies])[0].text
             for _ in range(300)]
    freq = torch.tensor([picks.count(r) / len(picks) for r in replies])
    assert torch.allclose(freq, torch.softmax(scores, 0), atol=0.08)
    with pytest.raises(ValueError, match="both allowed and scored"):
        policy.generate(prompts[:1], allowed=[["1"]], scored=[replies])


@pytest.mark.slow
@pytest.mark.parametrize("layout", ["concat", "window"])
def test_the_update_recomputes_the_sampled_logprobs_under_the_candidates_softmax(tiny, layout):
    model, tok = tiny
    episodes = _play(model, tok, layout)
    infos = [info for ep in episodes for info in ep.step_infos]
    assert all(i["action_valid"] for i in infos)  # every reply is a listed action
    for ep in episodes:
        for turn, action in zip(ep.turns, ep.actions):
            assert turn.completion.candidate_ids and len(turn.completion.candidate_ids) > 1
            assert turn.completion.token_ids in turn.completion.candidate_ids
            assert action == turn.completion.text  # the env received the listed action's words
            assert len(turn.completion.candidate_scores) == len(turn.completion.candidate_ids)
    samples = episode_samples(episodes, [1.0] * len(episodes), layout)
    assert samples and all(s.scored for s in samples)
    recorded, computed, free = recorded_and_recomputed(model, tok, samples)
    for s, r, c, f in zip(samples, recorded, computed, free):
        mask = torch.tensor(s.loss_mask[1:], dtype=torch.bool)
        assert torch.allclose(r[mask], c[mask], atol=1e-4)  # the update's logprobs are the sampler's
        for reply in s.scored:  # and a reply's sum is its log-probability under the softmax, above its tokens'
            end = reply.start + reply.length - 1
            assert float(c[reply.start - 1:end].sum()) > float(f[reply.start - 1:end].sum()) + 1e-3
            assert float(c[reply.start - 1:end].sum()) <= 1e-6
    check_full_forward(model, tok, samples, computed, "scored")  # the full forward subtracts alike
    batch = pad_batch(samples, tok.pad_token_id, "cpu")
    with torch.no_grad():  # the recorded scores are the weights' own, as the update reuses them
        for (_, reply), scores in zip(batch["scored"], scored_candidates(model, batch["input_ids"], batch["scored"], 0.7)):
            assert torch.allclose(torch.tensor(reply.scores), scores, atol=1e-4)


@pytest.mark.slow
def test_one_update_raises_the_advantaged_reply_among_its_candidates(tiny):
    from agentgym.agents import load_model_and_tokenizer
    from agentgym.agents.tiny import build_tiny_model

    model, tok = load_model_and_tokenizer(str(build_tiny_model()))  # its own copy: the update changes it
    episodes = _play(model, tok, "window", groups=1)
    samples = [s for s in episode_samples(episodes, [1.0, 1.0], "window")][:1]
    before, _ = behaviour_logprobs(model, samples, tok.pad_token_id, 4, temperature=0.7)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    metrics = train_step(model, optimizer, samples, LossConfig(beta=0.0), tok.pad_token_id, micro_batch_size=4,
                         temperature=0.7, old_logprobs=before)
    assert metrics["ratio/mean"] == pytest.approx(1.0, abs=1e-4)
    after = sample_logprobs(model, samples, tok.pad_token_id, 4, temperature=0.7)
    reply = samples[0].scored[0]
    span = slice(reply.start - 1, reply.start + reply.length - 1)
    assert float(after[0][span].sum()) > float(before[0][span].sum())  # log pi(reply) rose


def test_policies_that_cannot_score_refuse_a_list_and_envs_refuse_both_lists():
    import gymnasium as gym

    from agentgym.agents import OpenAIPolicy

    with pytest.raises(ValueError, match="OpenAIPolicy cannot score a list of replies"):
        OpenAIPolicy("http://127.0.0.1:9", "m").generate([[{"role": "user", "content": "hi"}]], scored=[["look"]])
    with pytest.raises(ValueError, match="lists no admissible actions"):
        gym.make("ToolQA-v0", scored_actions=True)
    with pytest.raises(ValueError, match="exclude each other"):
        gym.make("TextWorld-v0", action_format="choice", constrained_choice=True, scored_actions=True)


def test_a_generator_that_cannot_score_is_refused_before_the_run():
    from agentgym.train.base.errors import ConfigError
    from agentgym.train.base.flags import build
    from agentgym.train.config.tree import TrainConfig

    config = build(TrainConfig, env_id="ALFWorld-v0", env_kwargs='{"scored_actions": true}',
                   generator="openai", generator_url="http://127.0.0.1:9/v1")
    with pytest.raises(ConfigError, match="scored_actions=True needs --generator hf"):
        config.validate()


@pytest.mark.parametrize("layout", ["concat", "window"])
def test_the_cold_start_raises_the_experts_action_among_the_listed_ones(tiny, layout):
    from agentgym.train.coldstart.expert import action_ids, episode_samples_from_messages

    _, tok = tiny
    encoder = ChatEncoder(tok)
    messages = [{"role": "system", "content": "Play."}, {"role": "user", "content": "You see a desk."},
                {"role": "assistant", "content": "go to desk 1"}, {"role": "user", "content": "The door is open."},
                {"role": "assistant", "content": "open door"}, {"role": "user", "content": "You see a mug."},
                {"role": "assistant", "content": "take mug 1"}]
    listed = [["look", "go to desk 1"], ["look"], ["take mug 1", "look", "go to desk 1"]]
    samples = episode_samples_from_messages(messages, encoder, layout, window=None, scored=listed)
    replies = [(s, r) for s in samples for r in s.scored or ()]
    # the listed expert actions are scored replies; "open door" is not listed, so it trains nothing
    assert [r.chosen for _, r in replies] == [action_ids(encoder, "go to desk 1"), action_ids(encoder, "take mug 1")]
    assert [r.candidates for _, r in replies][1] == [action_ids(encoder, a) for a in listed[2]]
    trained = [s.input_ids[i] for s in samples for i, m in enumerate(s.loss_mask) if m]
    assert trained == action_ids(encoder, "go to desk 1") + action_ids(encoder, "take mug 1")
    for s, r in replies:
        assert s.input_ids[r.start:r.start + r.length] == r.chosen


def test_the_update_rebuilds_each_replys_scoring_in_its_backward_pass_with_the_same_gradient(tiny):
    """Scored replies' candidates are recomputed in the backward pass (a ScienceWorld micro-batch's
    graphs would not fit otherwise): the loss and every gradient are those of the plain graph."""
    from agentgym.agents import load_model_and_tokenizer
    from agentgym.agents.tiny import build_tiny_model
    from agentgym.train.optim import update

    model, tok = load_model_and_tokenizer(str(build_tiny_model()))
    encoder = ChatEncoder(tok)
    listed = ["go to desk 1", "take mug 1 from desk 1", "look", "open drawer 2"]
    candidates = [encoder.encode(a) + [tok.eos_token_id] for a in listed]
    prompt = encoder.prompt_ids([{"role": "user", "content": "You see a desk."}])
    samples = [Sample(prompt + candidates[k], [0] * len(prompt) + [1] * len(candidates[k]), 1.0,
                      scored=[update.ScoredReply(len(prompt), candidates, k)]) for k in (1, 3)]
    batch = pad_batch(samples, tok.pad_token_id, "cpu")

    def loss_and_grads(recompute: bool):
        model.zero_grad()
        original = update.checkpoint
        if not recompute:
            update.checkpoint = lambda fn, *args, **kwargs: fn(*args)
        try:
            lp = logprobs_and_hidden(model, batch["input_ids"], batch["attention_mask"], 0.7,
                                     keep=batch["loss_mask"], scored=batch["scored"])[0]
        finally:
            update.checkpoint = original
        loss = -(lp * batch["loss_mask"]).sum()
        loss.backward()
        return float(loss.detach()), [p.grad.clone() for p in model.parameters()]

    plain_loss, plain = loss_and_grads(False)
    kept_loss, kept = loss_and_grads(True)
    assert kept_loss == pytest.approx(plain_loss, abs=1e-5)
    assert all(torch.allclose(a, b, atol=1e-6) for a, b in zip(plain, kept))


def test_a_sampled_normalizer_keeps_the_exact_value_and_its_gradient_is_unbiased(tiny):
    """``scored_samples``: the log-sum-exp's value is exact and its gradient, estimated from a few
    candidates drawn from the policy, averages to the exact gradient."""
    from agentgym.agents import load_model_and_tokenizer
    from agentgym.agents.tiny import build_tiny_model
    from agentgym.train.optim.update import ScoredReply, scored_normalizers

    model, _ = load_model_and_tokenizer(str(build_tiny_model()))
    prefix = list(range(5, 30))
    candidates = [[7 + k] * (1 + k % 2) + [2] for k in range(12)]  # lengths differ: far from uniform
    input_ids = torch.tensor([prefix + candidates[3]])
    scored = [(0, ScoredReply(len(prefix), candidates, 3))]
    direction: list[torch.Tensor] = []

    def value_and_slope(samples: int) -> tuple[float, float]:
        model.zero_grad()
        ((norm, scores),) = scored_normalizers(model, input_ids, scored, 0.7, samples)
        norm.backward()
        assert scores.shape == (12,)
        assert samples == 0 or not scores.requires_grad  # drawn: the list's scores carry no graph
        return float(norm), sum(float((p.grad * d).sum()) for p, d in zip(model.parameters(), direction))

    value_and_slope(0)
    direction = [p.grad.clone() for p in model.parameters()]  # the slope along the exact gradient
    exact_value, exact_slope = value_and_slope(0)
    torch.manual_seed(0)
    draws = [value_and_slope(3) for _ in range(400)]
    assert all(v == pytest.approx(exact_value, abs=1e-5) for v, _ in draws)
    slopes = torch.tensor([s for _, s in draws])
    spread = float(slopes.std()) / len(draws) ** 0.5
    assert spread > 0  # the draws differ: only a few candidates carry each gradient
    assert abs(float(slopes.mean()) - exact_slope) < 4 * spread + 1e-6
    with torch.no_grad():  # no gradients: every candidate, exact
        ((norm, _),) = scored_normalizers(model, input_ids, scored, 0.7, 3)
    assert float(norm) == pytest.approx(exact_value, abs=1e-5)


@pytest.mark.slow
def test_an_update_at_the_sampling_weights_scores_only_the_drawn_candidates(tiny, monkeypatch):
    """One optimizer step per rollout (no ``old_logprobs``): with ``scored_samples`` the update takes
    the normalizer's value and its draws from the scores the sampler recorded, and scores only the
    drawn candidates with a graph; with older weights it scores every candidate again."""
    from agentgym.agents import load_model_and_tokenizer
    from agentgym.agents.tiny import build_tiny_model
    from agentgym.train.optim import update

    model, tok = load_model_and_tokenizer(str(build_tiny_model()))
    episodes = _play(model, tok, "window", groups=1)
    samples = episode_samples(episodes, [1.0, -1.0], "window")
    listed = sum(len(r.candidates) for s in samples for r in s.scored)
    assert listed > 2 * 2 * len(samples)
    scored_counts: list[int] = []
    real = update.candidate_scores
    monkeypatch.setattr(update, "candidate_scores", lambda m, p, c, *a: scored_counts.append(len(c)) or real(m, p, c, *a))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.0)
    cfg = LossConfig(beta=0.0, scored_samples=2)
    metrics = train_step(model, optimizer, samples, cfg, tok.pad_token_id, micro_batch_size=4, temperature=0.7)
    # two drawn per reply, scored in the forward pass and again in the backward (checkpointed)
    assert metrics["ratio/mean"] == pytest.approx(1.0) and sum(scored_counts) <= 2 * 2 * len(samples)
    scored_counts.clear()
    old, _ = behaviour_logprobs(model, samples, tok.pad_token_id, 4, temperature=0.7)
    train_step(model, optimizer, samples, cfg, tok.pad_token_id, micro_batch_size=4, temperature=0.7, old_logprobs=old)
    assert sum(scored_counts) >= listed  # every candidate, without a graph, then the drawn ones


def test_the_cold_starts_sampled_softmax_estimates_the_whole_lists_sum_without_bias(tiny):
    """``--cold-start.scored-negatives``: the expert's action against a few candidates drawn
    uniformly, the others' terms scaled up: exp(normalizer) averages to the whole list's sum."""
    from agentgym.train.optim.update import ScoredReply, sampled_softmax_normalizers

    model, _ = tiny
    prefix = list(range(5, 30))
    candidates = [[7 + k] * (1 + k % 2) + [2] for k in range(12)]
    input_ids = torch.tensor([prefix + candidates[3]])
    scored = [(0, ScoredReply(len(prefix), candidates, 3))]
    with torch.no_grad():
        exact = torch.logsumexp(candidate_scores(model, prefix, candidates, 1.0), 0)
        torch.manual_seed(0)
        draws = [sampled_softmax_normalizers(model, input_ids, scored, 3)[0] for _ in range(600)]
        whole = sampled_softmax_normalizers(model, input_ids, scored, 11)[0]
    assert all(len(scores) == 4 for _, scores in draws)
    assert float(whole[0]) == pytest.approx(float(exact), abs=1e-5) and len(whole[1]) == 12
    sums = torch.exp(torch.stack([norm for norm, _ in draws]).double() - float(exact))
    assert abs(float(sums.mean()) - 1.0) < 4 * float(sums.std()) / len(draws) ** 0.5
    assert float(sums.std()) > 0.01
