"""``redmem mcp --http``: streamable HTTP behind a bearer token, on TCP or on an owner-only unix socket.

Every HTTP request must carry ``Authorization: Bearer <token>`` (401 otherwise) and declare a
body of at most ``max_bytes`` (413 otherwise), both answered with a JSON-RPC error body the SDK
clients surface. The token is the first line of ``--token-file``, else ``REDMEM_MCP_TOKEN``, else
generated at start (printed on stderr); never a command-line value, which other local users see
in the process list. Per-agent tokens (``--agent-tokens``) each bind the requests that carry them
to their one agent (:data:`~.mcp_agents.request_binding`). ``uvicorn`` (a dependency of the
``mcp`` SDK) is imported only in :func:`serve_http`.
"""

import hmac
import json
import os
import secrets
import socket
import stat
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import Any

from ..store._errors import ConfigurationError
from ._mcp_agents import AgentBinding, request_binding
from ._mcp_stdio import INVALID_REQUEST

__all__ = ["TOKEN_ENV", "BearerGuard", "bearer_token", "bind_owner_socket", "serve_http"]

#: The environment variable holding the HTTP server's bearer token.
TOKEN_ENV = "REDMEM_MCP_TOKEN"
#: Unauthorized, in the code range JSON-RPC leaves to servers.
UNAUTHORIZED = -32001

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]


def bearer_token(token_file: Path | None) -> tuple[str, str]:
    """The token and where it came from: ``token_file``'s first line, else ``REDMEM_MCP_TOKEN``,
    else a new random one (32 bytes, URL-safe). ConfigurationError for an unreadable or empty file."""
    if token_file is not None:
        try:
            lines = token_file.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigurationError(f"--token-file {str(token_file)!r} cannot be read: {exc}") from None
        if not lines or not lines[0].strip():
            raise ConfigurationError(f"--token-file {str(token_file)!r} is empty: put the token on its first line")
        return lines[0].strip(), f"from {token_file}"
    if os.environ.get(TOKEN_ENV):
        return os.environ[TOKEN_ENV], f"from {TOKEN_ENV}"
    return secrets.token_urlsafe(32), "generated"


class BearerGuard:
    """ASGI wrapper: an HTTP request passes only with a known bearer token and a declared body of at
    most ``max_bytes``; the server's ``token`` acts for the server's agents, each of ``agent_tokens``
    for its own agent alone."""

    def __init__(self, app: App, token: str, max_bytes: int, agent_tokens: dict[str, AgentBinding] | None = None) -> None:
        if token in (agent_tokens or {}):
            raise ConfigurationError("the server's bearer token is also a per-agent token: give each its own")
        self.app = app
        self.bindings: list[tuple[bytes, AgentBinding | None]] = [
            (token.encode("utf-8"), None), *((key.encode("utf-8"), bound) for key, bound in (agent_tokens or {}).items())]
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        scheme, _, given = headers.get(b"authorization", b"").partition(b" ")
        known = [bound for token, bound in self.bindings if hmac.compare_digest(given.strip(), token)]
        if scheme.lower() != b"bearer" or not known:
            await _refuse(send, 401, UNAUTHORIZED, f"Unauthorized: send 'Authorization: Bearer <token>' (the token "
                          f"the server printed at start, or its {TOKEN_ENV} or --token-file)",
                          [(b"www-authenticate", b'Bearer realm="redmem-mcp"')])
            return
        declared = headers.get(b"content-length", b"0")
        if declared.isdigit() and int(declared) > self.max_bytes:
            await _refuse(send, 413, INVALID_REQUEST, f"Invalid Request: a body of {int(declared)} bytes is over "
                          f"the server's limit of {self.max_bytes} (--max-request-bytes)")
            return
        bound = request_binding.set(known[0])
        try:
            await self.app(scope, receive, send)
        finally:
            request_binding.reset(bound)


async def _refuse(send: Send, status: int, code: int, message: str,
                  extra_headers: list[tuple[bytes, bytes]] | None = None) -> None:
    """Answer with ``status`` and a JSON-RPC error body (id null: the request was not read)."""
    body = json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
               *(extra_headers or [])]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def bind_owner_socket(path: Path) -> socket.socket:
    """A listening unix socket at ``path`` that only its owner can connect to (mode 0600, created so).

    A stale socket file left by a server that is gone is replaced; ConfigurationError if a server
    still answers there, or if ``path`` is something other than a socket."""
    if path.is_socket():
        with socket.socket(socket.AF_UNIX) as probe:
            if probe.connect_ex(str(path)) == 0:
                raise ConfigurationError(f"another server is listening on {path}: stop it or choose another --http-socket")
        path.unlink()
    elif path.exists() or path.is_symlink():
        raise ConfigurationError(f"--http-socket {str(path)!r} exists and is not a socket: choose another path")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    previous = os.umask(0o177)
    try:
        listener.bind(str(path))
    except OSError as exc:
        listener.close()
        raise ConfigurationError(f"cannot listen on --http-socket {str(path)!r}: {exc}") from None
    finally:
        os.umask(previous)
    os.chmod(path, stat.S_IRUSR | stat.S_IWUSR)
    listener.listen(128)
    return listener


def serve_http(guarded: BearerGuard, host: str, port: int, socket_path: Path | None) -> None:
    """Serve the guarded app on ``host:port``, or on the unix socket ``socket_path`` (removed when
    the server stops), until the process is stopped."""
    import anyio
    import uvicorn

    if socket_path is None:
        anyio.run(uvicorn.Server(uvicorn.Config(guarded, host=host, port=port, log_level="warning")).serve)
        return
    path = socket_path

    class SocketServer(uvicorn.Server):
        """Removes the socket file as it shuts down: after a stop signal, uvicorn re-raises the signal
        at the end of ``serve``, so the process ends before any code after it runs."""

        async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
            await super().shutdown(sockets)
            path.unlink(missing_ok=True)

    listener = bind_owner_socket(socket_path)
    try:
        anyio.run(SocketServer(uvicorn.Config(guarded, log_level="warning")).serve, [listener])
    finally:
        listener.close()
        socket_path.unlink(missing_ok=True)
