"""A small OpenAI-compatible HTTP server for tests: /v1/embeddings and /v1/chat/completions.

Runs on 127.0.0.1 (a free port) in a thread, serves deterministic answers and records every
request, so tests drive the real ``openai`` SDK against it::

    with OpenAICompatibleServer() as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="test-key")

Embeddings are :class:`redmem.embeddings.HashingEmbeddings` vectors (``dimensions`` from the
request, else ``default_dimensions``), returned as floats or base64 as asked. The model named
``failing_model`` answers 500 (embeddings and chat), and a text equal to ``reject_text`` gets a
400. Chat completions answer ``chat_reply(messages)``, by default ``"echo: <last user message>"``.
"""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from redmem.embeddings import HashingEmbeddings

__all__ = ["OpenAICompatibleServer"]


def echo_reply(messages: list[dict]) -> str:
    """The default canned chat answer: the last user message, prefixed."""
    users = [m.get("content") for m in messages if m.get("role") == "user"]
    return f"echo: {users[-1] if users else ''}"


class OpenAICompatibleServer:
    """The server and what it was asked: ``requests`` holds (path, JSON body, headers) tuples,
    header names lower-cased."""

    def __init__(
        self,
        default_dimensions: int = 32,
        chat_reply: Callable[[list[dict]], str] = echo_reply,
        failing_model: str = "failing-model",
        reject_text: str = "REJECT ME",
    ) -> None:
        self.default_dimensions = default_dimensions
        self.chat_reply = chat_reply
        self.failing_model = failing_model
        self.reject_text = reject_text
        self.requests: list[tuple[str, dict, dict]] = []
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def embedding_requests(self) -> list[dict]:
        """Bodies of the /v1/embeddings requests so far."""
        return [body for path, body, _ in self.requests if path == "/v1/embeddings"]

    def chat_requests(self) -> list[dict]:
        """Bodies of the /v1/chat/completions requests so far."""
        return [body for path, body, _ in self.requests if path == "/v1/chat/completions"]

    def start(self) -> OpenAICompatibleServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> OpenAICompatibleServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # -- answers -------------------------------------------------------------------------------
    def embeddings(self, body: dict) -> tuple[int, dict]:
        if body.get("model") == self.failing_model:
            return 500, _error("server_error", "the model crashed")
        texts = body.get("input")
        texts = [texts] if isinstance(texts, str) else texts
        if not isinstance(texts, list) or not all(isinstance(t, str) and t for t in texts):
            return 400, _error("invalid_request_error", "input must be a non-empty string or list of them")
        if self.reject_text in texts:
            return 400, _error("invalid_request_error", "input rejected")
        vectors = HashingEmbeddings(int(body.get("dimensions") or self.default_dimensions)).embed(texts)
        as_base64 = body.get("encoding_format") == "base64"
        data = [
            {"object": "embedding", "index": i,
             "embedding": base64.b64encode(v.astype("<f4").tobytes()).decode() if as_base64 else v.tolist()}
            for i, v in enumerate(vectors)
        ]
        tokens = sum(len(t.split()) for t in texts)
        return 200, {"object": "list", "data": data, "model": body.get("model"),
                     "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}

    def chat_completions(self, body: dict) -> tuple[int, dict]:
        if body.get("model") == self.failing_model:
            return 500, _error("server_error", "the model crashed")
        messages = body.get("messages") or []
        reply = self.chat_reply(messages)
        prompt_tokens = sum(len(str(m.get("content", "")).split()) for m in messages)
        return 200, {
            "id": f"chatcmpl-{len(self.requests)}", "object": "chat.completion", "created": 0,
            "model": body.get("model"),
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": reply}}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": len(reply.split()),
                      "total_tokens": prompt_tokens + len(reply.split())},
        }


def _error(kind: str, message: str) -> dict:
    return {"error": {"message": message, "type": kind, "param": None, "code": None}}


def _handler_for(server: OpenAICompatibleServer) -> type:
    routes = {"/v1/embeddings": server.embeddings, "/v1/chat/completions": server.chat_completions}

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # http.server's naming
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            server.requests.append((self.path, body, {k.lower(): v for k, v in self.headers.items()}))
            route = routes.get(self.path)
            status, answer = route(body) if route else (404, _error("not_found", self.path))
            payload = json.dumps(answer).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: Any) -> None:
            """Keep test output quiet."""

    return Handler

