"""What ``agentgym serve`` bounds and refuses, as one ASGI middleware in front of OpenEnv's app.

- **Host and Origin.** A request whose ``Host`` names a domain other than ``localhost`` (a DNS
  rebinding page) is refused with 403, unless ``allowed_hosts`` lists it; IP addresses are always
  accepted, as a rebinding page cannot send one. A request with an ``Origin`` (a browser page) is
  refused with 403 unless the page came from this server (same host and port, as the ``--web`` page
  does) or ``allowed_origins`` lists it. Clients that are not browsers send no ``Origin``.
- **Size.** An HTTP body over ``max_message_bytes`` is refused with a short 413 before it is read
  in full; a WebSocket message over it closes the session (code 1009). uvicorn's ``ws_max_size``
  (set by ``agentgym serve``) refuses such a message before it is even assembled.
- **Sessions.** At most ``max_sessions`` WebSocket sessions are open; one more gets OpenEnv's
  ``CAPACITY_REACHED`` error and a close (code 1013) whose reason says why. A session that waits for
  its client for more than ``session_timeout_s`` is closed (code 1001, with the reason), which
  frees its slot and closes its env.
- **A client that leaves** without closing its session costs one log line, not a traceback.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import logging
from collections.abc import Awaitable, Callable, Iterable
from typing import Any
from urllib.parse import urlsplit

Message = dict[str, Any]
log = logging.getLogger("uvicorn.error")

DEFAULT_MAX_MESSAGE_BYTES = 4 * 1024 * 1024
CLOSE_GOING_AWAY, CLOSE_TOO_BIG, CLOSE_TRY_LATER = 1001, 1009, 1013
# A client that closes its session sends one of these; uvicorn reports a lost connection as 1006, or
# (its sans-I/O implementation) as 1005, the code of a close frame that gives none.
NORMAL_CLOSES = (1000, 1001)


def _shown(value: str, limit: int = 80) -> str:
    """A header value as quoted in an error: repr'd and cut, as it comes from the client."""
    return repr(value if len(value) <= limit else value[:limit] + "...")


def host_name(host: str) -> str:
    """The name part of a ``Host`` header: no port, no brackets, lower case, no trailing dot."""
    host = host.strip().lower()
    if host.startswith("["):
        host = host[1:host.find("]")] if "]" in host else host[1:]
    elif host.count(":") == 1:
        host = host.split(":", 1)[0]
    return host.rstrip(".")


def short_errors(errors: Any) -> Any:
    """Validation errors without the ``input`` they quote (which can be the whole request)."""
    if not isinstance(errors, list):
        return errors
    return [{"loc": list(e.get("loc", ())), "msg": str(e.get("msg", ""))[:200], "type": e.get("type")}
            if isinstance(e, dict) else str(e)[:200] for e in errors[:10]]


class ServeLimits:
    """ASGI middleware: see the module docstring. ``app.add_middleware(ServeLimits, ...)``."""

    def __init__(self, app: Callable[..., Awaitable[None]], *, max_sessions: int,
                 session_timeout_s: float | None, max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
                 allowed_hosts: Iterable[str] = (), allowed_origins: Iterable[str] = ()):
        self.app = app
        self.max_sessions = max_sessions
        self.session_timeout_s = session_timeout_s
        self.max_message_bytes = max_message_bytes
        self.allowed_hosts = {host_name(h) if h != "*" else h for h in allowed_hosts}
        self.allowed_origins = {o.strip().lower().rstrip("/") for o in allowed_origins}
        self.open_sessions = 0  # touched only on the event loop

    async def __call__(self, scope: Message, receive, send) -> None:
        if scope["type"] not in ("http", "websocket"):
            return await self.app(scope, receive, send)
        refusal = self.refusal(scope)
        if refusal is not None:
            return await self.refuse(scope, receive, send, 403, refusal)
        if scope["type"] == "http":
            return await self.http(scope, receive, send)
        if self.open_sessions >= self.max_sessions:
            return await self.refuse_at_capacity(receive, send)
        self.open_sessions += 1
        try:
            await self.websocket(scope, receive, send)
        finally:
            self.open_sessions -= 1

    # ----- Host and Origin --------------------------------------------------------------------
    def refusal(self, scope: Message) -> str | None:
        """Why the request's ``Host`` or ``Origin`` is refused, or None."""
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        host = headers.get("host")
        if host is not None and not self.host_allowed(host):
            return (f"refused: Host {_shown(host)} is not a name of this server; serve it with "
                    f"--allow-host {host_name(host)[:80]} to accept requests to that name")
        origin = headers.get("origin")
        if origin is not None and not self.origin_allowed(origin, host):
            return (f"refused: a request from the web page origin {_shown(origin)}; serve it with "
                    "--allow-origin ORIGIN to let that page drive this server")
        return None

    def host_allowed(self, host: str) -> bool:
        name = host_name(host)
        if name == "localhost" or "*" in self.allowed_hosts or name in self.allowed_hosts:
            return True
        try:
            ipaddress.ip_address(name)
        except ValueError:
            return False
        return True

    def origin_allowed(self, origin: str, host: str | None) -> bool:
        normalized = origin.strip().lower().rstrip("/")
        if "*" in self.allowed_origins or normalized in self.allowed_origins:
            return True
        parts = urlsplit(normalized)
        return parts.scheme in ("http", "https") and host is not None and parts.netloc == host.strip().lower()

    # ----- HTTP -------------------------------------------------------------------------------
    async def http(self, scope: Message, receive, send) -> None:
        too_big = (f"request body over {self.max_message_bytes} bytes; this server takes at most "
                   "--max-message-bytes per request")
        length = next((v for k, v in scope.get("headers", []) if k.lower() == b"content-length"), None)
        if length is not None and length.strip().isdigit() and int(length) > self.max_message_bytes:
            return await self.refuse(scope, receive, send, 413, too_big)
        # Read the body here, up to the limit, and hand it on whole: nothing past the limit is kept.
        chunks, size = [], 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client left before sending its body
            size += len(message.get("body", b""))
            if size > self.max_message_bytes:
                return await self.refuse(scope, receive, send, 413, too_big)
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                break
        body, handed = b"".join(chunks), False

        async def replay() -> Message:
            nonlocal handed
            if not handed:
                handed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    async def refuse(self, scope: Message, receive, send, status: int, detail: str) -> None:
        body = json.dumps({"detail": detail}).encode()
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
        if scope["type"] == "http":
            await send({"type": "http.response.start", "status": status, "headers": headers})
            await send({"type": "http.response.body", "body": body})
            return
        await receive()  # websocket.connect
        if "websocket.http.response" in scope.get("extensions", {}):
            await send({"type": "websocket.http.response.start", "status": status, "headers": headers})
            await send({"type": "websocket.http.response.body", "body": body})
        else:  # the server answers a close before the handshake with a 403
            await send({"type": "websocket.close", "code": 1008, "reason": detail[:120]})

    # ----- WebSocket sessions -----------------------------------------------------------------
    async def refuse_at_capacity(self, receive, send) -> None:
        reason = (f"server at capacity: {self.open_sessions} of {self.max_sessions} sessions open "
                  "(--max-sessions); try again later")
        await receive()  # websocket.connect
        await send({"type": "websocket.accept"})
        await send({"type": "websocket.send", "text": json.dumps({"type": "error", "data": {
            "message": reason, "code": "CAPACITY_REACHED", "active_sessions": self.open_sessions,
            "max_sessions": self.max_sessions}})})
        await send({"type": "websocket.close", "code": CLOSE_TRY_LATER, "reason": reason[:120]})

    async def websocket(self, scope: Message, receive, send) -> None:
        timeout = self.session_timeout_s
        pending: asyncio.Future | None = None
        closing: tuple[int, str] | None = None  # the close this side imposes: (code, reason)
        left: int | None = None  # the client's close code, once it went away
        gone = False  # a send failed: the connection is dead

        async def guarded_receive() -> Message:
            nonlocal pending, closing, left
            if closing is not None or gone:
                return {"type": "websocket.disconnect", "code": closing[0] if closing else 1006}
            if pending is None:
                pending = asyncio.ensure_future(receive())
            await asyncio.wait({pending}, timeout=timeout)
            if not pending.done():
                closing = (CLOSE_GOING_AWAY, f"this session sat idle for more than {timeout:g} s and was closed "
                                             "(--session-timeout); open a new one")
                log.info("agentgym serve: closed a session idle for more than %g s", timeout)
                return {"type": "websocket.disconnect", "code": CLOSE_GOING_AWAY}
            message, pending = pending.result(), None
            if message["type"] == "websocket.disconnect":
                left = message.get("code", 1005)
            elif len(message.get("text") or message.get("bytes") or b"") > self.max_message_bytes:
                closing = (CLOSE_TOO_BIG, f"message over {self.max_message_bytes} bytes (--max-message-bytes)")
                return {"type": "websocket.disconnect", "code": CLOSE_TOO_BIG}
            return message

        async def guarded_send(message: Message) -> None:
            nonlocal gone
            if gone or left is not None:
                return  # nobody to send to; the session is ending
            if message["type"] == "websocket.close" and closing is not None:
                message = {**message, "code": closing[0], "reason": closing[1][:120]}
            elif message["type"] == "websocket.send" and (message.get("text") or "").startswith('{"type":"error"'):
                message = {**message, "text": _without_inputs(message["text"])}
            try:
                await send(message)
            except OSError:  # uvicorn's ClientDisconnected: the client went away mid-reply
                gone = True

        try:
            await self.app(scope, guarded_receive, guarded_send)
        except Exception as e:
            if not gone and left is None:
                raise
            log.warning("agentgym serve: a session ended when its client left: %s: %s", type(e).__name__, e)
        finally:
            if pending is not None:
                pending.cancel()
        if gone or (left is not None and left not in NORMAL_CLOSES):
            log.warning("agentgym serve: a client left without closing its session (WebSocket code %s); "
                        "its env is closed", left if left is not None else 1006)


def _without_inputs(text: str) -> str:
    """An OpenEnv error reply without the rejected message quoted back in it."""
    try:
        reply = json.loads(text)
        data = reply["data"]
        if "errors" in data:
            data["errors"] = short_errors(data["errors"])
        return json.dumps(reply)
    except (ValueError, KeyError, TypeError):
        return text
