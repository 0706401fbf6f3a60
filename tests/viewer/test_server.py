"""``agentgym view``'s server under load: many requests at once, half-sent requests, clients gone."""

import json
import socket
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest
from viewer_data import run_episode, write_run

from agentgym.viewer.server import make_server
from agentgym.viewer.sources import open_sources


@pytest.fixture
def served(tmp_path):
    """A server of a run of 40 steps of 64 episodes, on a thread; its base URL."""
    run = write_run(tmp_path / "run", {s: [run_episode(f"t{s}-{k // 8}", k // 8, k % 3 == 0, 0.5, turns=3)
                                           for k in range(64)] for s in range(1, 41)})
    server = make_server(open_sources([str(run)]), timeout=1.0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_two_hundred_requests_at_once_are_all_answered(served):
    barrier = threading.Barrier(200)

    def get(k):
        barrier.wait()
        with urllib.request.urlopen(f"{served}/api/episodes?src=0&file=step_{k % 40 + 1}&limit=20", timeout=20) as r:
            return r.status, json.load(r)["all"]

    t0 = time.perf_counter()
    with ThreadPoolExecutor(200) as pool:
        answers = list(pool.map(get, range(200)))
    assert answers == [(200, 64)] * 200
    assert time.perf_counter() - t0 < 20


def _half_sent(url):
    port = int(url.rsplit(":", 1)[1])
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"GET /api/sources HTTP/1.1\r\nHost: 127.0.0.1")  # and never the blank line that ends it
    return s


def test_half_sent_requests_are_closed_and_do_not_hold_up_the_others(served):
    socks = [_half_sent(served) for _ in range(20)]
    t0 = time.perf_counter()
    with urllib.request.urlopen(served + "/api/sources", timeout=5) as r:  # answered while they hang
        assert r.status == 200
    for s in socks:
        s.settimeout(10)
        assert s.recv(100) == b""  # the server closed it
        s.close()
    assert time.perf_counter() - t0 < 5  # the server's timeout is 1 s


def test_a_client_that_leaves_mid_answer_leaves_the_server_answering(served, capfd):
    for _ in range(20):
        s = socket.create_connection(("127.0.0.1", int(served.rsplit(":", 1)[1])))
        s.sendall(b"GET /api/episodes?src=0&file=step_1&limit=500 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")  # reset on close
        s.close()
    with urllib.request.urlopen(served + "/api/episodes?src=0&file=step_1", timeout=5) as r:
        assert json.load(r)["all"] == 64
    time.sleep(0.5)
    assert "Traceback" not in capfd.readouterr().err
