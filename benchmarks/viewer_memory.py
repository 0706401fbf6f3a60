"""``agentgym view``'s server: its memory against the size of the run it serves, and its answers under load.

    python benchmarks/viewer_memory.py                         # 29 MB of small step files and one 188 MB line
    python benchmarks/viewer_memory.py --small-mb 4 --big-line-mb 20 --clients 50 --out viewer.json

Builds a run in a temporary folder: ``--small-mb`` MB of step files (``--episodes-per-file``, 512
episodes of 4 turns a file, about 870 KB each) and one more step whose one episode is a single
``--big-line-mb`` MB line (a 188 MB reply). Starts ``agentgym view`` on it as a user does, in a process of its own, and
asks for every step's first page of rows and its first transcript, then the big step's. It prints
the server's resident memory (RSS) after start and as the run is read, and its peak (``VmHWM``,
Linux), each against the bytes of the run read so far and the largest answer served. Then
``--clients`` requests at once (answered, failed, slowest), and ``--half-open`` connections that
send half a request and stop (how many the server closed, and when).

Target: the server's memory grows by less than the page it serves, not with the run: once the rows
it keeps are full (20,000 rows, about 6 MB), reading more of the run adds nothing, and a line
longer than the 16 MB a line may be costs those 16 MB at most, not the line.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from agentgym.extras import require_for_script

MB = 1_000_000
TEXT = "You are in the middle of a room. Looking quickly around you, you see a cabinet 1 and a drawer 2."


def _episode(step: int, k: int, reply: str | None = None) -> dict:
    """One line as ``agentgym.train.run.episode_log.episode_record`` writes it."""
    turns = [{"observation": TEXT, "reply": reply if reply is not None else f"<action>open drawer {t}</action>",
              "reward": 0.1, "terms": {"format": 1.0, "valid": 1.0}, "action_valid": True, "tokens": 12,
              "advantage": 0.4, "signals": {}} for t in range(1 if reply is not None else 4)]
    return {"step": step, "split": "train", "trained": True, "version": step - 1, "lag": 0, "task_id": f"task-{k // 8}",
            "group_key": f"k/{k // 8}", "group": k // 8, "seed": k, "tag": "batch", "system_prompt": TEXT,
            "instruction": "put a clean mug in the coffee machine", "turns": turns, "final_observation": "done",
            "return": 0.4, "success": k % 3 == 0, "terminated": True, "truncated": False, "cut_by_length": False,
            "error": None, "episode_terms": {"progress": 0.5}, "metrics": {}, "advantage": 0.4, "signals": {}}


def build_run(root: Path, small_mb: float, big_line_mb: float, per_file: int) -> tuple[list[tuple[str, int]], str]:
    """The run's step files, ``(name, bytes)`` in step order, and the big line's file name."""
    episodes = root / "episodes"
    episodes.mkdir(parents=True)
    files, total, step = [], 0, 0
    while total < small_mb * MB:
        step += 1
        body = "".join(json.dumps(_episode(step, k)) + "\n" for k in range(per_file)).encode()
        (episodes / f"step_{step}.jsonl").write_bytes(body)
        files.append((f"step_{step}", len(body)))
        total += len(body)
    big = f"step_{step + 1}"
    with open(episodes / f"{big}.jsonl", "w", encoding="utf-8") as f:
        head, tail = json.dumps(_episode(step + 1, 0, reply="\0")).split('"\\u0000"')
        f.write(head + '"')
        for _ in range(int(big_line_mb)):
            f.write("A" * MB)
        f.write('"' + tail + "\n")
    (root / "metrics.jsonl").write_text("".join(json.dumps({"step": s + 1, "reward/mean": 0.4}) + "\n"
                                                for s in range(step + 1)))
    return files, big


def _status(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM of ``pid`` in bytes (Linux), else its RSS from psutil as both."""
    path = f"/proc/{pid}/status"
    if os.path.exists(path):
        out = {}
        for line in open(path):
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                out[key] = int(value.split()[0]) * 1024
        return out
    import psutil

    rss = psutil.Process(pid).memory_info().rss
    return {"VmRSS": rss, "VmHWM": rss}


def _get(url: str, timeout: float = 60) -> tuple[int, int]:
    """HTTP status and body size of ``url``."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status, len(r.read())
    except urllib.error.HTTPError as e:
        return e.code, len(e.read())


def measure_memory(base: str, pid: int, files: list[tuple[str, int]], big: str) -> dict:
    _get(base + "/api/sources")
    _get(base + "/api/source?src=0")
    start = _status(pid)["VmRSS"]
    points, read, largest = [], 0, 0
    marks = {max(1, round(len(files) * q)) for q in (0.05, 0.25, 0.5, 0.75, 1.0)}
    for n, (name, size) in enumerate(files, 1):
        for path in (f"/api/episodes?src=0&file={name}&limit=50", f"/api/episode?src=0&file={name}&id=0"):
            largest = max(largest, _get(base + path)[1])
        read += size
        if n in marks:
            mem = _status(pid)
            points.append({"files": n, "run_read_mb": read / MB, "rss_growth_mb": (mem["VmRSS"] - start) / MB,
                           "peak_growth_mb": (mem["VmHWM"] - start) / MB, "largest_answer_kb": largest / 1000})
            print(f"  {n:4d} files, {read / MB:6.1f} MB of run read: RSS +{points[-1]['rss_growth_mb']:6.1f} MB, "
                  f"peak +{points[-1]['peak_growth_mb']:6.1f} MB (largest answer {largest / 1000:.0f} KB)", flush=True)
    big_answers = {}
    for path in (f"/api/episodes?src=0&file={big}&limit=50", f"/api/episode?src=0&file={big}&id=0"):
        status, size = _get(base + path, timeout=600)
        big_answers[path.split("?")[0]] = {"status": status, "kb": size / 1000}
    mem = _status(pid)
    after_big = {"rss_growth_mb": (mem["VmRSS"] - start) / MB, "peak_growth_mb": (mem["VmHWM"] - start) / MB,
                 "answers": big_answers}
    print(f"  the big line's step: RSS +{after_big['rss_growth_mb']:.1f} MB, peak +{after_big['peak_growth_mb']:.1f} MB "
          f"over the start; answers {big_answers}", flush=True)
    return {"rss_at_start_mb": start / MB, "points": points, "after_big_line": after_big}


def measure_clients(base: str, files: list[tuple[str, int]], clients: int, timeout: float) -> dict:
    """``clients`` requests at once, each for another step's page; a request not answered within
    ``timeout`` seconds fails."""
    barrier = threading.Barrier(clients)

    def one(k: int) -> tuple[bool, float, str]:
        name = files[k % len(files)][0]
        barrier.wait()
        t0 = time.perf_counter()
        try:
            status, _ = _get(f"{base}/api/episodes?src=0&file={name}&offset={k % 7}&limit=50", timeout=timeout)
            return status == 200, time.perf_counter() - t0, "" if status == 200 else f"HTTP {status}"
        except OSError as e:
            return False, time.perf_counter() - t0, type(e).__name__

    t0 = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        got = list(pool.map(one, range(clients)))
    wall = time.perf_counter() - t0
    failed = [why for ok, _, why in got if not ok]
    out = {"clients": clients, "answered": clients - len(failed), "failed": len(failed),
           "failures": sorted(set(failed)), "slowest_s": max(t for _, t, _ in got), "wall_s": wall}
    print(f"  {clients} requests at once: {out['answered']} answered, {out['failed']} failed {out['failures']}, "
          f"slowest {out['slowest_s']:.2f} s, all in {wall:.2f} s", flush=True)
    return out


def measure_half_open(base: str, connections: int, wait: float) -> dict:
    """``connections`` that send half a request and stop: how many the server closed within ``wait`` s."""
    port = int(base.rsplit(":", 1)[1])
    socks = []
    for _ in range(connections):
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(b"GET /api/sources HTTP/1.1\r\nHost: 127.0.0.1")
        s.settimeout(wait)
        socks.append(s)
    closed = queue.Queue()
    t0 = time.perf_counter()

    def watch(s: socket.socket) -> None:
        try:
            while s.recv(4096):
                pass
            closed.put(time.perf_counter() - t0)
        except OSError:
            pass  # still open when we stopped waiting

    threads = [threading.Thread(target=watch, args=(s,), daemon=True) for s in socks]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for s in socks:
        s.close()
    times = sorted(closed.queue)
    status, _ = _get(base + "/api/sources", timeout=10)
    out = {"connections": connections, "closed_by_server": len(times), "waited_s": wait,
           "closed_after_s": times[-1] if times else None, "answers_after": status}
    print(f"  {connections} half-sent requests: {len(times)} closed by the server within {wait:.0f} s"
          + (f" (the last after {times[-1]:.1f} s)" if times else ""), flush=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--small-mb", type=float, default=29, help="MB of small step files in the run")
    parser.add_argument("--episodes-per-file", type=int, default=512, help="episodes in each small step file")
    parser.add_argument("--big-line-mb", type=float, default=188, help="MB of the one big episode line")
    parser.add_argument("--clients", type=int, default=200, help="requests sent at once")
    parser.add_argument("--client-timeout", type=float, default=30, help="seconds a request of those may take")
    parser.add_argument("--half-open", type=int, default=20, help="connections that send half a request")
    parser.add_argument("--half-open-wait", type=float, default=20, help="seconds to wait for the server to close them")
    parser.add_argument("--out", default="benchmarks/results/viewer_memory.json")
    args = parser.parse_args()
    if not os.path.exists("/proc/self/status"):
        require_for_script(["psutil"], "bench", "benchmarks/viewer_memory.py")
    with tempfile.TemporaryDirectory(prefix="viewer-memory-") as tmp:
        run = Path(tmp) / "run"
        files, big = build_run(run, args.small_mb, args.big_line_mb, args.episodes_per_file)
        print(f"run: {len(files)} step files, {sum(s for _, s in files) / MB:.1f} MB, and {big} with one "
              f"{args.big_line_mb:.0f} MB line", flush=True)
        proc = subprocess.Popen([sys.executable, "-m", "agentgym.cli", "view", str(run)], stdout=subprocess.PIPE,
                                text=True)
        try:
            first = proc.stdout.readline()
            if not first.startswith("agentgym view: http://"):
                raise SystemExit(f"the viewer did not start: {first!r}")
            base = first.split()[2].rstrip("/")
            results = {"small_mb": args.small_mb, "big_line_mb": args.big_line_mb, "files": len(files),
                       "memory": measure_memory(base, proc.pid, files, big),
                       "concurrent": measure_clients(base, files, args.clients, args.client_timeout),
                       "half_open": measure_half_open(base, args.half_open, args.half_open_wait)}
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(results, indent=2))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
