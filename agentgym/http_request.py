"""HTTP requests bounded by a total deadline: the one client every endpoint caller in agentgym uses
(:class:`~agentgym.agents.OpenAIPolicy`, the answer judges, GCD's external judge, the trainer's
generator server).

A socket timeout bounds each read, not the whole answer: a server that sends a byte now and then
never trips it, and ``urllib`` would wait for as long as the server likes. Here every attempt gets
at most ``timeout`` seconds in all (connecting, sending, waiting, reading the body; name lookup is
left to the system resolver's own timeout): a watchdog shuts the socket when the attempt's time is
spent. Retries back off exponentially, and an
optional ``deadline`` bounds the whole call, backoff pauses included.

Proxies come from the environment (``http_proxy``, ``https_proxy``, ``no_proxy``), as ``urllib``
reads them.

>>> round(longest_call_s(timeout=5.0, retries=2, backoff=0.5, deadline=None), 3)
16.5
"""

from __future__ import annotations

import base64
import http.client
import socket
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from typing import TypeVar

__all__ = ["RETRY_STATUS", "RequestFailed", "request", "send_once", "longest_call_s"]

RETRY_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
"""HTTP statuses worth another attempt; any other error status (a wrong key, an unknown model) will
not fix itself and fails at once."""

T = TypeVar("T")


class RequestFailed(RuntimeError):
    """Every attempt failed, or the server gave an error that will not go away.

    ``str()`` is ``"<reason> (after N attempts)"``; the pieces are attributes.
    """

    def __init__(self, reason: str, attempts: int, elapsed: float, status: int | None = None):
        super().__init__(f"{reason} (after {attempts} attempt{'s' if attempts != 1 else ''})")
        self.reason, self.attempts, self.elapsed, self.status = reason, attempts, elapsed, status


class AttemptTimedOut(TimeoutError):
    """One attempt used up its time."""


class ResponseTooLarge(ValueError):
    """The body is longer than the caller accepts."""


def longest_call_s(timeout: float, retries: int, backoff: float, deadline: float | None) -> float:
    """The longest :func:`request` may take with these settings (plus thread-scheduling slack)."""
    if deadline is not None:
        return float(deadline)
    return timeout * (retries + 1) + sum(backoff * 2 ** k for k in range(retries))


def _proxy_for(scheme: str, host: str) -> urllib.parse.SplitResult | None:
    proxy = urllib.request.getproxies().get(scheme)
    if not proxy or urllib.request.proxy_bypass(host):
        return None
    if "://" not in proxy:
        proxy = "http://" + proxy
    return urllib.parse.urlsplit(proxy)


def _connection(url: str, budget: float) -> tuple[http.client.HTTPConnection, str, dict[str, str]]:
    """A connection for ``url`` (through the environment's proxy, if any), the request target and
    extra headers."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"not an http(s) URL: {url!r}")
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    cls = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    proxy = _proxy_for(parts.scheme, parts.hostname)
    if proxy is None or not proxy.hostname:
        return cls(parts.hostname, parts.port, timeout=budget), target, {}
    extra = {}
    if proxy.username:
        token = f"{urllib.parse.unquote(proxy.username)}:{urllib.parse.unquote(proxy.password or '')}"
        extra["Proxy-Authorization"] = "Basic " + base64.b64encode(token.encode()).decode()
    if parts.scheme == "https":  # a CONNECT tunnel through the proxy
        conn = cls(proxy.hostname, proxy.port or 80, timeout=budget)
        conn.set_tunnel(parts.hostname, parts.port, headers=extra)
        return conn, target, {}
    # plain http: the proxy takes the absolute URL
    return http.client.HTTPConnection(proxy.hostname, proxy.port or 80, timeout=budget), url, extra


def send_once(url: str, body: bytes | None = None, headers: dict[str, str] | None = None, *,
              budget: float, max_bytes: int) -> tuple[int, bytes]:
    """One request, all of it within ``budget`` seconds: ``(status, body)``. POST when ``body`` is
    given, else GET. Raises :class:`AttemptTimedOut` when the time is spent, :class:`ResponseTooLarge`
    for a body over ``max_bytes``, ``OSError`` / ``http.client.HTTPException`` when the server
    cannot be reached or breaks the protocol."""
    conn, target, extra = _connection(url, budget)
    expired = threading.Event()
    # our own handle on the socket: the connection drops its reference once the server says it
    # will close, while the response still reads from it
    held: list[socket.socket] = []

    def watchdog():
        expired.set()  # before looking at the socket: see the check after connect()
        for sock in held:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    timer = threading.Timer(budget, watchdog)
    timer.daemon = True
    timer.start()
    response = None
    try:
        conn.connect()
        held.append(conn.sock)
        if expired.is_set():  # the watchdog ran before the socket existed
            raise AttemptTimedOut
        conn.request("GET" if body is None else "POST", target, body=body, headers={**(headers or {}), **extra})
        response = conn.getresponse()
        data = response.read(max_bytes + 1)
        if expired.is_set():
            raise AttemptTimedOut
        if len(data) > max_bytes:
            raise ResponseTooLarge(f"response body over {max_bytes} bytes")
        return response.status, data
    except (OSError, http.client.HTTPException) as e:
        # the socket's own timeout (also ``budget``) can fire before a watchdog thread that a busy
        # machine schedules late: a timeout either way
        if expired.is_set() or isinstance(e, TimeoutError):
            raise AttemptTimedOut from None
        raise
    finally:
        timer.cancel()
        if response is not None:
            response.close()
        conn.close()


def request(url: str, body: bytes | None = None, *, headers: dict[str, str] | None = None, timeout: float,
            retries: int = 0, backoff: float = 0.5, deadline: float | None = None,
            max_bytes: int = 4 * 1024 * 1024, parse: Callable[[bytes], T] = bytes,
            retry_status: frozenset[int] = RETRY_STATUS) -> T:
    """``parse(body)`` of the first 200 answer, with retries.

    Args:
        url: an ``http(s)`` URL.
        body: the POST body; None sends a GET.
        headers: request headers.
        timeout: seconds for one attempt, all of it.
        retries: attempts after the first, on connection errors, timeouts, bodies ``parse``
            rejects with a ``ValueError``, and the statuses in ``retry_status``.
        backoff: first pause between attempts in seconds, doubled each time.
        deadline: seconds for the whole call, pauses included (None: only each attempt is bounded).
        max_bytes: the longest body accepted; a longer one is a failed attempt.
        parse: turns the body into the result; a ``ValueError`` from it is a failed attempt.

    Raises :class:`RequestFailed` naming ``url`` and the last reason.
    """
    if not timeout > 0:
        raise ValueError(f"timeout must be positive, got {timeout}")
    start = time.monotonic()
    end = None if deadline is None else start + deadline
    reason, status, attempts = "no attempt made", None, 0
    for attempt in range(retries + 1):
        if attempt:
            pause = backoff * 2 ** (attempt - 1)
            if end is not None:
                pause = min(pause, end - time.monotonic())
            if pause > 0:
                time.sleep(pause)
        budget = timeout if end is None else min(timeout, end - time.monotonic())
        if budget <= 0:
            break
        attempts += 1
        try:
            status, data = send_once(url, body, headers, budget=budget, max_bytes=max_bytes)
        except AttemptTimedOut:
            reason, status = f"no answer from {url} within {budget:.3g}s", None
            continue
        except ResponseTooLarge as e:
            reason, status = f"bad response from {url}: {e}", 200
            continue
        except (OSError, http.client.HTTPException) as e:
            reason, status = f"cannot reach {url}: {type(e).__name__}: {e}", None
            continue
        if status != 200:
            reason = f"HTTP {status} from {url}: {data[:500].decode('utf-8', 'replace')}"
            if status in retry_status:
                continue
            break
        try:
            return parse(data)
        except ValueError as e:
            reason = f"bad response from {url}: {e}"
    raise RequestFailed(reason, attempts, time.monotonic() - start, status)
