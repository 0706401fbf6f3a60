"""Loss masks of the multi-turn layouts: only model-sampled tokens carry loss, and training sees
exactly the tokens the model generated from."""

import pytest
import torch
from toy_env import ToyLookupEnv

from agentgym.agents import HFPolicy, SamplingConfig
from agentgym.agents.base import Completion, Policy
from agentgym.prompts import episode_to_messages
from agentgym.train.config.optim import LossConfig
from agentgym.train.config.rollout import RolloutConfig
from agentgym.train.optim.loss import policy_loss
from agentgym.train.optim.update import pad_batch, sample_logprobs
from agentgym.train.rollout.chat import ChatEncoder
from agentgym.train.rollout.envs import make_env_batch
from agentgym.train.rollout.episodes import collect_episodes
from agentgym.train.rollout.samples import episode_samples


def scripted_completion(tokenizer, text):
    ids = tokenizer(text, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
    return Completion(text=text, token_ids=ids, logprobs=[0.0] * len(ids), finish_reason="stop")


class ExpertAgent(Policy):
    """Plays the expert action of the batch's one env."""

    def __init__(self, tokenizer, batch):
        self.tokenizer, self.batch = tokenizer, batch

    def generate(self, prompts, sampling=None):
        (action,) = self.batch.vec.call("_expert_action")
        return [scripted_completion(self.tokenizer, action) for _ in prompts]


def test_concat_masks_tool_output_and_matches_template(tiny):
    _, tok = tiny
    batch = make_env_batch(ToyLookupEnv, 1, 1)
    encoder = ChatEncoder(tok)
    episodes, _ = collect_episodes(batch, ExpertAgent(tok, batch), encoder, [3], RolloutConfig(layout="concat"))
    ep = episodes[0]
    assert len(ep.turns) == 2 and ep.success
    # the sequence is exactly the chat template's rendering of the whole episode
    full = encoder.render(episode_to_messages(ep.system_prompt, ep.observations[:-1], ep.actions), False)
    assert tok.decode(ep.concat_ids) + "\n" == full
    # loss tokens are exactly the two sampled completions
    sampled = [t for turn in ep.turns for t in turn.completion.token_ids]
    assert [t for t, m in zip(ep.concat_ids, ep.concat_mask) if m] == sampled
    # the tool's output (and the observation header around it) carries no loss
    tool_text = ep.observations[1]
    assert tool_text.startswith("lookup result:")
    env_ids = [t for t, m in zip(ep.concat_ids, ep.concat_mask) if not m]
    assert tool_text in tok.decode(env_ids)
    start = len(ep.turns[0].prompt_ids) + len(ep.turns[0].completion.token_ids)
    second = len(ep.turns[1].prompt_ids)
    assert ep.turns[1].prompt_ids == ep.concat_ids[:second]  # turn 2 was generated from this very prefix
    assert tool_text in tok.decode(ep.concat_ids[start:second])
    assert all(m == 0 for m in ep.concat_mask[start:second])

    # and the loss ignores whatever the model thinks of those tokens
    sample = episode_samples(episodes, [1.0], "concat")[0]
    b = pad_batch([sample], tok.pad_token_id, "cpu")
    lp = torch.randn(b["loss_mask"].shape)
    lp2 = lp.clone()
    lp2[0, start - 1:second - 1] += 5.0  # positions predicting the env's tokens
    cfg = LossConfig(beta=0.0)
    old = lp - 0.05
    l1, _ = policy_loss(lp, old, b["advantages"], b["loss_mask"], cfg)
    l2, _ = policy_loss(lp2, old, b["advantages"], b["loss_mask"], cfg)
    assert float(l1) == float(l2)


def test_window_samples_are_prompt_plus_completion(tiny):
    _, tok = tiny
    batch = make_env_batch(ToyLookupEnv, 1, 1)
    encoder = ChatEncoder(tok)
    episodes, _ = collect_episodes(batch, ExpertAgent(tok, batch), encoder, [0],
                                   RolloutConfig(layout="window", window=0))
    samples = episode_samples(episodes, [0.5], "window")
    assert len(samples) == 2
    ep = episodes[0]
    # window=0: the second turn sees system + first observation only (the tool turn is dropped)
    assert samples[1].input_ids[: len(ep.turns[1].prompt_ids)] == encoder.prompt_ids(
        episode_to_messages(ep.system_prompt, ep.observations[:1], []))
    for s, turn in zip(samples, ep.turns):
        n = len(turn.prompt_ids)
        assert s.loss_mask == [0] * n + [1] * len(turn.completion.token_ids)
        assert s.input_ids[n:] == turn.completion.token_ids
        assert s.advantage == 0.5


@pytest.mark.parametrize("layout", ["concat", "window"])
def test_training_logprobs_equal_generation_logprobs(tiny, layout):
    """A real tiny model plays several turns; recomputing logprobs on the training layout gives
    back the sampling logprobs on every loss token, so training and generation saw the same ids."""
    model, tok = tiny
    torch.manual_seed(0)
    batch = make_env_batch(ToyLookupEnv, 2, 2, env_kwargs={"max_turns": 3})
    policy = HFPolicy(model, tok, SamplingConfig(max_new_tokens=12, temperature=1.0))
    episodes, _ = collect_episodes(batch, policy, ChatEncoder(tok), [0, 1], RolloutConfig(layout=layout, window=1))
    assert all(len(ep.turns) == 3 for ep in episodes)  # random text never parses: 3 turns each
    samples = episode_samples(episodes, [1.0] * 4, layout)
    lps = sample_logprobs(model, samples, tok.pad_token_id, micro_batch_size=3)
    for s, lp in zip(samples, lps):
        ep = episodes[s.episode]
        recomputed = [float(lp[t - 1]) for t, m in enumerate(s.loss_mask) if m]
        if layout == "concat":
            generated = [x for turn in ep.turns for x in turn.completion.logprobs]
        else:
            turn = next(tu for tu in ep.turns if s.input_ids == tu.prompt_ids + tu.completion.token_ids)
            generated = turn.completion.logprobs
        assert recomputed == pytest.approx(generated, abs=2e-4)


@pytest.mark.parametrize("layout", ["concat", "window"])
def test_a_cut_history_still_trains_on_exactly_what_was_generated(tiny, layout):
    """Past actions cut to 100 characters in the history: every sample still holds the turn's whole
    completion, and recomputed logprobs equal the sampling ones, so the loss sees what the model saw."""
    model, tok = tiny
    torch.manual_seed(0)
    batch = make_env_batch(ToyLookupEnv, 2, 2, env_kwargs={"max_turns": 3})
    policy = HFPolicy(model, tok, SamplingConfig(max_new_tokens=24, temperature=1.0))
    cfg = RolloutConfig(layout=layout, window=1, max_action_chars=100)
    episodes, _ = collect_episodes(batch, policy, ChatEncoder(tok), [0, 1], cfg)
    cut = [(ep, t) for ep in episodes for t in range(len(ep.turns)) if len(ep.turns[t].completion.text) > 100]
    assert len(cut) >= 4  # random text of 24 tokens is mostly longer than the cap
    for ep, t in cut:
        assert "characters cut]" in ep.actions[t] and len(ep.actions[t]) <= 100
    samples = episode_samples(episodes, [1.0] * 4, layout)
    lps = sample_logprobs(model, samples, tok.pad_token_id, micro_batch_size=3)
    for s, lp in zip(samples, lps):
        ep = episodes[s.episode]
        recomputed = [float(lp[t - 1]) for t, m in enumerate(s.loss_mask) if m]
        if layout == "concat":  # the sequence keeps every sampled id
            generated = [x for turn in ep.turns for x in turn.completion.logprobs]
        else:  # a later turn's prompt shows the cut history; its sample is the whole completion
            turn = next(tu for tu in ep.turns if s.input_ids == tu.prompt_ids + tu.completion.token_ids)
            generated = turn.completion.logprobs
        assert recomputed == pytest.approx(generated, abs=2e-4)
    if layout == "window":
        later = [ep.turns[t + 1].prompt_ids for ep, t in cut if t + 1 < len(ep.turns)]
        assert later and all("characters cut]" in tok.decode(ids) for ids in later)


def test_concat_refuses_a_template_that_rewrites_history(tiny_path):
    from agentgym.train.base.models import load_tokenizer

    tok = load_tokenizer(tiny_path)
    # like templates that drop old <think> blocks: earlier assistant turns render differently later
    tok.chat_template = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n"
                         "{% if m['role'] == 'assistant' and not loop.last %}[earlier turn]{% else %}{{ m['content'] }}"
                         "{% endif %}<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
    enc = ChatEncoder(tok)
    messages = [{"role": "system", "content": "s"}, {"role": "user", "content": "o0"}]
    with pytest.raises(ValueError, match="window"):
        enc.env_turn_ids(messages + [{"role": "assistant", "content": "a0"}, {"role": "user", "content": "o1"}],
                         "a1", "o2", stopped=True)


def test_explored_turns_train_on_the_label_in_window_and_are_left_out_in_concat(tiny):
    # an exploring cold start played a random action on turn 1: the window sample of that turn
    # trains on the expert's label; the concat sequence must hold the action played, without loss
    from agentgym.train.coldstart.expert import action_ids, episode_samples_from_messages

    _, tokenizer = tiny
    encoder = ChatEncoder(tokenizer)
    messages = episode_to_messages("sys", ["o0", "o1", "o2"], ["a0", "rnd", "a2"])
    labels, explored = ["a0", "a1", "a2"], [False, True, False]
    window = episode_samples_from_messages(messages, encoder, "window", 2, labels=labels, explored=explored)
    for sample, label in zip(window, labels):
        target = action_ids(encoder, label)
        assert sample.input_ids[-len(target):] == target and sum(sample.loss_mask) == len(target)
    (concat,) = episode_samples_from_messages(messages, encoder, "concat", labels=labels, explored=explored)
    (plain,) = episode_samples_from_messages(messages, encoder, "concat")
    assert concat.input_ids == plain.input_ids  # the sequence holds the actions played
    trained = [t for t, m in zip(concat.input_ids, concat.loss_mask) if m]
    assert trained == action_ids(encoder, "a0") + action_ids(encoder, "a2")
