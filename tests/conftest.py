"""Fixtures shared across the test tree."""

import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest


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
    """A real HTTP server on 127.0.0.1 speaking OpenAI's ``/v1/chat/completions``.

    Each request is recorded in ``requests`` as ``(path, authorization header, JSON body)``. The reply
    is the next item of ``replies`` (a str is the message content, an int an HTTP error status), or
    else ``reply(body)``, which by default echoes the last message as an answer.
    """

    def __init__(self):
        self.requests: list = []
        self.replies: list = []
        self.reply = lambda body: f"<answer>{body['messages'][-1]['content']}</answer>"
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append((self.path, self.headers.get("Authorization"), body))
                reply = server.replies.pop(0) if server.replies else server.reply(body)
                if isinstance(reply, int):
                    self.send_response(reply)
                    self.end_headers()
                    self.wfile.write(b"busy")
                    return
                logprobs = {"content": [{"token": "x", "logprob": -0.5}, {"token": "y", "logprob": -1.0}]}
                data = json.dumps({"choices": [{"message": {"role": "assistant", "content": reply},
                                                "finish_reason": "stop", "logprobs": logprobs}]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self._httpd = HTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()

    def close(self):
        self._httpd.shutdown()
        self._httpd.server_close()


@pytest.fixture
def chat_server():
    server = ChatServer()
    yield server
    server.close()
