"""The board as a process: Ctrl-C stops it at once and records nothing false, two boards cannot
share a run directory, and a finished board does not wait for agent calls it gave up on."""

import json
import os
import signal
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

import agentgym
from agentgym.leaderboard import RunnerConfig, run_board

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(agentgym.__file__)))
HERE = os.path.dirname(os.path.abspath(__file__))


def _as_from_a_terminal():
    # A suite started in the background of a non-interactive shell (`pytest &`, some CI runners)
    # runs with SIGINT ignored, and a child inherits that: Python then installs no KeyboardInterrupt
    # and Ctrl-C does nothing. The board gets what a command typed in a terminal has.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def board(out, *args, agents=("slow=board_agents:SlowExpert",), env=None):
    """``agentgym leaderboard`` in its own process group, as a terminal runs it."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([ROOT, HERE]), **(env or {})}
    cmd = [sys.executable, "-m", "agentgym.cli", "leaderboard", "--agents", *agents, "--envs", "ToolQA-v0",
           "--no-progress", "--out", str(out), *args]
    return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, preexec_fn=_as_from_a_terminal)


def episodes(path):
    if not os.path.exists(path):
        return []
    return [json.loads(line) for line in open(path) if line.endswith("\n")]


def wait_for_episodes(path, n, proc, within=60.0):
    deadline = time.monotonic() + within
    while len(episodes(path)) < n:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the board played nothing"
        time.sleep(0.05)


@pytest.mark.multiproc
def test_ctrl_c_stops_the_board_records_nothing_false_and_the_rerun_plays_the_rest(tmp_path):
    out = tmp_path / "run"
    file = out / "episodes" / "slow__ToolQA-v0__test.jsonl"
    held = tmp_path / "held"
    # The agent holds its first call of the second episode: the Ctrl-C below lands while the board
    # waits on the agent with one episode recorded, however late it is sent (under load the board
    # could otherwise finish all six first).
    proc = board(out, "--limit", "6", "--num-envs", "1", env={"BOARD_AGENT_HOLD": str(held)})
    try:
        deadline = time.monotonic() + 120
        while not held.exists():
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the board never reached its second episode"
            time.sleep(0.05)
        assert len(episodes(file)) == 1
        os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C reaches the whole foreground group
        _, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130, err
    assert "interrupted" in err and "Traceback" not in err, err
    played = episodes(file)
    assert len(played) == 1 and played[0]["outcome"] == "solved", played
    rows = run_board(["slow=board_agents:SlowExpert"], ["ToolQA-v0"], ["test"], str(out), limit=6,
                     runner=RunnerConfig(num_envs=6, progress=False))
    assert rows[0]["episodes"] == 6 and rows[0]["outcomes"]["solved"] == 6
    assert len(episodes(file)) == 6  # each episode once: the interrupted one was played by the rerun


@pytest.mark.multiproc
def test_two_boards_on_one_run_directory(tmp_path):
    out = tmp_path / "run"
    file = out / "episodes" / "slow__ToolQA-v0__test.jsonl"
    first = board(out, "--limit", "4", "--num-envs", "1")
    try:
        wait_for_episodes(file, 1, first)
        second = board(out, "--limit", "4", "--num-envs", "1")
        _, err = second.communicate(timeout=60)
        assert second.returncode == 2 and len(err.strip().splitlines()) == 1, err
        assert f"pid {first.pid}" in err and "in use" in err, err
        _, err = first.communicate(timeout=60)
        assert first.returncode == 0, err
    finally:
        for proc in (first,):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
    played = [(r["task_id"], r["repeat"]) for r in episodes(file)]
    assert len(played) == len(set(played)) == 4
    assert not (out / ".agentgym.lock").exists()  # released when the board ends


class SlowServer:
    """An OpenAI-compatible endpoint on 127.0.0.1 that takes ``delay`` seconds over every answer
    (waiting in short sleeps, so closing the server ends every wait)."""

    def __init__(self, delay: float):
        stop = self.stop = threading.Event()

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                deadline = time.monotonic() + delay
                while time.monotonic() < deadline and not stop.is_set():
                    time.sleep(0.05)
                body = json.dumps({"choices": [{"message": {"content": "<answer>late</answer>"}}]}).encode()
                try:
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except OSError:
                    pass

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.stop.set()
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.mark.network
@pytest.mark.multiproc
def test_the_board_exits_when_done_without_waiting_for_abandoned_calls(tmp_path):
    server = SlowServer(delay=120.0)
    proc = board(tmp_path / "run", "--limit", "2", "--num-envs", "2", "--agent-timeout", "1",
                 agents=(f"slow=openai:{server.url}#m",))
    try:
        deadline = time.monotonic() + 60
        while not (tmp_path / "run" / "summary.json").exists():
            assert proc.poll() is None or (tmp_path / "run" / "summary.json").exists(), proc.communicate()
            assert time.monotonic() < deadline, "no summary"
            time.sleep(0.05)
        # the two requests are still being answered; the process must not wait for them
        _, err = proc.communicate(timeout=15)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        server.close()
    assert proc.returncode == 3 and "did not answer within 1 s" in err, err
