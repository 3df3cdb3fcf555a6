"""The inspector's door: a random token, its own origin only, no writes on a GET.

Every request must name this server in its ``Host`` (so a DNS-rebinding page cannot reach it),
carry no ``Origin`` but this server's, and, for ``/api/``, send the token in the
``X-Redmem-Token`` header (a header no cross-site form can set); the page itself takes it from
``?token=``. Writes are POSTs with a JSON body. Each reply says its server time (``Server-Timing``).
"""

from __future__ import annotations

import hmac
import json
import secrets
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import parse_qs

__all__ = ["Guard", "new_token", "TOKEN_HEADER"]

TOKEN_HEADER = "x-redmem-token"
Scope = MutableMapping[str, Any]
ASGI = Callable[[Scope, Callable[[], Awaitable[Any]], Callable[[Any], Awaitable[None]]], Awaitable[None]]
#: Paths served to anyone who can reach the server: package files holding no data.
PUBLIC_PREFIX = "/static/"


def new_token() -> str:
    """A URL-safe random token (128 bits)."""
    return secrets.token_urlsafe(16)


class Guard:
    """ASGI middleware admitting only requests for ``hosts`` from their own origin with ``token``."""

    def __init__(self, app: ASGI, token: str, hosts: set[str]) -> None:
        self.app, self.token, self.hosts = app, token, hosts

    async def __call__(self, scope: Scope, receive: Callable[[], Awaitable[Any]],
                       send: Callable[[Any], Awaitable[None]]) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refusal = self.refusal(scope)
        if refusal is not None:
            await _refuse(send, refusal)
            return
        started = time.perf_counter()

        async def timed(message: Any) -> None:
            if message["type"] == "http.response.start":
                took = (time.perf_counter() - started) * 1000
                message = {**message, "headers": [*message.get("headers", []),
                                                  (b"server-timing", f"app;dur={took:.2f}".encode())]}
            await send(message)

        await self.app(scope, receive, timed)

    def refusal(self, scope: Scope) -> str | None:
        """Why the request is refused, or None."""
        headers = {k.decode().lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        host = headers.get("host", "")
        if host not in self.hosts:
            return f"unknown host {host!r}"
        origin = headers.get("origin")
        if origin is not None and origin.split("://", 1)[-1] != host:
            return f"requests from {origin!r} are refused"
        path = scope.get("path", "")
        if path.startswith(PUBLIC_PREFIX):
            return None
        if path.startswith("/api/"):
            given = headers.get(TOKEN_HEADER, "")
        else:
            given = parse_qs(scope.get("query_string", b"").decode()).get("token", [""])[0]
        if not hmac.compare_digest(given.encode(), self.token.encode()):
            return "a valid token is required (open the URL redmem ui printed)"
        if scope.get("method") not in ("GET", "HEAD", "POST"):
            return "only GET and POST are served"
        return None


async def _refuse(send: Callable[[Any], Awaitable[None]], reason: str) -> None:
    body = json.dumps({"error": {"type": "Forbidden", "message": reason}}).encode()
    await send({"type": "http.response.start", "status": 403,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})
