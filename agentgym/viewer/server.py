"""The viewer's local HTTP server: the page, its script and stylesheet, and the JSON endpoints of
:mod:`agentgym.viewer.api`, on 127.0.0.1 only (standard library ``http.server``, one thread per
request).

Episode text is data: the page inserts it as text, and the server's Content-Security-Policy lets
only the viewer's own script run, so markup or script in an observation or reply is never run even
if it were inserted as markup. A request whose ``Host`` is not this server's loopback address is
refused, so a web page elsewhere cannot read the episodes through a rebound DNS name.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

from agentgym.viewer.api import ENDPOINTS
from agentgym.viewer.sources import Source, SourceError

ASSETS = Path(__file__).with_name("assets")
HOST = "127.0.0.1"
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
    lock = threading.Lock()

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
            with self.lock:  # sources cache parsed files; one reader at a time keeps that simple
                data = ENDPOINTS[name[4:]](self.sources, params)
        except (SourceError, OSError) as e:
            return self._error(404, str(e))
        except Exception as e:  # one bad file must not drop the connection: the page says what failed
            return self._error(500, f"could not answer {url.path}: {type(e).__name__}: {e}")
        self._send(200, to_json(data), "application/json")


def make_server(sources: Sequence[Source], port: int = 0) -> ThreadingHTTPServer:
    """A server of ``sources`` on 127.0.0.1 (``port`` 0: a free one); ``server_address[1]`` is its port."""
    handler = type("Handler", (_Handler,), {"sources": list(sources), "lock": threading.Lock()})
    server = ThreadingHTTPServer((HOST, port), handler)
    server.daemon_threads = True
    return server
