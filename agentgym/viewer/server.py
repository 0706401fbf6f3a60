"""The viewer's local HTTP server: the page, its script and stylesheet, and the JSON endpoints of
:mod:`agentgym.viewer.api`, on 127.0.0.1 only (standard library ``http.server``, one thread per
connection).

Many requests at once are all answered: the listening queue holds :data:`BACKLOG` connections
(the standard library's 5 turned a burst of a page's requests away), at most :data:`WORKERS`
endpoints read episode files at a time (so memory stays bounded by a few pages whatever comes in),
and the others wait their turn. A connection that sends no whole request within :data:`TIMEOUT`
seconds (a half-sent request, a client gone quiet) is closed, and so is one that stops reading
its answer.

Episode text is data: the page inserts it as text, and the server's Content-Security-Policy lets
only the viewer's own script run, so markup or script in an observation or reply is never run even
if it were inserted as markup. A request whose ``Host`` is not this server's loopback address is
refused, so a web page elsewhere cannot read the episodes through a rebound DNS name.
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

from agentgym.viewer.api import ENDPOINTS
from agentgym.viewer.sources import Source, SourceError

ASSETS = Path(__file__).with_name("assets")
HOST = "127.0.0.1"
TIMEOUT = 10.0
"""Seconds a connection may take to send its request, or to read an answer, before it is closed."""
BACKLOG = 512
"""Connections the listening socket holds while every thread is busy accepting."""
WORKERS = 4
"""Endpoints answered at once (the rest wait): each may hold an episode line of up to 16 MB."""
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
       "base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
TYPES = {"app.js": "text/javascript; charset=utf-8", "app.css": "text/css; charset=utf-8",
         "index.html": "text/html; charset=utf-8"}


def asset(name: str) -> bytes:
    """One of the page's own files, as served (``index.html``, ``app.js``, ``app.css``)."""
    return (ASSETS / name).read_bytes()


def to_json(data) -> bytes:
    """JSON a page can read: ASCII only (so no line separator breaks a script), no NaN."""
    return json.dumps(data, ensure_ascii=True, allow_nan=False, separators=(",", ":")).encode()


class _Handler(BaseHTTPRequestHandler):
    server_version = "agentgym-view"
    sources: Sequence[Source] = ()
    workers = threading.BoundedSemaphore(WORKERS)
    timeout = TIMEOUT  # socketserver sets it on the connection: a read or write that waits longer fails

    def log_message(self, format, *args):  # noqa: A002  (the base class's name)
        pass  # a page load is a dozen requests: nothing worth a line each

    def _send(self, status: int, body: bytes, ctype: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Content-Security-Policy", CSP)
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)

    def _error(self, status: int, message: str) -> None:
        self._send(status, to_json({"error": message}), "application/json")

    def do_GET(self):  # noqa: N802  (http.server's name)
        host = (self.headers.get("Host") or "").rsplit(":", 1)[0]
        if host not in (HOST, "localhost"):
            return self._error(403, f"this viewer answers on {HOST} only")
        url = urlsplit(self.path)
        name = url.path.lstrip("/") or "index.html"
        if name in TYPES:
            return self._send(200, asset(name), TYPES[name])
        if not name.startswith("api/") or name[4:] not in ENDPOINTS:
            return self._error(404, f"no page {url.path!r}")
        params = dict(parse_qsl(url.query, keep_blank_values=True))
        try:
            with self.workers:
                data = ENDPOINTS[name[4:]](self.sources, params)
        except (SourceError, OSError) as e:
            return self._error(404, str(e))
        except Exception as e:  # one bad file must not drop the connection: the page says what failed
            return self._error(500, f"could not answer {url.path}: {type(e).__name__}: {e}")
        self._send(200, to_json(data), "application/json")


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = BACKLOG

    def handle_error(self, request, client_address):
        error = sys.exc_info()[1]
        if isinstance(error, (ConnectionError, TimeoutError)):
            return  # the client went away or went quiet: its connection is closed, nothing to report
        print(f"agentgym view: a request from {client_address[0]} failed: {type(error).__name__}: {error}",
              file=sys.stderr, flush=True)


def make_server(sources: Sequence[Source], port: int = 0, timeout: float = TIMEOUT) -> ThreadingHTTPServer:
    """A server of ``sources`` on 127.0.0.1 (``port`` 0: a free one); ``server_address[1]`` is its port.
    ``timeout``: seconds a connection may take to send its request or read its answer."""
    handler = type("Handler", (_Handler,), {"sources": list(sources), "timeout": timeout,
                                            "workers": threading.BoundedSemaphore(WORKERS)})
    return _Server((HOST, port), handler)
