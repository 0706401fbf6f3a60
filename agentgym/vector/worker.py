"""The loop a worker process of the ``process`` backend runs.

Protocol over one ``multiprocessing`` pipe, pickled tuples, no shared memory (Gymnasium's shared
Text buffers come back blank, SPEC §6):

- worker -> parent, once: ``("ready", env_description)`` or ``("init_error", message)``
- parent -> worker: ``("run", jobs, each)`` (``each``: answer env by env as each job finishes,
  else once for all),  ``("call", name, args, kwargs)``, ``("get_attr", name)``,
  ``("set_attr", name, values)``, ``("close",)``
- worker -> parent: ``("ok", payload)`` or ``("error", exception_or_message)``

The worker makes itself the leader of a new process group first thing, so that the engines it
starts (a JVM per ScienceWorld env) share its group and the parent can kill worker and engines
together with one ``killpg``. Being in its own group also keeps Ctrl-C away from it: the terminal
sends SIGINT to the foreground group only, and the parent decides when workers stop. A watchdog
thread kills the whole group if the parent disappears without closing it (e.g. SIGKILL).
"""

from __future__ import annotations

import gc
import os
import pickle
import signal
import threading
import time
import traceback
from collections.abc import Callable
from typing import Any

from agentgym.vector.host import EnvFactory, EnvHost, describe

_WATCHDOG_PERIOD_S = 1.0


def _watch_parent(parent_pid: int) -> None:
    while True:
        time.sleep(_WATCHDOG_PERIOD_S)
        if os.getppid() != parent_pid:
            os.killpg(os.getpgrp(), signal.SIGKILL)


def _picklable_error(exc: BaseException) -> Any:
    try:
        pickle.dumps(exc)
        return exc
    except Exception:  # noqa: BLE001
        return f"{describe(exc)}\n{traceback.format_exc(limit=8)}"


def _send(conn, payload: Any, unsendable: Callable[[Exception], tuple] | None = None) -> None:
    """Answer ``("ok", payload)``; if it does not pickle (e.g. an info value), ``unsendable(error)``
    instead, by default ``("error", ...)``."""
    # pickle.dumps straight to bytes: Connection.send's ForkingPickler costs more than a cheap step.
    try:
        data = pickle.dumps(("ok", payload), protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as e:  # noqa: BLE001
        reply = ("error", _picklable_error(e)) if unsendable is None else unsendable(e)
        data = pickle.dumps(reply, protocol=pickle.HIGHEST_PROTOCOL)
    conn.send_bytes(data)


def worker_main(
    conn,
    factory: EnvFactory,
    indices: list[int],
    sticky: dict,
    sticky_calls: tuple[str, ...],
    parent_pid: int,
    inherited_conns: list | None = None,
) -> None:
    try:
        os.setpgrp()
    except OSError:  # already a group leader
        pass
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})  # the parent starts workers with it blocked
    # With the fork start method the worker inherits the parent's ends of other workers' pipes;
    # closing them keeps end-of-file detection working for those workers.
    for other in inherited_conns or ():
        try:
            other.close()
        except OSError:
            pass
    threading.Thread(target=_watch_parent, args=(parent_pid,), daemon=True).start()
    # Objects inherited from the parent (forked) are never garbage here: keeping the collector off
    # them saves its passes over the parent's heap and the copy-on-write faults they cause.
    gc.freeze()

    host = None
    try:
        try:
            host = EnvHost(factory, indices, sticky=sticky, sticky_calls=sticky_calls)
            conn.send(("ready", host.describe_env()))
        except Exception as e:  # noqa: BLE001  reported to the parent, which raises it
            conn.send(("init_error", _picklable_error(e)))
            return
        while True:
            try:
                message = conn.recv()
            except (EOFError, OSError):  # the parent is gone
                return
            command = message[0]
            if command == "close":
                host.close()
                host = None
                conn.send(("ok", None))
                return
            try:
                if command == "run" and message[2]:  # answer env by env, each as soon as it is done
                    for i, job in message[1].items():
                        _send(conn, host.run({i: job}),
                              lambda e, i=i: ("ok", {i: ("fault", f"result could not be sent: {describe(e)}", "")}))
                    continue
                if command == "run":
                    payload = host.run(message[1])
                elif command == "call":
                    payload = host.call(indices, message[1], message[2], message[3])
                elif command == "get_attr":
                    payload = host.get_attr(indices, message[1])
                elif command == "set_attr":
                    payload = host.set_attr(message[1], message[2])
                else:
                    raise ValueError(f"unknown command {command!r}")
            except Exception as e:  # noqa: BLE001
                conn.send(("error", _picklable_error(e)))
                continue
            _send(conn, payload)
    except KeyboardInterrupt:
        pass
    finally:
        if host is not None:
            host.close()
