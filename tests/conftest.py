"""Fixtures shared across the test tree."""

import atexit
import json
import os
import shutil
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from hypothesis import settings as hypothesis_settings

# Idle OpenMP threads sleep rather than spin (agentgym.train.base.threads says why): set before any
# test imports torch, and inherited by the trainers and workers tests start, so tests that run side by
# side (pytest-xdist) share the cores instead of starving each other.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

# Hypothesis: each property test names its own example count in its @settings (200 to 2,500: enough
# that every strategy's branches come up, which tests/envs/test_toolqa_fuzz.py counts for the largest;
# in CI the costliest, ScienceWorld's 500 actions on the real JVM, takes 43 s, and every other one is
# under the slowest 25 tests' 25 s); the profile sets how examples are drawn. "ci" (CI set, as CI
# services do): derandomized, so every run tries the examples the last green run tried and a failure
# reproduces from the test alone, and no example database is written into the clone. "dev"
# (otherwise): fresh random draws each run, so contributors' runs keep exploring inputs CI has not
# tried. HYPOTHESIS_PROFILE picks one outright.
hypothesis_settings.register_profile("ci", derandomize=True, database=None, print_blob=True, deadline=None)
hypothesis_settings.register_profile("dev", deadline=None)
hypothesis_settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "dev"))

# The Hugging Face libraries' caches (hub downloads, `datasets` builds of local folders, modules) go
# to a folder of this test session, removed at its end: no test reads what the user or an earlier run
# cached, nor writes into the user's caches. Set here, at import, because those libraries read
# these variables when they are first imported (test modules import them at collection).
# AGENTGYM_CACHE is left alone: it holds the generated ALFWorld games the suite shares, and the
# tests of what goes into it point it at their own tmp_path.
_HF_CACHES = tempfile.mkdtemp(prefix="agentgym-tests-hf-")
atexit.register(shutil.rmtree, _HF_CACHES, True)
for _name, _sub in {"HF_HOME": "", "HF_DATASETS_CACHE": "datasets", "HF_HUB_CACHE": "hub",
                    "HUGGINGFACE_HUB_CACHE": "hub", "HF_MODULES_CACHE": "modules", "HF_ASSETS_CACHE": "assets",
                    "HF_XET_CACHE": "xet"}.items():
    os.environ[_name] = os.path.join(_HF_CACHES, _sub)


# Why a test is slow, one marker per cost (pyproject.toml says what each one means). A test carries the
# markers that name its costs and is then slow by that alone: `slow` is added here, so the quick tier
# (`-m "not slow"`) leaves out every one of them and no test has to say `slow` beside its reason. Plain
# `slow` stays for a test whose cost is none of these.
WHY_SLOW = ("engine", "learning", "browser", "network", "multiproc")


# Under pytest-xdist (`-n auto`; pyproject.toml's addopts choose `--dist loadgroup` and keep this
# order), what runs where:
# - A test module runs whole on one worker, in its order: module fixtures (a JVM, a game set, a
#   trained checkpoint) are made once, and the docs-commands pages run in the order that later pages
#   build on. Ray's two modules share a worker: `ray.init()` joins a cluster another test started on
#   this machine, and the cluster test's `ray stop --force` ends every Ray process here.
# - The longest modules start first, so none of them starts last and runs alone at the end (their
#   seconds in one `pytest -n auto` on a quiet 2-core AVX-512 machine, 1,651 s in all: the ToolQA
#   learning tests 647, the ALFWorld learning test 449, the ScienceWorld learning test 428, the
#   docs' commands 336 over all pages). Only the order changes.
SHARED_WORKER = {"tests/vector/test_ray_backend.py": "ray", "tests/vector/test_ray_cluster.py": "ray"}
LONGEST_FIRST = ("tests/trainers/test_learning.py", "tests/trainers/test_alfworld_learning.py",
                 "tests/trainers/test_scienceworld_learning.py", "tests/test_docs_commands.py")


@pytest.hookimpl(optionalhook=True)  # pytest-xdist's hook: without the plugin loaded it is never called
def pytest_xdist_auto_num_workers(config):
    """`-n auto`: a worker per core this process may use (affinity and cgroup quota), at most 4: each
    worker holds torch and starts engines and trainers of its own, and a test's own threads and
    subprocesses use the cores too."""
    from agentgym.train.base.threads import available_cores

    return min(4, available_cores())


@pytest.hookimpl(tryfirst=True)  # before pytest's own -m selection and xdist's grouping read the markers
def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.get_closest_marker("slow") is None and any(item.get_closest_marker(m) for m in WHY_SLOW):
            item.add_marker(pytest.mark.slow)
    if not hasattr(config, "workerinput"):  # not an xdist worker: the order and groups stay as collected
        return

    def module(item) -> str:
        return item.nodeid.split("::", 1)[0]

    for item in items:
        if item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(SHARED_WORKER.get(module(item), module(item))))
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(module(item), len(rank)))  # stable: the rest as collected


@pytest.fixture(scope="session")
def tiny_path():
    """The project's tiny model (built once, then cached), loaded like any user checkpoint."""
    from agentgym.agents.tiny import build_tiny_model

    return str(build_tiny_model())


@pytest.fixture
def one_cpu_thread():
    """Tiny models run fastest on one thread, and CI shares its cores."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


class ChatServer:
    """A real HTTP server on 127.0.0.1 speaking OpenAI's API as ``vllm serve`` does.

    Each request is recorded in ``requests`` as ``(path, authorization header, JSON body)`` (body
    None for a GET). ``/v1/chat/completions``: the reply is the next item of ``replies`` (a str is
    the message content, an int an HTTP error status), or else ``reply(body)``, which by default
    echoes the last message as an answer. ``/v1/completions`` with a token-id prompt: the next int
    of ``replies`` is an error status, else ``sample(prompt_ids, body)`` gives an
    :class:`agentgym.agents.Completion` (default: two fixed tokens), returned in vLLM's format:
    ``token_ids`` when the request asks ``return_token_ids`` and tokens spelled ``"token_id:N"`` when
    it asks ``return_tokens_as_token_ids`` (``report_token_ids``: ``"tokens"`` answers like an older
    vLLM without ``return_token_ids``, False like a server with neither); every sampled id list is kept in ``sampled``. ``GET /v1/models``
    lists ``model_name``. vLLM's dev-mode ``/collective_rpc`` (``update_config``,
    ``reload_weights``) and ``/reset_prefix_cache`` are recorded in ``rpcs``; ``reload_weights``
    calls ``on_reload(path)`` with the model path ``update_config`` set (``dev_mode = False``: they
    are 404, as without ``VLLM_SERVER_DEV_MODE=1``). A path in ``hang`` never
    gets an answer (until the server closes).
    """

    def __init__(self):
        from agentgym.agents.base import Completion

        self.requests: list = []
        self.replies: list = []
        self.reply = lambda body: f"<answer>{body['messages'][-1]['content']}</answer>"
        self.sample = lambda prompt_ids, body: Completion("ab", token_ids=[7, 8], logprobs=[-0.5, -1.0])
        self.sampled: list[list[int]] = []
        self.report_token_ids = True
        self.model_name = "served-model"
        self.rpcs: list = []
        self.dev_mode = True
        self.model_path: str | None = None
        self.on_reload = lambda path: None
        self.hang: set[str] = set()
        self._closing = threading.Event()
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def _send(self, status: int, payload=None):
                data = b"busy" if payload is None else json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):  # noqa: N802
                server.requests.append((self.path, self.headers.get("Authorization"), None))
                if self.path in server.hang:
                    server._closing.wait()
                    return
                if self.path == "/v1/models":
                    self._send(200, {"object": "list", "data": [{"id": server.model_name, "object": "model",
                                                                 "root": server.model_path}]})
                else:
                    self._send(404, {"detail": "Not Found"})

            def do_POST(self):  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])) or b"null")
                server.requests.append((self.path, self.headers.get("Authorization"), body))
                if self.path in server.hang:
                    server._closing.wait()
                    return
                if self.path == "/v1/completions":
                    return self._completion(body)
                if self.path in ("/collective_rpc", "/reset_prefix_cache"):
                    return self._dev(body)
                with server._lock:
                    reply = server.replies.pop(0) if server.replies else server.reply(body)
                if isinstance(reply, int):
                    return self._send(reply)
                content = [{"token": "x", "logprob": -0.5, "top_logprobs": []},
                           {"token": "y", "logprob": -1.0, "top_logprobs": []}]
                if body.get("return_tokens_as_token_ids") and server.report_token_ids in (True, "tokens"):
                    content = [{"token": "token_id:11", "logprob": -0.5, "top_logprobs": []},
                               {"token": "token_id:12", "logprob": -1.0, "top_logprobs": []}]
                # every field OpenAI's own client validates, so SDK-based clients (verifiers) read it too
                self._send(200, {"id": f"chatcmpl-{len(server.requests)}", "object": "chat.completion", "created": 0,
                                 "model": body.get("model") or server.model_name,
                                 "choices": [{"index": 0, "message": {"role": "assistant", "content": reply},
                                              "finish_reason": "stop", "logprobs": {"content": content}}]})

            def _completion(self, body):
                with server._lock:
                    if server.replies and isinstance(server.replies[0], int):
                        return self._send(server.replies.pop(0))
                    c = server.sample(list(body["prompt"]), body)
                    server.sampled.append(list(c.token_ids))
                ids = server.report_token_ids in (True, "tokens") and body.get("return_tokens_as_token_ids")
                tokens = [f"token_id:{t}" if ids else f"<{t}>" for t in c.token_ids]
                choice = {"index": 0, "text": c.text, "finish_reason": c.finish_reason,
                          "logprobs": {"tokens": tokens, "token_logprobs": list(c.logprobs),
                                       "top_logprobs": [{tok: lp} for tok, lp in zip(tokens, c.logprobs)],
                                       "text_offset": [0] * len(tokens)}}
                if server.report_token_ids is True and body.get("return_token_ids"):
                    choice.update(token_ids=list(c.token_ids), prompt_token_ids=list(body["prompt"]))
                self._send(200, {"object": "text_completion", "model": body.get("model"), "choices": [choice]})

            def _dev(self, body):
                if not server.dev_mode:  # vLLM adds these routes only with VLLM_SERVER_DEV_MODE=1
                    return self._send(404, {"detail": "Not Found"})
                server.rpcs.append((self.path, body))
                if self.path == "/collective_rpc" and body.get("method") == "update_config":
                    server.model_path = body["args"][0]["model_config"]["model"]
                elif self.path == "/collective_rpc" and body.get("method") == "reload_weights":
                    try:
                        server.on_reload(server.model_path)
                    except Exception as e:  # what vLLM would answer: the load failed
                        return self._send(500, {"error": f"{type(e).__name__}: {e}"})
                elif self.path == "/collective_rpc":
                    return self._send(400, {"error": f"unknown method {body.get('method')!r}"})
                self._send(200, {"results": [None]} if self.path == "/collective_rpc" else {})

            def log_message(self, *args):
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self.root = f"http://127.0.0.1:{self._httpd.server_address[1]}"
        self.url = self.root + "/v1"
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()

    def paths(self) -> list[str]:
        return [path for path, _, _ in self.requests]

    def close(self):
        self._closing.set()
        self._httpd.shutdown()
        self._httpd.server_close()


@pytest.fixture
def chat_server():
    server = ChatServer()
    yield server
    server.close()


class TricklingServer:
    """A real HTTP server on 127.0.0.1 that answers 200 at once, then sends its body one byte every
    ``interval`` seconds: no single read ever waits long, so only a total deadline ends a request.
    It stops by itself after ``limit`` seconds per request (or at ``close()``). ``hits`` counts the
    requests, ``paths`` records them."""

    def __init__(self, interval: float = 0.2, limit: float = 20.0):
        self.hits, self.paths = 0, []
        self._closing = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def _trickle(self):
                server.hits += 1
                server.paths.append(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                if length:
                    self.rfile.read(length)
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", "100000")
                self.end_headers()
                deadline = time.monotonic() + limit
                try:
                    while time.monotonic() < deadline and not server._closing.wait(interval):
                        self.wfile.write(b" ")
                        self.wfile.flush()
                except OSError:  # the client gave up and shut its socket
                    pass

            do_GET = do_POST = _trickle  # noqa: N815

            def log_message(self, *args):
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self.root = f"http://127.0.0.1:{self._httpd.server_address[1]}"
        self.url = self.root + "/v1"
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()

    def close(self):
        self._closing.set()
        self._httpd.shutdown()
        self._httpd.server_close()


@pytest.fixture
def trickling_server():
    server = TricklingServer()
    yield server
    server.close()
