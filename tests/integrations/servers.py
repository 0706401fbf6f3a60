"""Run ``agentgym`` server commands as real subprocesses on 127.0.0.1 for the adapter tests."""

from __future__ import annotations

import os
import queue
import subprocess
import sys
import threading
import time
import urllib.request

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def subprocess_env() -> dict:
    """This process's environment, with the checkout first on the path (the subprocess imports it)."""
    return {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
            "PYTHONUNBUFFERED": "1"}


class Server:
    """``agentgym serve ...`` on a free port; ``url`` once it answers ``/health``. ``stderr``: the
    lines it has logged so far."""

    def __init__(self, *args: str, start_timeout: float = 120.0, cwd: str | None = None):
        self.proc = subprocess.Popen([sys.executable, "-m", "agentgym.cli", "serve", *args, "--port", "0"],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=subprocess_env(),
                                     cwd=cwd)
        lines: queue.Queue = queue.Queue()
        threading.Thread(target=lambda: [lines.put(line) for line in self.proc.stdout], daemon=True).start()
        self.stderr: list[str] = []
        threading.Thread(target=lambda: [self.stderr.append(line) for line in self.proc.stderr], daemon=True).start()
        try:
            first = lines.get(timeout=start_timeout)
        except queue.Empty:
            self.close()
            raise AssertionError(f"the server did not start: {''.join(self.stderr)[-2000:]}") from None
        self.url = first.split(" on ", 1)[1].split()[0]
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(self.url + "/health", timeout=5).read()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
