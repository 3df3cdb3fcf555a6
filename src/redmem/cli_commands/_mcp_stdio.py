"""MCP over stdio with checked frames: one JSON-RPC message a line, at most ``max_bytes`` long.

The SDK's own stdio transport reads lines of any length and drops, without a reply, a line that
is not JSON, not a JSON-RPC message or holds a lone surrogate; the client then waits for an
answer that never comes. Here each such line gets a JSON-RPC error: -32700 (parse error: not
UTF-8, not JSON), -32600 (invalid request: too long, not a JSON-RPC message) or -32602 (invalid
params: a string that is not Unicode text), with the request's ``id`` when it can be read.
The ``mcp`` SDK and ``anyio`` are imported only when :func:`serve_stdio` runs.
"""

import json
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, BinaryIO

__all__ = ["DEFAULT_MAX_REQUEST_BYTES", "FrameRefused", "PARSE_ERROR", "INVALID_REQUEST", "INVALID_PARAMS",
           "check_frame", "leading_id", "request_id", "serve_stdio"]

#: The largest request (one stdio line, one HTTP body) an MCP server takes by default: 1 MiB.
DEFAULT_MAX_REQUEST_BYTES = 1 << 20
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INVALID_PARAMS = -32602
_SURROGATE = re.compile("[\ud800-\udfff]")
_DRAIN_CHUNK = 1 << 16


@dataclass
class FrameRefused(Exception):
    """A line that is no acceptable JSON-RPC message: the error to answer it with."""

    code: int
    message: str
    id: int | str | None = None


def request_id(value: Any) -> int | str | None:
    """``value`` if it can be a JSON-RPC id (a string or an integer), else None (the spec's null id)."""
    return value if isinstance(value, (str, int)) and not isinstance(value, bool) else None


def leading_id(prefix: str) -> int | str | None:
    """The ``id`` of a JSON object cut short, read member by member up to the cut (the SDKs write
    ``id`` before ``params``, so an oversized request's id is in its first bytes); None if not there."""
    decoder = json.JSONDecoder()
    at = _after_space(prefix, 0)
    if prefix[at:at + 1] != "{":
        return None
    try:
        while True:
            key, at = decoder.raw_decode(prefix, _after_space(prefix, at + 1))
            at = _after_space(prefix, at)
            if prefix[at:at + 1] != ":":
                return None
            value, at = decoder.raw_decode(prefix, _after_space(prefix, at + 1))
            if at == len(prefix):
                return None  # a number at the cut may be cut short itself
            if key == "id":
                return request_id(value)
            at = _after_space(prefix, at)
            if prefix[at:at + 1] != ",":
                return None
    except json.JSONDecodeError:
        return None


def _after_space(text: str, at: int) -> int:
    """The index of the first non-whitespace character of ``text`` from ``at`` (JSON's whitespace)."""
    return len(text) - len(text[at:].lstrip(" \t\n\r"))


def lone_surrogate_path(value: Any) -> str | None:
    """Where in a decoded JSON value a string (or key) holds a lone surrogate, as ``a.b.0``; None if nowhere."""
    pending: list[tuple[str, Any]] = [("", value)]
    while pending:
        path, item = pending.pop()
        if isinstance(item, str) and _SURROGATE.search(item):
            return path or "(the message)"
        if isinstance(item, dict):
            for key, inner in item.items():
                inner_path = f"{path}.{key}" if path else str(key)
                if _SURROGATE.search(key):
                    return inner_path
                pending.append((inner_path, inner))
        elif isinstance(item, list):
            pending.extend((f"{path}.{index}", inner) for index, inner in enumerate(item))
    return None


def check_frame(line: bytes) -> Any:
    """The JSON value of one complete line; FrameRefused for bytes that are not UTF-8 JSON or a
    string that is not Unicode text (a lone surrogate escape such as ``\\ud800``)."""
    try:
        message = json.loads(line.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise FrameRefused(PARSE_ERROR, f"Parse error: the line is not UTF-8 ({exc.reason} at byte {exc.start})") from None
    except (json.JSONDecodeError, RecursionError) as exc:
        raise FrameRefused(PARSE_ERROR, f"Parse error: the line is not JSON ({exc})") from None
    at = lone_surrogate_path(message)
    if at is not None:
        identity = request_id(message.get("id")) if isinstance(message, dict) else None
        code = INVALID_PARAMS if at == "params" or at.startswith("params.") else INVALID_REQUEST
        raise FrameRefused(code, f"a string at {at} holds a lone surrogate escape: not Unicode text", identity)
    return message


def refuse_oversized(prefix: bytes, max_bytes: int) -> FrameRefused:
    """The error answering a line longer than ``max_bytes``, with the request's id if its first bytes hold it."""
    identity = leading_id(prefix.decode("utf-8", errors="ignore"))
    return FrameRefused(INVALID_REQUEST, f"Invalid Request: a message of more than {max_bytes} bytes is refused "
                                         f"(the server's --max-request-bytes)", identity)


@contextmanager
def claimed_stdio() -> Iterator[tuple[BinaryIO, BinaryIO]]:
    """The protocol's wire, private copies of fds 0 and 1; meanwhile fd 0 reads /dev/null and fd 1
    writes to stderr, so a stray print cannot corrupt the protocol. The copies stay open (a reader
    thread may still block on one); fds 0 and 1 are restored on exit."""
    wire_in, wire_out = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    try:
        yield os.fdopen(wire_in, "rb", closefd=False), os.fdopen(wire_out, "wb", closefd=False)
    finally:
        os.dup2(wire_in, 0)
        os.dup2(wire_out, 1)


def serve_stdio(server: Any, max_bytes: int) -> None:
    """Serve the low-level MCP ``server`` on stdin/stdout until stdin closes, lines checked as above."""
    import anyio
    from mcp.shared.message import SessionMessage
    from mcp_types import ErrorData, JSONRPCError, jsonrpc_message_adapter
    from pydantic import ValidationError

    async def read_line(source: BinaryIO, limit: int) -> bytes:
        return await anyio.to_thread.run_sync(source.readline, limit, abandon_on_cancel=True)

    async def next_message(source: BinaryIO) -> Any:
        """The next message, a FrameRefused for a refused line, or None at the end of input."""
        line = await read_line(source, max_bytes + 1)
        if len(line) > max_bytes and not line.endswith(b"\n"):
            rest = line
            while rest and not rest.endswith(b"\n"):
                rest = await read_line(source, _DRAIN_CHUNK)
            return refuse_oversized(line[:max_bytes], max_bytes)
        if not line:
            return None
        if not line.strip():
            return ""
        try:
            body = check_frame(line)
        except FrameRefused as refused:
            return refused
        try:
            return jsonrpc_message_adapter.validate_json(line, by_name=False)
        except ValidationError as exc:
            identity = request_id(body.get("id")) if isinstance(body, dict) else None
            return FrameRefused(INVALID_REQUEST, f"Invalid Request: not a JSON-RPC request, notification or "
                                                 f"response ({exc.error_count()} problems)", identity)

    async def read_lines(source: BinaryIO, inbound: Any, outbound: Any) -> None:
        async with inbound, outbound:
            while (message := await next_message(source)) is not None:
                if isinstance(message, FrameRefused):
                    error = ErrorData(code=message.code, message=message.message)
                    await outbound.send(SessionMessage(JSONRPCError(jsonrpc="2.0", id=message.id, error=error)))
                elif message != "":
                    await inbound.send(SessionMessage(message))

    async def write_lines(sink: BinaryIO, outbound: Any) -> None:
        async with outbound:
            async for session_message in outbound:
                line = session_message.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
                await anyio.to_thread.run_sync(_write, sink, line.encode("utf-8"))

    async def serve(source: BinaryIO, sink: BinaryIO) -> None:
        inbound_send, inbound = anyio.create_memory_object_stream[Any](0)
        outbound, outbound_receive = anyio.create_memory_object_stream[Any](0)
        async with anyio.create_task_group() as group:
            group.start_soon(read_lines, source, inbound_send, outbound.clone())
            group.start_soon(write_lines, sink, outbound_receive)
            async with outbound:
                await server.run(inbound, outbound, server.create_initialization_options())

    with claimed_stdio() as (source, sink):
        anyio.run(serve, source, sink)


def _write(sink: BinaryIO, data: bytes) -> None:
    sink.write(data)
    sink.flush()
