"""``redmem ui``: serve the memory inspector on 127.0.0.1 with a random token in its URL."""

from __future__ import annotations

import argparse
import socket
from urllib.parse import quote

from rich.console import Console
from rich.markup import escape

from ..cli_commands._runtime import print_notes, start
from ..store._errors import ConfigurationError
from ._app import build_app
from ._guard import new_token

__all__ = ["add_arguments", "run", "page_url", "allowed_hosts"]

DEFAULT_PORT = 8765


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default: {DEFAULT_PORT}; 0: any free)")
    parser.add_argument("--agent", help="the agent the page opens on (default: the first one listed)")


def allowed_hosts(host: str, port: int) -> set[str]:
    """The ``Host`` values a request may carry: this address and port (and localhost for a loopback one)."""
    names = {host} | ({"localhost", "127.0.0.1"} if host in ("127.0.0.1", "localhost") else set())
    return {f"{name}:{port}" for name in names}


def page_url(host: str, port: int, token: str, agent: str | None = None) -> str:
    return f"http://{host}:{port}/?token={quote(token)}" + (f"#/agent/{quote(agent)}" if agent else "")


def run(console: Console, args: argparse.Namespace) -> None:
    """Serve until the process is stopped; the URL (with its token) is printed once."""
    try:
        import uvicorn
    except ImportError as exc:
        raise ConfigurationError(f"redmem ui needs the ASGI server of the MCP extra: pip install 'redmem[mcp]' ({exc})"
                                 ) from None
    runtime = start(args)
    print_notes(console, runtime)
    listener = socket.create_server((args.host, args.port))
    port = listener.getsockname()[1]
    token = new_token()
    app = build_app(token, allowed_hosts(args.host, port), args.agent)
    console.print(f"memory inspector of {escape(runtime.describe())}: {page_url(args.host, port, token, args.agent)}",
                  highlight=False, soft_wrap=True)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    server.run(sockets=[listener])
