"""``OpenAIPolicy``: any OpenAI-compatible chat-completions server (``vllm serve``, TGI, SGLang...).

Plain ``urllib`` with a timeout and retries with exponential backoff on connection errors, 429 and
5xx answers; no client library needed. Meant for evaluation: the server samples, so there is no
gradient, and token ids are only known when the server reports them.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from typing import Sequence

from agentgym.agents.base import ChatHistory, Completion, Policy, Prompt, SamplingConfig, is_token_prompt

RETRY_STATUS = {408, 409, 429, 500, 502, 503, 504}


class OpenAIRequestError(RuntimeError):
    """The server answered with an error, or could not be reached after every retry."""


class OpenAIPolicy(Policy):
    """Sample from an OpenAI-compatible ``/v1/chat/completions`` endpoint.

    Args:
        base_url: server root, e.g. ``http://127.0.0.1:8000/v1``.
        model: the model name the server knows.
        api_key: sent as a bearer token when given.
        sampling: default :class:`SamplingConfig`.
        timeout: seconds per request.
        max_retries: retries after the first attempt, on connection errors, timeouts, 429 and 5xx.
        backoff: first retry delay in seconds, doubled each retry.
        concurrency: requests in flight at once for a batch.
        stop: extra stop strings.
    """

    def __init__(self, base_url: str, model: str, api_key: str | None = None,
                 sampling: SamplingConfig | None = None, timeout: float = 60.0, max_retries: int = 3,
                 backoff: float = 0.5, concurrency: int = 8, stop: Sequence[str] | None = None):
        if max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {max_retries}")
        if timeout <= 0:
            raise ValueError(f"timeout must be positive, got {timeout}")
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model = model
        self.api_key = api_key
        self.sampling = sampling or SamplingConfig()
        self.timeout = float(timeout)
        self.max_retries = int(max_retries)
        self.backoff = float(backoff)
        self.concurrency = max(1, int(concurrency))
        self.stop = list(stop or [])

    def generate(self, prompts: Sequence[Prompt], sampling: SamplingConfig | None = None) -> list[Completion]:
        sampling = sampling or self.sampling
        for p in prompts:
            if is_token_prompt(p):
                raise TypeError("OpenAIPolicy takes chat histories, not token ids")
        if len(prompts) <= 1 or self.concurrency == 1:
            return [self._complete(p, sampling) for p in prompts]
        with ThreadPoolExecutor(min(self.concurrency, len(prompts))) as pool:
            return list(pool.map(lambda p: self._complete(p, sampling), prompts))

    def _payload(self, messages: ChatHistory, sampling: SamplingConfig) -> dict:
        body = {"model": self.model, "messages": list(messages), "max_tokens": sampling.max_new_tokens,
                "temperature": sampling.temperature, "top_p": sampling.top_p, "logprobs": True, "n": 1}
        if sampling.top_k:
            body["top_k"] = sampling.top_k  # an extension most open servers accept
        if self.stop:
            body["stop"] = self.stop
        return body

    def _complete(self, messages: ChatHistory, sampling: SamplingConfig) -> Completion:
        data = json.dumps(self._payload(messages, sampling)).encode("utf-8")
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        last_error = "no attempt made"
        for attempt in range(self.max_retries + 1):
            if attempt:
                time.sleep(self.backoff * 2 ** (attempt - 1))
            request = urllib.request.Request(self.url, data=data, headers=headers, method="POST")
            try:
                with urllib.request.urlopen(request, timeout=self.timeout) as response:
                    return self._parse(json.loads(response.read().decode("utf-8")))
            except urllib.error.HTTPError as e:
                detail = e.read().decode("utf-8", "replace")[:500]
                last_error = f"HTTP {e.code} from {self.url}: {detail}"
                if e.code not in RETRY_STATUS:
                    raise OpenAIRequestError(last_error) from None
            except (urllib.error.URLError, TimeoutError, ConnectionError, OSError) as e:
                last_error = f"cannot reach {self.url}: {getattr(e, 'reason', e)}"
            except ValueError as e:  # the body was not JSON
                last_error = f"bad response from {self.url}: {e}"
        raise OpenAIRequestError(f"{last_error} (after {self.max_retries + 1} attempts)")

    @staticmethod
    def _parse(body: dict) -> Completion:
        try:
            choice = body["choices"][0]
            text = choice["message"].get("content") or ""
        except (KeyError, IndexError, TypeError, AttributeError):
            raise OpenAIRequestError(f"response has no choices[0].message: {str(body)[:300]}") from None
        logprobs = []
        content = (choice.get("logprobs") or {}).get("content") or []
        for item in content:
            if isinstance(item, dict) and "logprob" in item:
                logprobs.append(float(item["logprob"]))
        token_ids = choice.get("token_ids") or []  # vLLM reports them when asked; most servers do not
        finish = choice.get("finish_reason") or "stop"
        return Completion(text=text, token_ids=[int(t) for t in token_ids], logprobs=logprobs,
                          finish_reason="length" if finish == "length" else "stop")
