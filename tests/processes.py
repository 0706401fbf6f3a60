"""Process checks for tests that kill workers and engines.

A process can exit between any two psutil calls, so every check treats "no such process" as gone
instead of asking ``pid_exists`` first and then looking the process up.
"""

import time

import psutil


def alive(pid: int) -> bool:
    """Whether ``pid`` is running (a zombie waiting to be reaped counts as gone)."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def still_alive(pids) -> set[int]:
    """The members of ``pids`` that are running."""
    return {pid for pid in pids if alive(pid)}


def wait_gone(pids, within: float = 10.0) -> bool:
    """Poll until none of ``pids`` is running; False if some still are after ``within`` seconds."""
    pids = [pids] if isinstance(pids, int) else list(pids)
    deadline = time.monotonic() + within
    while still_alive(pids):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.1)
    return True


def process_tree(pids) -> set[int]:
    """``pids`` and all their descendants that are running now."""
    out = set(pids)
    for pid in pids:
        try:
            out |= {child.pid for child in psutil.Process(pid).children(recursive=True)}
        except psutil.NoSuchProcess:
            pass
    return out


def java_children() -> set[int]:
    """The running JVMs among this process's descendants."""
    out = set()
    for child in psutil.Process().children(recursive=True):
        try:
            if child.name() == "java" and child.status() != psutil.STATUS_ZOMBIE:
                out.add(child.pid)
        except psutil.NoSuchProcess:
            pass
    return out
