"""The TRL environment_factory: tools from the env's schema, TRL's own parsing reaching the env, a
real GRPOTrainer run training the tiny model on ToolQA-v0, and the pickling AsyncGRPOTrainer needs."""

import json
import multiprocessing
import os
import pickle

import gymnasium as gym
import pytest

pytest.importorskip("trl")
pytest.importorskip("datasets")
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

import agentgym  # noqa: E402,F401
from agentgym.integrations.trl import EnvironmentFactory, environment_class, prs_reward  # noqa: E402

TOOLQA = {"question_kinds": ["single_hop"], "max_turns": 3, "system_prompt": "Search, then answer."}


def tiny_tokenizer(path):
    """The tiny model's own tokenizer: its chat template renders tool calls and its response
    template parses them, as TRL requires."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(path)


@pytest.mark.slow  # importing TRL's parser takes seconds
def test_tools_are_the_env_schema_and_a_call_parsed_by_trl_is_one_env_step(tiny_path):
    from transformers.utils import get_json_schema
    from trl.chat_template_utils import is_chat_template_prefix_preserving, parse_response, supports_tool_calling

    factory = EnvironmentFactory("ToolQA-v0", {**TOOLQA, "expert": True})
    env = factory()
    probe = gym.make("ToolQA-v0", **TOOLQA)
    schemas = {t["function"]["name"]: t["function"] for t in probe.unwrapped.tools}
    assert env._tool_names == ("search", "open", "calculate")
    for name, schema in schemas.items():  # what transformers renders into the prompt is the env's schema
        rendered = get_json_schema(getattr(env, name))["function"]
        assert rendered["name"] == name and rendered["description"] == schema["description"]
        assert rendered["parameters"]["required"] == schema["parameters"]["required"]
        for arg, spec in schema["parameters"]["properties"].items():
            assert rendered["parameters"]["properties"][arg]["type"] == spec["type"]
            assert rendered["parameters"]["properties"][arg]["description"] == spec["description"]

    # the expert's call as the env's syntax writes it, parsed by TRL, then called the way TRL calls tools
    tokenizer = tiny_tokenizer(tiny_path)
    assert supports_tool_calling(tokenizer) and is_chat_template_prefix_preserving(tokenizer)
    prompt = env.reset(task_id=factory.dataset("train", limit=1)[0]["task_id"])
    assert prompt.startswith("Search, then answer.\n\nQuestion:")  # no system turn in the row: the env's prompt leads
    expert_call = json.loads(env._info["expert_action"][len("<tool_call>"):-len("</tool_call>")])
    ids = tokenizer(f"{env._info['expert_action']}<|im_end|>", add_special_tokens=False)["input_ids"]
    prefix = tokenizer.apply_chat_template([{"role": "user", "content": prompt}], tokenize=True,
                                           add_generation_prompt=True)
    prefix = prefix["input_ids"] if isinstance(prefix, dict) else prefix
    call = parse_response(tokenizer, ids, prefix=prefix)["tool_calls"][0]["function"]
    assert call == expert_call
    result = getattr(env, call["name"])(**call["arguments"])
    assert result.startswith("[1] (") and "<tool_response>" not in result
    assert env._info["reward_terms"] == {"format": 1.0, "tool": 1.0} and env._turns == 1

    # the model's last message is its last action; the reward is the env's PRS return
    answer = env._info["expert_action"]
    logged = {}
    rewards = prs_reward([[{"role": "assistant", "content": answer}]], environments=[env],
                         log_metric=lambda k, v: logged.__setitem__(k, v))
    assert rewards == [pytest.approx(1.0)] and env._info["success"] and env._done
    assert logged == {"prs/ended": 1.0, "prs/turns": 2.0, "prs/success": 1.0, "prs/format": 1.0, "prs/tool": 1.0,
                      "prs/answer": 1.0}
    with pytest.raises(RuntimeError, match="episode is over"):  # TRL reports it to the model as a failed call
        env.search(query="again")
    # a rollout that stopped on a tool call has not answered: it keeps the return so far
    env.reset(task_id="single-company-0013-industry")
    env.search(query="Zuces Works")
    assert prs_reward([[{"role": "assistant", "content": "", "tool_calls": [{}]}]], environments=[env]) == [
        pytest.approx(0.3)] and not env._done
    # arguments the schema does not know reach the env, which answers them as an invalid turn
    assert env.open(doc_id="x", page=2).startswith("Invalid output")


def test_embodied_envs_get_one_act_tool_and_tag_format_is_refused():
    from transformers.utils import get_json_schema

    cls = environment_class("ScienceWorld-v0")  # no engine starts until a reset
    assert cls._tool_names == ("act",)
    schema = get_json_schema(cls.act)["function"]
    assert list(schema["parameters"]["properties"]) == ["command"] and schema["parameters"]["required"] == ["command"]
    with pytest.raises(ValueError, match="action_format='json'"):
        EnvironmentFactory("ToolQA-v0", {"action_format": "tags"})
    with pytest.raises(ValueError, match="needs TRL's environments"):
        prs_reward([[{"role": "assistant", "content": "x"}]])


def _play_in_a_spawned_process(payload: bytes):
    """What AsyncGRPOTrainer's rollout worker does: unpickle the factory and reward in a fresh
    process, make an env, play a rollout and score it."""
    loaded = pickle.loads(payload)
    env = loaded["environment_factory"]()
    env.reset(task_id="single-company-0013-industry")
    env.search(query="Zuces Works")
    return loaded["reward_funcs"][0]([[{"role": "assistant", "content": "<answer>aerospace</answer>"}]],
                                     environments=[env])


@pytest.mark.multiproc
def test_the_factory_and_reward_pickle_and_play_in_a_spawned_process():
    factory = EnvironmentFactory("ToolQA-v0", TOOLQA, seed=3)
    factory()
    payload = pickle.dumps({"environment_factory": factory, "reward_funcs": [prs_reward]})
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        assert pool.apply(_play_in_a_spawned_process, (payload,)) == [pytest.approx(1.0)]


def format_rate(model, tokenizer, prompts, samples=8):
    """The fraction of replies sampled as GRPO samples them (temperature 1) that are exactly
    '<answer>works</answer>', over the first four prompts."""
    import torch

    hits = total = 0
    with torch.no_grad():
        for ids in prompts[:4]:
            out = model.generate(input_ids=torch.tensor([ids] * samples), attention_mask=torch.ones(samples, len(ids),
                                 dtype=torch.long), do_sample=True, temperature=1.0, top_k=0, top_p=1.0,
                                 max_new_tokens=12, pad_token_id=tokenizer.pad_token_id)
            replies = tokenizer.batch_decode(out[:, len(ids):], skip_special_tokens=True)
            hits += sum(r.strip() == "<answer>works</answer>" for r in replies)
            total += samples
    return hits / total


def format_warm_up(model, tokenizer, rows, prompts, max_steps=200, check_every=5):
    """Supervised steps on '<answer>works</answer>' after TRL's own rendering of each prompt, until
    the random tiny model writes it in some sampled replies and not in others (a quarter to three
    quarters of them): GRPO then sees rewards that differ within a group (a random model's are all 0,
    a model taught to the end writes the tags every time). Checked as it goes rather than a fixed
    number of steps, since how fast a 1M-parameter model learns it moves with the machine's numerics."""
    import torch

    target = tokenizer("<answer>works</answer><|im_end|>", add_special_tokens=False)["input_ids"]
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    generator = torch.Generator().manual_seed(0)
    for step in range(1, max_steps + 1):
        for i in torch.randperm(len(prompts), generator=generator)[:2].tolist():
            ids = torch.tensor([prompts[i] + target])
            labels = torch.tensor([[-100] * len(prompts[i]) + target])
            (model(input_ids=ids, labels=labels).loss / 2).backward()
        optimizer.step()
        optimizer.zero_grad()
        if step % check_every == 0 and 0.25 <= format_rate(model, tokenizer, prompts) <= 0.75:
            return step
    raise AssertionError(f"after {max_steps} warm-up steps the format rate is {format_rate(model, tokenizer, prompts)}")


@pytest.mark.learning
def test_grpo_trainer_trains_the_tiny_model_on_toolqa_through_the_factory(tiny_path, tmp_path, one_cpu_thread):
    import torch
    from transformers import AutoModelForCausalLM
    from trl import GRPOConfig, GRPOTrainer

    torch.manual_seed(0)
    tokenizer = tiny_tokenizer(tiny_path)
    model = AutoModelForCausalLM.from_pretrained(tiny_path)
    factory = EnvironmentFactory("ToolQA-v0", TOOLQA)
    dataset = factory.dataset("train", limit=8)
    probe = factory()
    tools = [getattr(probe, name) for name in probe._tool_names]
    prompts = [tokenizer.apply_chat_template([row["prompt"][0], {"role": "user", "content": probe.reset(**row)}],
                                             tools=tools, tokenize=False, add_generation_prompt=True)
               for row in dataset]
    format_warm_up(model, tokenizer, dataset, [tokenizer(p, add_special_tokens=False)["input_ids"] for p in prompts])
    before = {k: v.clone() for k, v in model.state_dict().items()}

    args = GRPOConfig(output_dir=str(tmp_path), max_steps=3, per_device_train_batch_size=4, num_generations=4,
                      max_completion_length=16, max_tool_calling_iterations=1, learning_rate=1e-3,
                      logging_steps=1, report_to="none", use_cpu=True, save_strategy="no", disable_tqdm=True,
                      seed=0)
    trainer = GRPOTrainer(model=model, reward_funcs=prs_reward, args=args, train_dataset=dataset,
                          processing_class=tokenizer, environment_factory=factory)
    trainer.train()

    logs = [h for h in trainer.state.log_history if "reward" in h]
    assert len(logs) == 3
    # every rollout was an episode of our env: reset, its last message played, its PRS return paid
    assert all(h["prs/turns"] >= 1.0 for h in logs) and all("prs/ended" in h for h in logs)
    assert all(env._turns >= 1 for env in trainer.environments)
    assert {env._info["task_id"] for env in trainer.environments} <= set(dataset["task_id"])
    # and the model trained on rewards that differed within a group
    assert any(h["reward_std"] > 0 for h in logs) and any(h["prs/format"] > 0 for h in logs if "prs/format" in h)
    assert any(not torch.equal(before[k], v) for k, v in model.state_dict().items())


DOC = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "integrations.md")


def _trl_section() -> str:
    text = open(DOC).read()
    start = text.index("## TRL: `environment_factory`")
    return text[start: text.index("\n## ", start + 1)]


@pytest.mark.learning
def test_the_docs_trl_example_runs_as_written_and_lists_the_tools_once(tmp_path, monkeypatch, one_cpu_thread):
    import re

    example = re.findall(r"```python\n(.*?)```", _trl_section(), re.S)[0]
    monkeypatch.chdir(tmp_path)  # it writes runs/trl
    namespace = {"__name__": "__docs__"}
    exec(compile(example, "docs/integrations.md TRL example", "exec"), namespace)
    trainer, envs = namespace["trainer"], namespace["envs"]
    assert trainer.state.global_step == 2
    assert all("prs/turns" in h for h in trainer.state.log_history if "reward" in h)
    # the prompt TRL renders for a row: the env's system prompt lists each tool once, and the
    # template (given TRL's tools=) adds no second list
    row = envs.dataset("train", limit=1)[0]
    env = envs()
    prompt = row["prompt"][:-1] + [{**row["prompt"][-1], "content": env.reset(**row)}]
    rendered = trainer.processing_class.apply_chat_template(prompt, tools=trainer.tools, tokenize=False,
                                                            add_generation_prompt=True)
    for tool in gym.make("ToolQA-v0").unwrapped.tools:
        assert rendered.count(tool["function"]["description"]) == 1, tool["function"]["name"]
    assert rendered.count("<|im_start|>system") == 1


def test_the_docs_name_where_async_grpo_trainer_is_imported_from():
    import re

    line = re.search(r"`(from trl\S* import [^`]*AsyncGRPOTrainer[^`]*)`", _trl_section()).group(1)
    namespace = {}
    exec(line, namespace)
    assert namespace["AsyncGRPOTrainer"].__name__ == "AsyncGRPOTrainer"
