import json
import os

import gymnasium as gym
import pytest
import sft
from trainer_helpers import TOOLQA_SMALL

from agentgym.cli import main as cli_main
from agentgym.train.base.flags import build
from agentgym.train.base.metrics import read_metrics
from agentgym.train.base.models import load_tokenizer
from agentgym.train.coldstart.expert import expert_episode
from agentgym.train.config.tree import SFTRunConfig
from agentgym.train.evaluate import evaluate
from agentgym.train.rollout.chat import ChatEncoder


def test_expert_transcript_trains_on_assistant_tokens_only(tmp_path):
    from agentgym.agents.tiny import build_tiny_model

    tok = load_tokenizer(str(build_tiny_model()))
    env = gym.make("ToolQA-v0", expert=True, question_kinds=["single_hop"])
    samples, info = expert_episode(env, ChatEncoder(tok), seed=5)
    assert info["success"] and len(samples) == 1
    s = samples[0]
    loss_text = tok.decode([t for t, m in zip(s.input_ids, s.loss_mask) if m])
    assert loss_text.startswith("<tool_call>") and "<answer>" in loss_text
    assert "<tool_response>" not in loss_text and "Question:" not in loss_text
    # window layout: one sample per expert turn
    samples, _ = expert_episode(env, ChatEncoder(tok), seed=5, layout="window", window=0)
    assert len(samples) == 2


def test_sft_smoke(tmp_path):
    final = sft.main(build(SFTRunConfig, progress=False, env_kwargs=TOOLQA_SMALL, num_steps=3, num_episodes=8, batch_size=4,
                              output_dir=str(tmp_path), quiet=True))
    rows = read_metrics(tmp_path)
    assert [r["step"] for r in rows] == [1, 2, 3] and rows[0]["loss/sft"] > 0
    assert (tmp_path / "final" / "model.safetensors").exists() and final.endswith("final")


def test_eval_cli_on_the_tiny_model(tmp_path, capsys):
    out = tmp_path / "r.json"
    assert cli_main(["eval", "--model", "tiny", "--env-kwargs", TOOLQA_SMALL, "--num-episodes", "4",
                     "--batch-size", "2", "--max-new-tokens", "8", "--output", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "success" in printed and "PRS return" in printed and "format" in printed
    result = json.loads(out.read_text())
    assert result["num_episodes"] == 4 and set(result["terms"]) == {"format", "tool", "answer"}
    # the model evaluated: the tiny model's build, as the trainers resolve it
    from agentgym.agents.tiny import resolve_model_path

    assert result["model"] == os.path.abspath(resolve_model_path("tiny", ("ToolQA-v0",)))
    # --seed also seeds the sampling, so a sampled evaluation (--temperature > 0) repeats itself
    import torch

    torch.manual_seed(123)
    assert cli_main(["eval", "--model", "tiny", "--env-kwargs", TOOLQA_SMALL, "--num-episodes", "2",
                     "--max-new-tokens", "4", "--temperature", "1.0", "--seed", "5"]) == 0
    assert torch.initial_seed() == 5


def expertish(body):
    """A search on the first turn, then a (wrong) answer."""
    if not any(m["role"] == "assistant" for m in body["messages"]):
        return '<tool_call>{"name": "search", "arguments": {"query": "x"}}</tool_call>'
    return "<answer>nobody</answer>"


def test_evaluate_through_an_openai_compatible_endpoint(chat_server):
    from agentgym.agents import OpenAIPolicy

    chat_server.reply = expertish
    policy = OpenAIPolicy(chat_server.url, "m", max_retries=0)
    result = evaluate(policy, "ToolQA-v0", json.loads(TOOLQA_SMALL), "test", num_episodes=4, batch_size=2)
    assert result["terms"]["format"] == 1.0 and result["turns"] == 2.0
    assert result["success_rate"] == 0.0 and 0.1 <= result["prs_return"] < 1.0


def test_eval_cli_plays_with_the_env_kwargs_the_checkpoint_was_trained_with(tmp_path):
    from agentgym.train.config.presets import preset_kwargs
    from agentgym.train.config.tree import TrainConfig
    from agentgym.train.evaluate import trained_env_kwargs
    from agentgym.train.loop import train

    train(build(TrainConfig, env_kwargs='{"question_kinds": ["single_hop"], "max_turns": 1}', num_steps=1,
                num_groups=1, group_size=2, max_new_tokens=4, cold_start={"num_steps": 0}, eval_episodes=0, progress=False,
                quiet=True, tensorboard=False, output_dir=str(tmp_path)))
    ckpt = str(tmp_path / "checkpoints" / "step_1")
    # --env-kwargs merged over the tiny preset of the default model, as recorded in the checkpoint
    assert trained_env_kwargs(ckpt, "ToolQA-v0") == {**preset_kwargs("tiny", "ToolQA-v0"), "max_turns": 1}
    assert trained_env_kwargs(ckpt, "ALFWorld-v0") == {}
    out = tmp_path / "r.json"
    assert cli_main(["eval", "--model", ckpt, "--num-episodes", "2", "--batch-size", "2", "--max-new-tokens", "4",
                     "--output", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["turns"] == 1.0 and result["model"] == os.path.abspath(ckpt)


def test_eval_cli_plays_a_split_no_larger_than_its_episodes_whole(tmp_path, chat_server, capsys):
    # a pool of training games (ALFWorld's L0 with l0_every) is measured whole, as the trainers'
    # held-out evaluation measures it, not by the seeded draws that repeat some games and skip others
    chat_server.reply = lambda body: "1"
    kwargs = {"data_path": "generated:40:tiny", "l0_every": 2, "action_format": "choice", "max_turns": 2}
    env = gym.make("ALFWorld-v0", **kwargs)
    pool = env.unwrapped.task_ids("L0")
    env.close()
    out = tmp_path / "r.json"
    argv = ["eval", "--base-url", chat_server.url, "--model", "m", "--env-id", "ALFWorld-v0", "--env-kwargs",
            json.dumps(kwargs), "--split", "L0", "--batch-size", "4", "--output", str(out)]
    assert 2 < len(pool) and cli_main([*argv, "--num-episodes", str(2 * len(pool))]) == 0
    assert f"{len(pool)} tasks, each played in turn" in capsys.readouterr().out
    assert [e["task_id"] for e in json.loads(out.read_text())["episodes"]] == pool + pool
    # fewer episodes than tasks: the seeded draws, as before
    assert cli_main([*argv, "--num-episodes", "2"]) == 0
    assert "played in turn" not in capsys.readouterr().out and len(json.loads(out.read_text())["episodes"]) == 2


def test_chatty_answers_rewrite_that_share_of_the_expert_answers_and_nothing_else():
    import pytest

    from agentgym.agents.tiny import build_tiny_model
    from agentgym.train.coldstart.sft import expert_samples

    tok = load_tokenizer(str(build_tiny_model()))
    kw = dict(model="tiny", env_kwargs='{"question_kinds": ["single_hop"], "max_turns": 2, "action_format": "tags"}',
              num_episodes=40)

    def answers(chatty):
        samples, tasks, solved, rewritten = expert_samples(build(SFTRunConfig, **kw, chatty_answers=chatty),
                                                            ChatEncoder(tok))
        texts = [tok.decode([t for t, m in zip(s.input_ids, s.loss_mask) if m]) for s in samples]
        assert solved == len(tasks) == 40 and rewritten == sum("<answer>The answer is " in t for t in texts)
        return texts, rewritten

    plain, none = answers(0.0)
    chatty, some = answers(0.5)
    assert none == 0 and 10 <= some <= 30
    assert answers(0.5)[0] == chatty  # a fixed draw per episode: the same recipe makes the same data
    for p, c in zip(plain, chatty):  # the search and the answer's words are the expert's own
        if p != c:
            value = p.split("<answer>")[1].split("</answer>")[0]
            assert c == p.replace(f"<answer>{value}</answer>", f"<answer>The answer is {value}.</answer>")
    with pytest.raises(ValueError, match="chatty-answers"):
        expert_samples(build(SFTRunConfig, model="tiny", preset="none", env_id="ALFWorld-v0",
                             num_episodes=2, chatty_answers=0.5), ChatEncoder(tok))


def test_a_cold_start_whose_every_prompt_is_over_the_cap_stops_with_one_line(tmp_path):
    import pytest

    from agentgym.train.base.errors import ConfigError

    # ~12 KB of system prompt is ~3,800 tokens, past the default --max-prompt-tokens 3072 (a 117 KB
    # one made SFT ask for 42 GB in attention)
    kw = json.loads(TOOLQA_SMALL) | {"system_prompt": "Search with <search>query</search>, then answer. " * 250}
    cfg = build(SFTRunConfig, model="tiny", env_kwargs=json.dumps(kw), num_steps=1, num_episodes=2, batch_size=2,
                micro_batch_size=1, output_dir=str(tmp_path), quiet=True, progress=False, tensorboard=False)
    with pytest.raises(ConfigError, match=r"every one of 2 cold-start samples has a prompt longer than "
                                          r"--max-prompt-tokens 3072 \(the shortest: \d{4} tokens\)") as err:
        sft.main(cfg)
    assert "\n" not in str(err.value) and not (tmp_path / "final").exists()


def test_sft_leaves_out_the_samples_whose_prompt_is_over_the_cap_and_counts_them(tmp_path, tiny_path, capsys):
    from agentgym.train.base.records import read_record
    from agentgym.train.coldstart.sft import expert_samples, prompt_tokens

    kw = dict(model=tiny_path, env_kwargs=TOOLQA_SMALL, layout="window", num_steps=1, num_episodes=3, batch_size=2,
              output_dir=str(tmp_path), progress=False, tensorboard=False)
    samples = expert_samples(build(SFTRunConfig, **kw), ChatEncoder(load_tokenizer(tiny_path)))[0]
    lengths = [prompt_tokens(s) for s in samples]  # window layout: the answer turn's prompt holds the search result
    cap = min(lengths)
    over = sum(n > cap for n in lengths)
    assert 0 < over < len(samples)
    final = sft.main(build(SFTRunConfig, **kw, max_prompt_tokens=cap))
    assert read_record(final)["samples_too_long"] == over
    printed = capsys.readouterr().out
    assert f"sft: {over} samples left out, their prompt longer than --max-prompt-tokens {cap}" in printed


def _prompt_nll(model_dir, samples):
    """Mean next-token loss of ``samples``' prompt tokens under the model in ``model_dir``."""
    import torch

    from agentgym.train.base.models import load_model
    from agentgym.train.optim.update import pad_batch, reply_and_prompt_logits

    model = load_model(model_dir, "cpu", trainable=False)
    b = pad_batch(samples, load_tokenizer(model_dir).pad_token_id, "cpu")
    with torch.no_grad():
        _, (logits, targets) = reply_and_prompt_logits(model, b["input_ids"], b["attention_mask"], b["loss_mask"])
    return float(torch.nn.functional.cross_entropy(logits, targets))


@pytest.mark.learning
def test_a_prompt_loss_weight_also_teaches_the_model_the_env_text_and_is_part_of_the_recipe(tmp_path, tiny_path):
    from agentgym.train.base.records import read_record
    from agentgym.train.coldstart.sft import expert_samples

    kw = dict(model=tiny_path, env_kwargs=TOOLQA_SMALL, num_steps=15, num_episodes=8, batch_size=4,
              learning_rate=3e-3, progress=False, tensorboard=False, quiet=True)
    replies_only = sft.main(build(SFTRunConfig, **kw, output_dir=str(tmp_path / "a")))
    with_prompt = sft.main(build(SFTRunConfig, **kw, prompt_loss_weight=1.0, output_dir=str(tmp_path / "b")))
    rows = read_metrics(tmp_path / "b")
    assert all(r["loss/prompt"] > 0 for r in rows) and "loss/prompt" not in read_metrics(tmp_path / "a")[0]
    samples = expert_samples(build(SFTRunConfig, **kw), ChatEncoder(load_tokenizer(tiny_path)))[0]
    # both saw the same batches; only the run with the weight learnt to predict the prompts
    assert _prompt_nll(with_prompt, samples) < _prompt_nll(replies_only, samples) - 0.5
    assert read_record(with_prompt)["recipe"]["sft"]["prompt_loss_weight"] == 1.0
    assert "prompt_loss_weight" not in read_record(replies_only)["recipe"]["sft"]  # older cold starts still match


def test_a_prompt_loss_with_exploration_in_the_concat_layout_stops_with_one_line(tmp_path):
    import pytest

    from agentgym.train.base.errors import ConfigError
    from agentgym.train.config.coldstart import SFTConfig
    from agentgym.train.config.tree import SettingError

    cfg = build(SFTRunConfig, model="tiny", preset="none", env_id="ALFWorld-v0", layout="concat", explore=0.2,
                prompt_loss_weight=1.0, num_steps=1, num_episodes=2, output_dir=str(tmp_path), quiet=True)
    with pytest.raises(ConfigError, match="--prompt-loss-weight with --explore needs --layout window") as err:
        sft.main(cfg)
    assert "\n" not in str(err.value)
    with pytest.raises(SettingError, match="prompt_loss_weight"):
        SFTConfig(prompt_loss_weight=-1.0)


def test_the_cold_start_plays_its_expert_on_its_own_split(tmp_path, capsys):
    # an RL run on one pool of tasks (here: valid) takes its cold start from another split (train)
    from agentgym.train.base.errors import ConfigError
    from agentgym.train.base.records import read_record
    from agentgym.train.coldstart.sft import run_sft

    kw = dict(model="tiny", env_kwargs=TOOLQA_SMALL, num_episodes=4, num_steps=1, batch_size=2, seed=0,
              progress=False, quiet=True, tensorboard=False, split="valid")
    final = run_sft(build(SFTRunConfig, **kw, expert_split="train", output_dir=str(tmp_path / "sft")))
    record = read_record(final)
    env = gym.make("ToolQA-v0", **json.loads(TOOLQA_SMALL))
    assert record["split"] == "train" and set(record["task_ids"]) <= set(env.unwrapped.task_ids("train"))
    assert not set(record["task_ids"]) & set(env.unwrapped.task_ids("valid"))
    with pytest.raises(ConfigError, match="--expert-split"):
        build(SFTRunConfig, **kw, expert_split="nope").validate()
