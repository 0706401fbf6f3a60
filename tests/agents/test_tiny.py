import json
import subprocess
import sys

import pytest
from transformers import AutoModelForCausalLM, AutoTokenizer

from agentgym.agents.tiny import TinyConfig, build_tiny_model


def test_tiny_model_loads_like_a_user_checkpoint(tiny_path):
    model = AutoModelForCausalLM.from_pretrained(tiny_path)
    tok = AutoTokenizer.from_pretrained(tiny_path)
    assert model.config.model_type == "qwen2"
    assert model.config.vocab_size == len(tok)
    assert tok.eos_token == "<|im_end|>" and tok.pad_token == "<|endoftext|>"
    text = tok.apply_chat_template([{"role": "system", "content": "s"}, {"role": "user", "content": "hi"}],
                                   tokenize=False, add_generation_prompt=True)
    assert text == "<|im_start|>system\ns<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
    # byte-level BPE: any text round-trips, and special tokens are single ids
    sample = 'héllo 中文 <tool_call>{"name": "search"}</tool_call>\n\t'
    assert tok.decode(tok(sample, add_special_tokens=False)["input_ids"]) == sample
    assert len(tok("<|im_end|>", add_special_tokens=False)["input_ids"]) == 1


def test_build_is_cached_and_llama_arch_works(tmp_path):
    cfg = TinyConfig(arch="llama", hidden_size=32, num_layers=1, num_heads=2, num_kv_heads=1,
                     intermediate_size=64, vocab_size=400)
    a = build_tiny_model(("NoSuchEnv-v0",), cfg, cache_dir=tmp_path)
    mtime = (a / "config.json").stat().st_mtime_ns
    b = build_tiny_model(("NoSuchEnv-v0",), cfg, cache_dir=tmp_path)
    assert a == b and (b / "config.json").stat().st_mtime_ns == mtime
    assert json.loads((a / "config.json").read_text())["model_type"] == "llama"
    AutoModelForCausalLM.from_pretrained(a)


@pytest.mark.multiproc
def test_console_entry_prints_the_path(tmp_path):
    out = subprocess.run([sys.executable, "-m", "agentgym.agents.tiny", "--env-id", "ToolQA-v0",
                          "--cache-dir", str(tmp_path)], capture_output=True, text=True, check=True)
    path = out.stdout.strip().splitlines()[-1]
    assert (tmp_path in __import__("pathlib").Path(path).parents)
    # an env id that is not registered builds nothing: one line, not a model of no env's text
    bad = subprocess.run([sys.executable, "-m", "agentgym.agents.tiny", "--env-id", "NoSuchEnv-v0",
                          "--cache-dir", str(tmp_path / "other")], capture_output=True, text=True)
    assert bad.returncode != 0 and "NoSuchEnv-v0" in bad.stderr and "Traceback" not in bad.stderr
    assert not (tmp_path / "other").exists() or not any((tmp_path / "other").iterdir())


def test_importing_the_builder_loads_only_it_and_the_env_registration():
    # `import agentgym` must register the env ids (so gym.make works after it); everything else the
    # package holds (env code, vector envs, policies, the trainer core, torch) stays unloaded.
    code = ("import sys, json, agentgym.agents.tiny; from gymnasium.envs.registration import registry; "
            "print(json.dumps([sorted(m for m in sys.modules if m.split('.')[0] in "
            "('agentgym', 'torch', 'transformers', 'tokenizers')), 'ToolQA-v0' in registry]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded, registered = json.loads(out.stdout)
    assert loaded == ["agentgym", "agentgym.agents", "agentgym.agents.base", "agentgym.agents.tiny", "agentgym.envs",
                      "agentgym.envs.scienceworld", "agentgym.envs.scienceworld.tasks", "agentgym.settings"]
    assert registered


def test_the_package_api_is_there_when_used():
    code = ("import agentgym, agentgym.agents as a; from agentgym import *; "
            "print(make_vec.__module__, agentgym.AgentEnv.__module__, agentgym.vector.AgentVectorEnv.__name__, "
            "PRSTracker.__module__, a.HFPolicy.__module__, a.OpenAIPolicy.__module__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["agentgym.vector.make", "agentgym.envs.base", "AgentVectorEnv",
                                  "agentgym.rewards.prs", "agentgym.agents.hf", "agentgym.agents.openai_compat"]


@pytest.mark.slow
def test_a_run_with_observation_options_gets_a_tokenizer_that_has_read_them(tmp_path, monkeypatch):
    """An ALFWorld run with numbered, marked, history-carrying observations builds its tiny model's
    tokenizer from episodes played that way (the wrapper's words become tokens); a run without
    those options (ToolQA's preset) builds the very model it always did."""
    pytest.importorskip("alfworld")
    from agentgym.agents.tiny import resolve_model_path, view_kwargs

    monkeypatch.setenv("AGENTGYM_CACHE", str(tmp_path))
    view = {"observation": "history+admissible", "history": 1, "action_format": "choice", "mark_played": True}
    plain = build_tiny_model(("ALFWorld-v0",), "tiny", episodes_per_env=2)
    shown = build_tiny_model(("ALFWorld-v0",), "tiny", episodes_per_env=2, views={"ALFWorld-v0": view})
    assert plain != shown
    assert json.loads((shown / "agentgym_tiny.json").read_text())["views"] == {"ALFWorld-v0": view}
    words = "Admissible actions:\n3. go to cabinet 1 (done)"
    count = {p: len(AutoTokenizer.from_pretrained(p)(words)["input_ids"]) for p in (plain, shown)}
    assert count[shown] < count[plain], count
    assert view_kwargs({**view, "max_turns": 10, "data_path": "generated"}) == view
    toolqa = {"question_kinds": ["single_hop"], "max_turns": 2, "action_format": "tags", "top_k": 1}
    assert view_kwargs(toolqa) == {}
    assert resolve_model_path("tiny", ("NoSuchEnv-v0",), toolqa) == resolve_model_path("tiny", ("NoSuchEnv-v0",))


# The tiny models' chat template before it rendered tool calls: what every trainer's prompt was.
PLAIN_CHATML = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)


def _expert_episode_messages(env_id, seed, **kwargs):
    """The prompt of a real expert episode's last turn, as the trainers lay it out
    (agentgym.episode_to_messages): system prompt, then observations and actions."""
    import gymnasium as gym

    from agentgym import episode_to_messages

    env = gym.make(env_id, expert=True, **kwargs)
    obs, info = env.reset(seed=seed)
    system, observations, actions = info["system_prompt"], [obs], []
    for _ in range(6):
        action = info["expert_action"]
        obs, _, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            break
        actions.append(action)
        observations.append(obs)
    env.close()
    return episode_to_messages(system, observations, actions)


def test_the_tool_calling_template_renders_the_trainers_prompts_exactly_as_plain_chatml(tiny_path):
    import gymnasium as gym

    import agentgym  # noqa: F401  registers the envs

    tok = AutoTokenizer.from_pretrained(tiny_path)
    plain = AutoTokenizer.from_pretrained(tiny_path)
    plain.chat_template = PLAIN_CHATML
    tools = gym.make("ToolQA-v0").unwrapped.tools
    conversations = [_expert_episode_messages("ToolQA-v0", seed) for seed in range(3)]
    conversations.append([{"role": "system", "content": "{{ not a tag }} {% raw %} <|im_end|> 中文 \n\t"},
                          {"role": "user", "content": ""}, {"role": "assistant", "content": "<tool_call>{}</tool_call>"},
                          {"role": "user", "content": "<tool_response>\nx\n</tool_response>"}])
    assert any(m["content"].startswith("<tool_response>") for m in conversations[0])  # tool turns are in there
    for messages in conversations:
        for generation in (True, False):
            before = plain.apply_chat_template(messages, tokenize=False, add_generation_prompt=generation)
            assert tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=generation) == before
            # tools= lists nothing more: the env's system prompt lists the tools, once
            assert tok.apply_chat_template(messages, tools=tools, tokenize=False,
                                           add_generation_prompt=generation) == before
    # and the ids the trainers sample from are the same
    from agentgym.agents.hf import render_prompt_ids

    assert render_prompt_ids(tok, conversations[0]) == render_prompt_ids(plain, conversations[0])


def test_tool_calls_and_results_render_in_the_envs_own_syntax(tiny_path):
    tok = AutoTokenizer.from_pretrained(tiny_path)
    call = {"name": "search", "arguments": {"query": "Zuces Works 中"}}
    messages = [{"role": "system", "content": "s"}, {"role": "user", "content": "Question: q"},
                {"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": call}]},
                {"role": "tool", "name": "search", "content": "[1] hit"},
                {"role": "assistant", "content": None,
                 "tool_calls": [{"type": "function", "function": {**call, "arguments": '{"query": "x"}'}}]},
                {"role": "tool", "name": "search", "content": "a"}, {"role": "tool", "name": "open", "content": "b"}]
    assert tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True) == (
        "<|im_start|>system\ns<|im_end|>\n<|im_start|>user\nQuestion: q<|im_end|>\n"
        '<|im_start|>assistant\n<tool_call>{"name": "search", "arguments": {"query": "Zuces Works 中"}}</tool_call>'
        "<|im_end|>\n<|im_start|>user\n<tool_response>\n[1] hit\n</tool_response><|im_end|>\n"
        '<|im_start|>assistant\n<tool_call>{"name": "search", "arguments": {"query": "x"}}</tool_call><|im_end|>\n'
        "<|im_start|>user\n<tool_response>\na\n</tool_response>\n<tool_response>\nb\n</tool_response><|im_end|>\n"
        "<|im_start|>assistant\n")
    # a reply parses back into the message it was rendered from
    prefix = tok.apply_chat_template(messages[:2], tokenize=False, add_generation_prompt=True)
    reply = '<tool_call>{"name": "search", "arguments": {"query": "Zuces Works 中"}}</tool_call><|im_end|>'
    assert tok.parse_response(tok(reply, add_special_tokens=False)["input_ids"], prefix=prefix) == {
        "role": "assistant", "tool_calls": [{"type": "function", "function": call}]}
    assert tok.parse_response("<answer>aerospace</answer><|im_end|>", prefix=prefix) == {
        "role": "assistant", "content": "<answer>aerospace</answer>"}
