import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from agentgym.rewards.judges import JudgeUnavailable as AnswerJudgeUnavailable
from agentgym.train.methods.gcd.external import ExternalJudge, JudgeUnavailable

SLACK_S = 1.5  # thread start-up and a loaded CI machine


def test_labels_a_step_through_the_chat_endpoint(chat_server):
    chat_server.replies = ["It opens the door the task needs.\n<judge>good</judge>"]
    judge = ExternalJudge(chat_server.url, "judge-model", api_key="k3y", timeout=5.0)
    judgment = judge.judge_step("open the door", "A closed door.", "open door", mistakes=["looping"])
    assert (judgment.verdict, judgment.critique) == ("good", "It opens the door the task needs.")
    path, auth, body = chat_server.requests[0]
    assert path == "/v1/chat/completions" and auth == "Bearer k3y" and body["model"] == "judge-model"
    assert "open door" in body["messages"][1]["content"] and "- looping" in body["messages"][0]["content"]


def test_a_reply_without_one_verdict_leaves_the_step_unlabelled(chat_server):
    chat_server.replies = ["<judge>good</judge><judge>bad</judge>", "No idea."]
    judge = ExternalJudge(chat_server.url, "m", timeout=5.0)
    assert judge.label_step("t", "o", "a") is None
    assert judge.label_step("t", "o", "a") is None
    assert len(chat_server.requests) == 2  # not retried


def test_summarizes_mistakes(chat_server):
    chat_server.replies = ["Common ones:\n- Looping between rooms.\n- Taking the wrong object.\n- Extra"]
    judge = ExternalJudge(chat_server.url, "m", timeout=5.0)
    assert judge.summarize_mistakes(["c1", "c2"], max_items=2) == ["Looping between rooms.", "Taking the wrong object."]
    assert "c2" in chat_server.requests[0][2]["messages"][1]["content"]


def test_retries_busy_answers_then_succeeds(chat_server):
    chat_server.replies = [503, 429, "fine <judge>bad</judge>"]
    judge = ExternalJudge(chat_server.url, "m", timeout=5.0, retries=2, backoff=0.01)
    assert judge.label_step("t", "o", "a") == "bad" and len(chat_server.requests) == 3


def test_an_error_that_will_not_go_away_is_not_retried(chat_server):
    chat_server.replies = [401, "<judge>good</judge>"]
    judge = ExternalJudge(chat_server.url, "m", timeout=5.0, retries=3, backoff=0.01)
    with pytest.raises(JudgeUnavailable, match="HTTP 401"):
        judge.label_step("t", "o", "a")
    assert len(chat_server.requests) == 1


def test_keeps_failing_raises_after_every_retry(chat_server):
    chat_server.replies = [500, 502, 503]
    judge = ExternalJudge(chat_server.url, "m", timeout=5.0, retries=2, backoff=0.01)
    with pytest.raises(JudgeUnavailable, match="3 attempt"):
        judge.summarize_mistakes(["c"])


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_down_endpoint_raises_judge_unavailable_quickly():
    judge = ExternalJudge(f"http://127.0.0.1:{_closed_port()}/v1", "m", timeout=2.0, retries=2, backoff=0.05)
    start = time.monotonic()
    with pytest.raises(JudgeUnavailable, match="cannot reach") as info:
        judge.label_step("t", "o", "a")
    assert time.monotonic() - start < judge.deadline_s + SLACK_S
    assert isinstance(info.value, AnswerJudgeUnavailable)  # one except clause covers every judge


class _OddServer:
    """A misbehaving endpoint: ``mode="silent"`` sends nothing for a long time, ``"trickle"`` sends
    the headers then a byte of body every 50 ms, so no single read ever times out, and
    ``"garbage"`` answers 200 at once with a body that is not JSON."""

    def __init__(self, mode: str):
        self.stop = threading.Event()
        self.hits = 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802
                server.hits += 1
                self.rfile.read(int(self.headers["Content-Length"]))
                if mode == "silent":
                    server.stop.wait(30)
                    return
                if mode == "garbage":
                    self.send_response(200)
                    self.send_header("Content-Length", "8")
                    self.end_headers()
                    self.wfile.write(b"not json")
                    return
                self.send_response(200)
                self.send_header("Content-Length", "100000")
                self.end_headers()
                try:
                    while not server.stop.wait(0.05):
                        self.wfile.write(b" ")
                        self.wfile.flush()
                except OSError:
                    pass

            def log_message(self, *args):
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()

    def close(self):
        self.stop.set()
        self._httpd.shutdown()
        self._httpd.server_close()


@pytest.mark.parametrize("mode", ["silent", "trickle"])
def test_a_stalling_endpoint_returns_within_the_bound(mode):
    server = _OddServer(mode)
    try:
        judge = ExternalJudge(server.url, "m", timeout=0.5, retries=1, backoff=0.1)
        start = time.monotonic()
        with pytest.raises(JudgeUnavailable, match="no answer from .* within"):
            judge.label_step("t", "o", "a")
        elapsed = time.monotonic() - start
        assert judge.deadline_s - 0.2 < elapsed < judge.deadline_s + SLACK_S
        assert server.hits == 2
    finally:
        server.close()


def test_garbled_bodies_are_retried_then_reported():
    server = _OddServer("garbage")
    try:
        judge = ExternalJudge(server.url, "m", timeout=5.0, retries=2, backoff=0.01)
        with pytest.raises(JudgeUnavailable, match="no choices"):
            judge.label_step("t", "o", "a")
        assert server.hits == 3
    finally:
        server.close()


def test_a_null_content_is_an_empty_reply(chat_server):
    chat_server.reply = lambda body: None
    assert ExternalJudge(chat_server.url, "m", timeout=5.0).judge_step("t", "o", "a").text == ""


def test_bad_settings_are_refused():
    with pytest.raises(ValueError, match="timeout"):
        ExternalJudge("http://127.0.0.1:1/v1", "m", timeout=0)
    with pytest.raises(ValueError, match="retries"):
        ExternalJudge("http://127.0.0.1:1/v1", "m", retries=-1)
    with pytest.raises(ValueError, match="http"):
        ExternalJudge("127.0.0.1:8000/v1", "m")
