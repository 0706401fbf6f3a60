import subprocess
import sys

import pytest
import torch

from agentgym.agents import HFPolicy, OpenAIPolicy, OpenAIRequestError, SamplingConfig


def test_hf_policy_batch_of_histories(tiny_path):
    torch.manual_seed(0)
    policy = HFPolicy(tiny_path, sampling=SamplingConfig(max_new_tokens=8))
    histories = [[{"role": "user", "content": "hello"}],
                 [{"role": "system", "content": "be brief"}, {"role": "user", "content": "a much longer question"}]]
    out = policy.generate(histories)
    assert len(out) == 2
    for c in out:
        assert 1 <= len(c.token_ids) <= 8 and len(c.logprobs) == len(c.token_ids)
        assert all(lp <= 0 for lp in c.logprobs)
        assert c.text == policy.tokenizer.decode(c.token_ids, skip_special_tokens=True)
        assert c.finish_reason in ("stop", "length")
    # token-id prompts give the same prompt as the rendered history
    assert out[0].prompt_ids == policy.prompt_ids(histories[0])


def test_hf_policy_greedy_is_deterministic_and_batch_independent(tiny_path):
    policy = HFPolicy(tiny_path, sampling=SamplingConfig(max_new_tokens=6, temperature=0))
    h = [{"role": "user", "content": "hello"}]
    alone = policy.generate([h])[0]
    batched = policy.generate([[{"role": "user", "content": "something else entirely, longer"}], h])[1]
    assert alone.token_ids == batched.token_ids


def test_importing_agents_does_not_import_vllm_and_asking_for_it_is_clear():
    code = ("import sys, agentgym.agents as a; assert 'vllm' not in sys.modules\n"
            "try:\n    a.VLLMPolicy('x')\nexcept ImportError as e:\n    print('ERR', e)\n"
            "assert 'vllm' not in sys.modules or sys.modules['vllm'] is None")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if "ERR" not in out.stdout:
        pytest.skip("vllm is installed here")
    assert "pip install 'agentgym[vllm]'" in out.stdout


def test_openai_policy_against_a_local_server(chat_server):
    policy = OpenAIPolicy(chat_server.url, "my-model", api_key="k", sampling=SamplingConfig(max_new_tokens=5, temperature=0))
    out = policy.generate([[{"role": "user", "content": "q1"}], [{"role": "user", "content": "q2"}]])
    assert [c.text for c in out] == ["<answer>q1</answer>", "<answer>q2</answer>"]
    assert out[0].logprobs == [-0.5, -1.0] and out[0].token_ids == []
    path, auth, body = chat_server.requests[0]
    assert path == "/v1/chat/completions" and auth == "Bearer k"
    assert body["model"] == "my-model" and body["max_tokens"] == 5 and body["temperature"] == 0
    assert policy.act([{"role": "user", "content": "z"}]) == "<answer>z</answer>"


def test_openai_policy_retries_then_succeeds(chat_server):
    chat_server.replies = [503, 503]
    policy = OpenAIPolicy(chat_server.url, "m", max_retries=2, backoff=0.01)
    assert policy.act([{"role": "user", "content": "q"}]) == "<answer>q</answer>"
    assert len(chat_server.requests) == 3


def test_openai_policy_gives_up_with_a_clear_error(chat_server):
    chat_server.replies = [503] * 5
    with pytest.raises(OpenAIRequestError, match="503.*after 2 attempts"):
        OpenAIPolicy(chat_server.url, "m", max_retries=1, backoff=0.01).act([{"role": "user", "content": "q"}])
    with pytest.raises(OpenAIRequestError, match="cannot reach"):
        OpenAIPolicy("http://127.0.0.1:9/v1", "m", max_retries=0, timeout=2).act([{"role": "user", "content": "q"}])
    with pytest.raises(TypeError):
        OpenAIPolicy(chat_server.url, "m").generate([[1, 2, 3]])
