"""``agentgym serve ENV_ID``: any registered env as an OpenEnv server (``pip install "agentgym[serve]"``).

    agentgym serve ToolQA-v0 --port 8000
    agentgym serve ScienceWorld-v0 --env-kwargs '{"max_turns": 50}' --max-sessions 4
    agentgym serve ALFWorld-v0 --web          # and play it at http://127.0.0.1:8000/web

Each WebSocket session (``/ws``) gets its own env; the env and its engine are closed when the
session ends: the client closed it, its connection died (uvicorn pings every 20 s), or it sat idle
for ``--session-timeout`` seconds (the session is closed, and its slot freed). At most
``--max-sessions`` sessions and engines run at once (a stateless ``POST /reset`` holds one while it
runs); one more is refused and told why. The server binds to 127.0.0.1 unless told otherwise, and
refuses requests from web pages of other origins and to host names other than ``localhost``
(``--allow-origin``, ``--allow-host``), and bodies or messages over ``--max-message-bytes``.
See :mod:`agentgym.integrations.openenv` for the action and observation types and
:mod:`agentgym.integrations.serve_limits` for the bounds.
"""

from __future__ import annotations

import argparse
import json
import math
import socket
import sys

from agentgym.extras import require_for_script
from agentgym.integrations.serve_limits import DEFAULT_MAX_MESSAGE_BYTES

LOOPBACK = ("127.0.0.1", "localhost", "::1")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="agentgym serve", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("env_id", help="registered env id (`agentgym list`)")
    parser.add_argument("--env-kwargs", default="{}", metavar="JSON",
                        help='keyword arguments of gym.make as a JSON object, e.g. \'{"max_turns": 5}\'')
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default: this machine only)")
    parser.add_argument("--port", type=int, default=8000, help="port to bind (0: any free port, printed at start)")
    parser.add_argument("--max-sessions", type=int, default=16,
                        help="WebSocket sessions, and engines (envs), that may run at once")
    parser.add_argument("--session-timeout", type=float, default=600.0,
                        help="seconds a session may wait for its client before it is closed, slot and env "
                             "included (0: never)")
    parser.add_argument("--max-message-bytes", type=int, default=DEFAULT_MAX_MESSAGE_BYTES,
                        help="largest HTTP request body or WebSocket message; larger ones are refused")
    parser.add_argument("--allow-origin", action="append", default=[], metavar="ORIGIN",
                        help="a web page origin (e.g. https://app.example.org) that may drive the server besides its "
                             "own pages; repeat for more, '*' for any")
    parser.add_argument("--allow-host", action="append", default=[], metavar="NAME",
                        help="a host name clients may reach the server by, besides localhost and IP addresses; "
                             "repeat for more, '*' for any")
    parser.add_argument("--web", action="store_true",
                        help="also serve a page at /web where a person plays the env in a browser")
    parser.add_argument("--log-level", default="warning", choices=["critical", "error", "warning", "info", "debug"],
                        help="uvicorn's log level")
    return parser


def env_kwargs_from_json(text: str) -> dict:
    """``--env-kwargs`` as a dict, or SystemExit saying what is wrong with it."""
    from agentgym.envs.arguments import json_object

    try:
        return json_object(text, "--env-kwargs")
    except ValueError as e:
        raise SystemExit(str(e)) from None


def check_env(env_id: str, kwargs: dict) -> None:
    """Fail at start, not at the first session, on an unknown id or kwargs the env rejects."""
    import gymnasium as gym

    import agentgym  # noqa: F401  registers the envs
    from agentgym.envs.env_ids import make_error_text, require_registered

    try:
        require_registered(env_id)
    except ValueError as e:
        raise SystemExit(str(e)) from None
    try:
        gym.make(env_id, **kwargs).close()
    except gym.error.DependencyNotInstalled as e:
        raise SystemExit(str(e)) from None
    except (TypeError, ValueError, KeyError) as e:
        raise SystemExit(f"cannot make {env_id} with --env-kwargs {json.dumps(kwargs)}: {make_error_text(e)}") from None


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port`` (IPv4 or IPv6), or SystemExit if the address is taken."""
    try:
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(2048)
    except OSError as e:
        raise SystemExit(f"cannot listen on {host}:{port}: {e}") from None
    return sock


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    require_for_script(["openenv", "fastapi", "uvicorn"], "serve", "agentgym serve")
    if args.max_sessions < 1:
        raise SystemExit(f"--max-sessions must be >= 1, got {args.max_sessions}")
    if not 0 <= args.port <= 65535:
        raise SystemExit(f"--port must be between 0 and 65535 (0: any free port), got {args.port}")
    if not (math.isfinite(args.session_timeout) and args.session_timeout >= 0):
        raise SystemExit(f"--session-timeout must be a finite number of seconds >= 0 (0: never), "
                         f"got {args.session_timeout}")
    if args.max_message_bytes < 1:
        raise SystemExit(f"--max-message-bytes must be >= 1, got {args.max_message_bytes}")
    kwargs = env_kwargs_from_json(args.env_kwargs)
    check_env(args.env_id, kwargs)

    import uvicorn

    from agentgym.integrations.openenv import make_app

    # a name given to --host is a name clients reach the server by
    hosts = [*args.allow_host, *([args.host] if args.host not in LOOPBACK else [])]
    app = make_app(args.env_id, kwargs, max_sessions=args.max_sessions,
                   session_timeout_s=args.session_timeout or None, max_message_bytes=args.max_message_bytes,
                   allowed_hosts=hosts, allowed_origins=args.allow_origin)
    if args.web:
        from agentgym.integrations.web import add_play_page

        add_play_page(app, args.env_id)
    sock = bind(args.host, args.port)
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    if args.host not in LOOPBACK:
        print(f"agentgym serve: listening on {args.host}, not only this machine: anyone who can reach it can "
              "run episodes here", file=sys.stderr)
    print(f"agentgym serve: {args.env_id} on http://{shown}:{port} (WebSocket sessions at /ws, at most "
          f"{args.max_sessions}{'; play it at /web' if args.web else ''})", flush=True)
    server = uvicorn.Server(uvicorn.Config(app, log_level=args.log_level, ws_ping_interval=20.0,
                                           ws_ping_timeout=20.0, ws_max_size=args.max_message_bytes))
    try:
        server.run(sockets=[sock])
    finally:
        app.state.sessions.close_all()
    return 0


if __name__ == "__main__":
    sys.exit(main())
