"""``OpenAIPolicy``: any OpenAI-compatible server (``vllm serve``, TGI, SGLang...).

Plain HTTP (:mod:`agentgym.http_request`: each request bounded in total by ``timeout``, however
slowly the server sends) with retries and exponential backoff on connection errors, 429 and 5xx
answers; no client library needed. Chat histories go to ``/v1/chat/completions`` (the server
renders its chat template); prompts given as token ids go to ``/v1/completions`` with the ids as
the prompt, so the server samples from exactly the tokens a trainer will train on.

With ``token_ids=True`` the policy also asks for the sampled token ids in vLLM's documented
request fields (``return_token_ids``, and ``return_tokens_as_token_ids`` with logprobs, which writes
each token as ``"token_id:123"``); other servers may reject those fields. When the server still
reports no ids for a token-id prompt and a tokenizer was given, the text is re-tokenized (the
end-of-turn token appended when the model stopped) and counted in :attr:`OpenAIPolicy.retokenized`.
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any

from agentgym import http_request
from agentgym.agents.base import (
    ChatHistory,
    Completion,
    Policy,
    Prompt,
    SamplingConfig,
    is_token_prompt,
    refuse_allowed,
)


class OpenAIRequestError(RuntimeError):
    """The server answered with an error, or could not be reached after every retry."""


MAX_RESPONSE_BYTES = 64 * 1024 * 1024
"""The longest answer body accepted: a long completion with its logprobs is a few MB."""


def _json_body(data: bytes) -> dict | None:
    text = data.decode("utf-8")
    return json.loads(text) if text.strip() else None


def request_json(url: str, body: dict | None = None, *, timeout: float, max_retries: int = 0, backoff: float = 0.5,
                 api_key: str | None = None, max_bytes: int = MAX_RESPONSE_BYTES) -> dict | None:
    """POST ``body`` as JSON (GET when ``body`` is None) and return the JSON answer (None for an
    empty one). Each attempt gets ``timeout`` seconds in all, however slowly the server sends
    (:mod:`agentgym.http_request`); connection errors, timeouts, bodies that are not JSON, 429 and
    5xx answers are retried ``max_retries`` times with exponential backoff, then raise
    :class:`OpenAIRequestError`, as does any other HTTP error at once. The whole call takes at most
    :func:`~agentgym.http_request.longest_call_s` seconds."""
    data = None if body is None else json.dumps(body).encode("utf-8")
    headers = {"Content-Type": "application/json", "Accept": "application/json"} if data is not None else {}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    try:
        return http_request.request(url, data, headers=headers, timeout=timeout, retries=max_retries,
                                    backoff=backoff, max_bytes=max_bytes, parse=_json_body)
    except http_request.RequestFailed as e:
        raise OpenAIRequestError(str(e)) from None


def _token_id(token) -> int | None:
    """The id in vLLM's ``"token_id:123"`` spelling of a token (``return_tokens_as_token_ids``)."""
    if isinstance(token, str) and token.startswith("token_id:"):
        try:
            return int(token[len("token_id:"):])
        except ValueError:
            return None
    return None


class OpenAIPolicy(Policy):
    """Sample from an OpenAI-compatible server: chat histories through ``/v1/chat/completions``,
    token-id prompts through ``/v1/completions``.

    Args:
        base_url: server root, e.g. ``http://127.0.0.1:8000/v1``.
        model: the model name the server knows.
        api_key: sent as a bearer token when given.
        sampling: default :class:`SamplingConfig`.
        timeout: seconds for one request, all of it (a server trickling its answer included).
        max_retries: retries after the first attempt, on connection errors, timeouts, 429 and 5xx.
        backoff: first retry delay in seconds, doubled each retry.
        concurrency: requests in flight at once for a batch.
        stop: extra stop strings.
        token_ids: ask for the sampled token ids (vLLM's ``return_token_ids`` and
            ``return_tokens_as_token_ids``); token-id prompts always ask.
        tokenizer: re-tokenizes the text of a token-id prompt's completion when the server reports
            no ids (counted in :attr:`retokenized`); without one such completions have no ids.
        stop_token_ids: ids that end a turn, sent as vLLM's ``stop_token_ids`` (default: the server's).
    """

    def __init__(self, base_url: str, model: str, api_key: str | None = None,
                 sampling: SamplingConfig | None = None, timeout: float = 60.0, max_retries: int = 3,
                 backoff: float = 0.5, concurrency: int = 8, stop: Sequence[str] | None = None,
                 token_ids: bool = False, tokenizer=None, stop_token_ids: Sequence[int] | None = None):
        if max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {max_retries}")
        if timeout <= 0:
            raise ValueError(f"timeout must be positive, got {timeout}")
        self.base_url = base_url.rstrip("/")
        self.url = self.base_url + "/chat/completions"
        self.completions_url = self.base_url + "/completions"
        self.model = model
        self.api_key = api_key
        self.sampling = sampling or SamplingConfig()
        self.timeout = float(timeout)
        self.max_retries = int(max_retries)
        self.backoff = float(backoff)
        self.concurrency = max(1, int(concurrency))
        self.stop = list(stop or [])
        self.token_ids = bool(token_ids)
        self.tokenizer = tokenizer
        self.stop_token_ids = [int(t) for t in stop_token_ids] if stop_token_ids else []
        self.retokenized = 0
        """Completions of token-id prompts whose ids were re-tokenized from the text (the server
        reported none), since the last :meth:`take_retokenized`."""
        self._lock = threading.Lock()
        self._warned = False

    def generate(self, prompts: Sequence[Prompt], sampling: SamplingConfig | None = None,
                 allowed: Sequence[Sequence[str] | None] | None = None,
                 scored: Sequence[Sequence[str] | None] | None = None) -> list[Completion]:
        refuse_allowed(self, allowed, scored)
        sampling = sampling or self.sampling
        if len(prompts) <= 1 or self.concurrency == 1:
            return [self._complete(p, sampling) for p in prompts]
        return map_on_daemon_threads(lambda p: self._complete(p, sampling), list(prompts),
                                     min(self.concurrency, len(prompts)))

    def take_retokenized(self) -> int:
        """The re-tokenized count so far, reset to 0."""
        with self._lock:
            n, self.retokenized = self.retokenized, 0
        return n

    def _sampling_fields(self, sampling: SamplingConfig) -> dict:
        body = {"model": self.model, "max_tokens": sampling.max_new_tokens, "temperature": sampling.temperature,
                "top_p": sampling.top_p, "n": 1}
        if sampling.top_k:
            body["top_k"] = sampling.top_k  # an extension most open servers accept
        if self.stop:
            body["stop"] = self.stop
        if self.stop_token_ids:
            body["stop_token_ids"] = self.stop_token_ids  # vLLM's extension
        return body

    def _payload(self, messages: ChatHistory, sampling: SamplingConfig) -> dict:
        body = {**self._sampling_fields(sampling), "messages": list(messages), "logprobs": True}
        if self.token_ids:
            body.update(top_logprobs=0, return_tokens_as_token_ids=True, return_token_ids=True)
        return body

    def _token_payload(self, prompt_ids: list[int], sampling: SamplingConfig) -> dict:
        # logprobs=0: the sampled token's own logprob, no alternatives
        return {**self._sampling_fields(sampling), "prompt": prompt_ids, "logprobs": 0,
                "return_tokens_as_token_ids": True, "return_token_ids": True}

    def _complete(self, prompt: Prompt, sampling: SamplingConfig) -> Completion:
        if is_token_prompt(prompt):
            ids = [int(t) for t in prompt]
            body = request_json(self.completions_url, self._token_payload(ids, sampling), timeout=self.timeout,
                                max_retries=self.max_retries, backoff=self.backoff, api_key=self.api_key)
            completion = self._parse_text_completion(body)
            completion.prompt_ids = ids
            if not completion.token_ids:
                self._retokenize(completion)
            return completion
        body = request_json(self.url, self._payload(prompt, sampling), timeout=self.timeout,
                            max_retries=self.max_retries, backoff=self.backoff, api_key=self.api_key)
        return self._parse(body)

    def _retokenize(self, completion: Completion) -> None:
        if self.tokenizer is None:
            return
        ids = list(self.tokenizer(completion.text, add_special_tokens=False)["input_ids"])
        eos = self.tokenizer.eos_token_id
        if completion.finish_reason == "stop" and eos is not None:
            ids.append(int(eos))
        if len(ids) != len(completion.logprobs):
            completion.logprobs = []  # they belong to the server's tokens, not these
        completion.token_ids = ids
        with self._lock:
            self.retokenized += 1
            warn = not self._warned
            self._warned = True
        if warn:
            print(f"warning: {self.completions_url} reported no token ids (it is not vLLM, or too old for "
                  "return_token_ids / return_tokens_as_token_ids); the trainer re-tokenizes completion text, "
                  "which may differ from the sampled tokens (counted as generator/retokenized)", file=sys.stderr)

    @staticmethod
    def _parse(body: dict) -> Completion:
        """A ``/v1/chat/completions`` answer."""
        try:
            choice = body["choices"][0]
            text = choice["message"].get("content") or ""
        except (KeyError, IndexError, TypeError, AttributeError):
            raise OpenAIRequestError(f"response has no choices[0].message: {str(body)[:300]}") from None
        logprobs, from_tokens = [], []
        content = (choice.get("logprobs") or {}).get("content") or []
        for item in content:
            if isinstance(item, dict) and "logprob" in item:
                logprobs.append(float(item["logprob"]))
                from_tokens.append(_token_id(item.get("token")))
        token_ids = choice.get("token_ids") or []  # vLLM reports them when asked; most servers do not
        if not token_ids and from_tokens and None not in from_tokens:
            token_ids = from_tokens
        finish = choice.get("finish_reason") or "stop"
        prompt_ids = body.get("prompt_token_ids") or choice.get("prompt_token_ids")
        return Completion(text=text, token_ids=[int(t) for t in token_ids], logprobs=logprobs,
                          prompt_ids=[int(t) for t in prompt_ids] if prompt_ids else None,
                          finish_reason="length" if finish == "length" else "stop")

    @staticmethod
    def _parse_text_completion(body: dict) -> Completion:
        """A ``/v1/completions`` answer: ``choices[0].text``, ``logprobs.tokens`` /
        ``logprobs.token_logprobs``, and vLLM's ``token_ids`` when asked for."""
        try:
            choice = body["choices"][0]
            text = choice.get("text") or ""
        except (KeyError, IndexError, TypeError, AttributeError):
            raise OpenAIRequestError(f"response has no choices[0].text: {str(body)[:300]}") from None
        lp = choice.get("logprobs") or {}
        logprobs = [float(x) for x in (lp.get("token_logprobs") or []) if x is not None]
        from_tokens = [_token_id(t) for t in (lp.get("tokens") or [])]
        token_ids = choice.get("token_ids") or []
        if not token_ids and from_tokens and None not in from_tokens:
            token_ids = from_tokens
        finish = choice.get("finish_reason") or "stop"
        return Completion(text=text, token_ids=[int(t) for t in token_ids], logprobs=logprobs,
                          finish_reason="length" if finish == "length" else "stop")


def map_on_daemon_threads(fn: Callable[[Any], Any], items: Sequence, workers: int) -> list:
    """``[fn(x) for x in items]`` on ``workers`` threads; the first item's error (in order) is raised.

    Daemon threads, not a ``ThreadPoolExecutor``: a caller that stops waiting for a batch (a
    leaderboard's agent timeout, a Ctrl-C) leaves requests that may wait on a server for minutes,
    and the interpreter joins an executor's threads at exit."""
    results: list = [None] * len(items)
    errors: list[BaseException | None] = [None] * len(items)
    order = iter(range(len(items)))
    lock = threading.Lock()

    def work():
        while True:
            with lock:
                i = next(order, None)
            if i is None:
                return
            try:
                results[i] = fn(items[i])
            except BaseException as e:  # noqa: BLE001  handed to the caller below
                errors[i] = e

    threads = [threading.Thread(target=work, daemon=True, name="openai-request") for _ in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for error in errors:
        if error is not None:
            raise error
    return results
