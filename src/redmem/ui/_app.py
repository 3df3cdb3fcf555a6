"""The inspector's web app: one HTML page and its JSON API (Starlette, imported when the app is built).

Reads are GETs; assembling (which records reads, as an agent's turn does) and every action are
POSTs whose JSON body says ``"confirm": true``. A RedmemError becomes ``{"error": {"type", "message"}}``
with status 400 (404 for a memory that does not exist).
"""

from __future__ import annotations

import json
from importlib.resources import files
from typing import Any

from ..cli_commands._memory import ChatMemory
from ..store._errors import RecordNotFound, RedmemError
from ._actions import ACTIONS, register_action, run_action
from ._guard import Guard
from ._inventory import PageRequest, memory_detail, memory_page, parse_filter, tenants
from ._lifecycle import lifecycle_actions
from ._playground import assemble_for

__all__ = ["build_app", "ASSETS"]

#: The page's files, shipped in the package (no CDN).
ASSETS = {"app.js": "text/javascript", "app.css": "text/css", "index.html": "text/html"}


def _asset(name: str) -> bytes:
    return files("redmem.ui").joinpath("static", name).read_bytes()


def _number(params: Any, name: str, default: int) -> int:
    value = params.get(name)
    try:
        return default if value in (None, "") else int(value)
    except ValueError:
        raise RedmemError(f"{name} must be a whole number, not {value!r}") from None


def build_app(token: str, hosts: set[str], default_agent: str | None = None) -> Any:
    """The guarded ASGI app (:class:`~.guard.Guard`) serving the page and its API (with the
    lifecycle's supersede and restore actions when the inspected model has the lifecycle)."""
    for name, lifecycle_action in lifecycle_actions(ChatMemory).items():
        register_action(name, lifecycle_action)
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response
    from starlette.routing import Route

    def guarded(handler: Any) -> Any:
        async def endpoint(request: Request) -> Response:
            try:
                body = await request.json() if request.method == "POST" else None
            except json.JSONDecodeError:
                return _error("ValidationError", "the request body must be JSON", 400)
            try:
                return JSONResponse(await _threaded(handler, request, body))
            except RecordNotFound as exc:
                return _error(type(exc).__name__, str(exc), 404)
            except RedmemError as exc:
                return _error(type(exc).__name__, str(exc), 400)
        return endpoint

    def _error(kind: str, message: str, status: int) -> Response:
        return JSONResponse({"error": {"type": kind, "message": message}}, status_code=status)

    async def _threaded(handler: Any, request: Request, body: Any) -> Any:
        from starlette.concurrency import run_in_threadpool
        return await run_in_threadpool(handler, request, body)

    def page(request: Request) -> Response:
        return Response(_asset("index.html"), media_type="text/html",
                        headers={"cache-control": "no-store", "referrer-policy": "no-referrer",
                                 "content-security-policy": "default-src 'self'; frame-ancestors 'none'"})

    def static(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in ASSETS or name == "index.html":
            return Response(status_code=404)
        return Response(_asset(name), media_type=ASSETS[name])

    def settings(request: Request, body: Any) -> Any:
        return {"default_agent": default_agent, "actions": sorted(ACTIONS)}

    def list_tenants(request: Request, body: Any) -> Any:
        return {"tenants": tenants()}

    def memories(request: Request, body: Any) -> Any:
        params = request.query_params
        page_request = PageRequest(request.path_params["agent"], params.get("q", ""),
                                   parse_filter(params.get("filter", "")), params.get("sort", "decay"),
                                   _number(params, "offset", 0), _number(params, "limit", 50))
        return memory_page(page_request)

    def one_memory(request: Request, body: Any) -> Any:
        return memory_detail(request.path_params["agent"], request.path_params["memory_id"])

    def assemble(request: Request, body: Any) -> Any:
        body = _confirmed(body)
        return assemble_for(request.path_params["agent"], str(body.get("question", "")),
                            _number(body, "max_items", 10), _number(body, "max_tokens", 2000))

    def action(request: Request, body: Any) -> Any:
        body = _confirmed(body)
        return run_action(request.path_params["name"], request.path_params["agent"], body)

    routes = [
        Route("/", page), Route("/static/{name}", static),
        Route("/api/settings", guarded(settings)), Route("/api/tenants", guarded(list_tenants)),
        Route("/api/agents/{agent}/memories", guarded(memories)),
        Route("/api/agents/{agent}/memories/{memory_id}", guarded(one_memory)),
        Route("/api/agents/{agent}/assemble", guarded(assemble), methods=["POST"]),
        Route("/api/agents/{agent}/actions/{name}", guarded(action), methods=["POST"]),
    ]
    return Guard(Starlette(routes=routes), token, hosts)


def _confirmed(body: Any) -> dict[str, Any]:
    """The POST body, which must be a JSON object saying ``"confirm": true``."""
    if not isinstance(body, dict) or body.get("confirm") is not True:
        raise RedmemError('a POST must send a JSON object with "confirm": true')
    return body
