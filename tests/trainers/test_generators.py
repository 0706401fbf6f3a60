"""``--generator``: rollouts sampled by an OpenAI-compatible server (a real local HTTP stub that
samples with the tiny model and reloads what the trainer saves) or by an in-process vLLM engine (a
stand-in module with vLLM's offline API), trained on the ids they sampled."""

import dataclasses
import importlib.machinery
import os
import subprocess
import sys
import time
import types
from types import SimpleNamespace

import pytest
import torch
from safetensors.torch import load_file
from trainer_helpers import small_config

from agentgym.agents import HFPolicy, OpenAIRequestError, SamplingConfig
from agentgym.train.base.errors import ConfigError
from agentgym.train.config.rollout import vllm_installed
from agentgym.train.hooks import TrainerExtension
from agentgym.train.loop import train
from agentgym.train.rollout.generators import GeneratorError, ServerGenerator

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


class Recorder(TrainerExtension):
    """Keeps every episode the trainer collected."""

    name = "recorder"

    def __init__(self):
        self.episodes, self.policy = [], None

    def after_rollout(self, ctx, episodes):
        self.episodes += episodes
        self.policy = ctx.policy
        return episodes


def serve_tiny_model(server):
    """Make the stub sample with the real tiny model, and load (really) what it is told to reload."""
    loaded = []

    def reload(path):
        for name in ("config.json", "model.safetensors", "tokenizer.json"):
            assert os.path.isfile(os.path.join(path, name)), f"{path} has no {name}"
        loaded.append((path, HFPolicy(path)))

    def sample(prompt_ids, body):
        policy = loaded[-1][1]
        policy.stop_token_ids = body.get("stop_token_ids") or policy.stop_token_ids
        sampling = SamplingConfig(max_new_tokens=body["max_tokens"], temperature=body["temperature"],
                                  top_p=body["top_p"])
        return policy.generate([prompt_ids], sampling)[0]

    server.on_reload, server.sample = reload, sample
    return loaded


def openai_config(tmp_path, server, **kw):
    return small_config(tmp_path, generator="openai", generator_url=server.url, num_epochs=1, num_minibatches=1,
                        generator_timeout=30.0, **kw)


def sampled_ids(episode):
    """The ids of a concat episode that carry loss: the model's own turns."""
    return [t for t, m in zip(episode.concat_ids, episode.concat_mask) if m]


@pytest.mark.network
@pytest.mark.learning
@pytest.mark.timeout(300)
def test_grpo_trains_on_the_servers_token_ids_and_reloads_it_every_step(tmp_path, chat_server, tiny_path):
    loaded = serve_tiny_model(chat_server)
    recorder = Recorder()
    result = train(openai_config(tmp_path, chat_server, num_steps=2, reload_every=1), [recorder])
    run = tmp_path / "run"

    # the server started from the run's weights, then loaded each step's, each load complete
    # (config, weights, tokenizer) and followed by a prefix-cache reset
    paths = [os.path.realpath(tiny_path), str((run / "generator" / "step_1").resolve()),
             str((run / "generator" / "step_2").resolve())]
    assert [p for p, _ in loaded] == paths
    expected = []
    for p in paths:
        expected += [("/collective_rpc", "update_config", p), ("/collective_rpc", "reload_weights", None),
                     ("/reset_prefix_cache", None, None)]
    assert [(path, body.get("method"), body["args"][0]["model_config"]["model"] if body.get("args") else None)
            for path, body in chat_server.rpcs] == expected
    assert sorted(os.listdir(run / "generator")) == ["step_2"]  # older ones are dropped once loaded
    served = loaded[-1][1].model.state_dict()
    final = load_file(str(run / "checkpoints" / "step_2" / "model.safetensors"))
    assert all(torch.equal(served[k], final[k]) for k in final)

    # every completion the trainer got is one the server sampled, and those ids are what it trains on
    turns = [t.completion for ep in recorder.episodes for t in ep.turns]
    assert turns and sorted(c.token_ids for c in turns) == sorted(chat_server.sampled)
    tokenizer = loaded[0][1].tokenizer
    for c in turns:
        assert tokenizer.decode(c.token_ids, skip_special_tokens=True) == c.text
    for ep in recorder.episodes:
        assert sampled_ids(ep) == [t for turn in ep.turns for t in turn.completion.token_ids]
    for path, _, body in chat_server.requests:
        if path == "/v1/completions":
            assert body["return_token_ids"] and body["return_tokens_as_token_ids"] and body["logprobs"] == 0
            assert body["model"] == chat_server.model_name  # from GET /v1/models
    assert [row["generator/reloaded"] for row in result.history] == [1.0, 1.0]
    assert [row["generator/retokenized"] for row in result.history] == [0.0, 0.0]


@pytest.mark.network
@pytest.mark.learning
@pytest.mark.timeout(300)
def test_a_server_that_reports_no_ids_gets_its_text_retokenized_and_logged(tmp_path, chat_server, capfd):
    loaded = serve_tiny_model(chat_server)
    chat_server.report_token_ids = False
    recorder = Recorder()
    result = train(openai_config(tmp_path, chat_server, num_steps=1), [recorder])
    turns = [t.completion for ep in recorder.episodes for t in ep.turns]
    assert result.history[0]["generator/retokenized"] == len(turns) > 0
    tokenizer = loaded[0][1].tokenizer
    for ep in recorder.episodes:
        for t in ep.turns:
            c = t.completion
            stop = [tokenizer.eos_token_id] if c.finish_reason == "stop" else []
            assert c.token_ids == tokenizer(c.text, add_special_tokens=False)["input_ids"] + stop
        assert sampled_ids(ep) == [t for turn in ep.turns for t in turn.completion.token_ids]
    assert "reported no token ids" in capfd.readouterr().err


@pytest.mark.network
@pytest.mark.timeout(120)
def test_a_server_that_never_answers_is_a_clear_error_within_the_timeout(tmp_path, chat_server):
    serve_tiny_model(chat_server)
    chat_server.hang = {"/v1/completions"}
    config = openai_config(tmp_path, chat_server, num_steps=1)
    config.rollout.generator_timeout, config.rollout.generator_retries = 1.0, 1
    t = time.perf_counter()
    with pytest.raises(OpenAIRequestError, match=r"no answer from http://127\.0\.0\.1:\d+/v1/completions within 1s "
                                                 r"\(after 2 attempts\)"):
        train(config)
    assert time.perf_counter() - t < 60


def test_a_dead_server_or_one_without_dev_endpoints_is_a_clear_error(tmp_path, chat_server, tiny_path):
    sampling = SamplingConfig(max_new_tokens=4)
    with pytest.raises(GeneratorError, match=r"--generator-url http://127\.0\.0\.1:9/v1: cannot reach"):
        ServerGenerator("http://127.0.0.1:9/v1", None, None, sampling, [2], tiny_path, timeout=2, retries=0)
    chat_server.dev_mode = False
    with pytest.raises(GeneratorError, match="could not load .*HTTP 404.*VLLM_SERVER_DEV_MODE=1.*--reload-every 0"):
        ServerGenerator(chat_server.url, None, None, sampling, [2], tiny_path, timeout=5, retries=0)
    ServerGenerator(chat_server.url, None, None, sampling, [2], tiny_path, timeout=5, reload_every=0)  # no reload


def test_reloads_come_every_n_steps_and_on_evaluation_and_last_steps(chat_server, tiny_path):
    gen = ServerGenerator(chat_server.url, "m", None, SamplingConfig(), [2], tiny_path, reload_every=3, num_steps=8,
                          eval_every=4)
    assert [s for s in range(1, 9) if gen.reload_due(s)] == [3, 4, 6, 8]
    assert len(chat_server.rpcs) == 3  # the start: update_config, reload_weights, reset_prefix_cache


def test_openai_generator_flags_are_checked_at_parse_time(tmp_path):
    with pytest.raises(ConfigError, match="--generator openai needs --generator-url"):
        small_config(tmp_path, generator="openai").validate()
    with pytest.raises(ConfigError, match="--reload-every must be >= 0"):
        small_config(tmp_path, generator="openai", generator_url="http://x/v1", reload_every=-1).validate()


def test_generator_vllm_without_vllm_is_a_one_line_error_with_exit_status_2():
    if vllm_installed():
        pytest.skip("vLLM is installed here")
    env = {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")}
    got = subprocess.run([sys.executable, "trainers/grpo.py", "--generator", "vllm"], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=120)
    assert got.returncode == 2
    assert got.stderr.strip().splitlines() == [
        ("error: --generator vllm needs vLLM, which is not installed here: `pip install 'agentgym[vllm]'` on a "
         "CUDA machine, or use --generator hf or --generator openai")]
    assert "vllm" not in sys.modules


def fake_vllm(calls):
    """A stand-in ``vllm`` module with the offline API VLLMPolicy uses, sampling with HFPolicy."""
    module = types.ModuleType("vllm")
    module.__spec__ = importlib.machinery.ModuleSpec("vllm", None)

    @dataclasses.dataclass
    class EngineArgs:
        model: str = ""
        enable_sleep_mode: bool = False
        logprobs_mode: str = "raw_logprobs"

    class SamplingParams:
        def __init__(self, **kw):
            self.__dict__.update(kw)

    class LLM:
        def __init__(self, model, **kw):
            calls.append(("LLM", kw))
            self.hf = HFPolicy(model)

        def generate(self, requests, params, use_tqdm=True):
            outs = []
            for request in requests:
                self.hf.stop_token_ids = params.stop_token_ids
                c = self.hf.generate([request["prompt_token_ids"]], SamplingConfig(
                    max_new_tokens=params.max_tokens, temperature=params.temperature, top_p=params.top_p))[0]
                logprobs = [{t: SimpleNamespace(logprob=lp)} for t, lp in zip(c.token_ids, c.logprobs)]
                outs.append(SimpleNamespace(outputs=[SimpleNamespace(token_ids=c.token_ids, text=c.text,
                                                                     logprobs=logprobs,
                                                                     finish_reason=c.finish_reason)]))
            return outs

        def apply_model(self, fn):
            calls.append(("apply_model",))
            return fn(self)

        def load_weights(self, weights):  # what the engine's model does with the trainer's tensors
            self.hf.model.load_state_dict(dict(weights))

        def reset_prefix_cache(self):
            calls.append(("reset_prefix_cache",))

        def sleep(self, level=1):
            calls.append(("sleep", level))

        def wake_up(self, tags=None):
            calls.append(("wake_up", tags))

    module.EngineArgs, module.SamplingParams, module.LLM = EngineArgs, SamplingParams, LLM
    return module


@pytest.mark.learning
@pytest.mark.timeout(300)
def test_vllm_generator_sleeps_through_each_update_and_gets_the_new_weights(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setitem(sys.modules, "vllm", fake_vllm(calls))
    monkeypatch.delenv("VLLM_ENABLE_V1_MULTIPROCESSING", raising=False)
    recorder = Recorder()
    result = train(small_config(tmp_path, generator="vllm", num_steps=2, num_epochs=1, num_minibatches=1), [recorder])
    assert os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] == "0"
    (name, kwargs), *rest = calls
    assert name == "LLM" and kwargs["enable_sleep_mode"] and kwargs["gpu_memory_utilization"] == 0.3
    assert kwargs["logprobs_mode"] == "processed_logprobs"
    step = [("sleep", 1), ("wake_up", ["weights"]), ("apply_model",), ("reset_prefix_cache",),
            ("wake_up", ["kv_cache"])]
    assert rest == step + step
    engine = recorder.policy.llm.hf.model.state_dict()  # the engine holds the trained weights
    final = load_file(str(tmp_path / "run" / "checkpoints" / "step_2" / "model.safetensors"))
    assert all(torch.equal(engine[k], final[k]) for k in final)
    for ep in recorder.episodes:
        assert sampled_ids(ep) == [t for turn in ep.turns for t in turn.completion.token_ids]
    assert all(row["time/generator_sync"] >= 0 for row in result.history)


@pytest.mark.network
@pytest.mark.learning
@pytest.mark.timeout(300)
def test_an_async_run_has_the_server_load_each_version_before_the_batch_it_plays(tmp_path, chat_server, tiny_path):
    loaded = serve_tiny_model(chat_server)
    recorder = Recorder()
    result = train(openai_config(tmp_path, chat_server, num_steps=3, reload_every=1, save_every=0, async_steps=1),
                   [recorder])
    run = tmp_path / "run"
    # batches 0 and 1 are played with the run's weights, batch 2 with those after one update; the
    # weights after two and three updates play nothing, so they are never saved for the server
    assert [p for p, _ in loaded] == [os.path.realpath(tiny_path), str((run / "generator" / "step_1").resolve())]
    assert [row["async/version_lag"] for row in result.history] == [0.0, 1.0, 1.0]
    assert [row["generator/reloaded"] for row in result.history] == [0.0, 0.0, 1.0]
    turns = [t.completion for ep in recorder.episodes for t in ep.turns]
    assert turns and sorted(c.token_ids for c in turns) == sorted(chat_server.sampled)
    # the server reported each token's logprob, and the ratio is taken against them
    assert all(row["async/samples_without_behaviour_logprobs"] == 0 for row in result.history
               if not row["update/skipped"])
