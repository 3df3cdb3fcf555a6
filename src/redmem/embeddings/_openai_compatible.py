"""OpenAIEmbeddings: vectors from any OpenAI-compatible ``/v1/embeddings`` endpoint, via the openai SDK.

The SDK reads ``OPENAI_API_KEY`` and ``OPENAI_BASE_URL`` when ``api_key`` / ``base_url`` are not
given, so the same code talks to OpenAI, Azure-style gateways, vLLM, Ollama, LM Studio or a local
test server.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..store._errors import ConfigurationError
from ..store._validation import positive_int
from ._base import EmbeddingError, InputType, as_matrix, check_input_type

__all__ = ["OpenAIEmbeddings", "KNOWN_DIMENSIONS", "openai_sdk"]

#: Output length of OpenAI's embedding models when no ``dimensions`` is requested.
KNOWN_DIMENSIONS = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
}
_PROBE_TEXT = "dimension probe"


def openai_sdk(user: str = "OpenAIEmbeddings") -> Any:
    """The openai module, imported on first use: importing it takes about 2 s, which every
    ``import redmem`` would otherwise pay. ConfigurationError naming ``user`` when it is not installed."""
    try:
        import openai
    except ImportError as exc:
        raise ConfigurationError(f"{user} needs the openai SDK: pip install 'redmem[openai]'") from exc
    return openai


class OpenAIEmbeddings:
    """An embedding model behind an OpenAI-compatible API.

    Args:
        model: the model name sent with every request.
        base_url: the API root (e.g. ``http://localhost:11434/v1``); default ``OPENAI_BASE_URL``,
            else OpenAI.
        api_key: default ``OPENAI_API_KEY``; ConfigurationError when neither is set.
        dimensions: ask the model for vectors of this length (text-embedding-3 models shorten
            their output); None: the model's own length, known for OpenAI's models and otherwise
            learnt from the first response.
        max_batch_size: the most texts sent in one request (OpenAI accepts up to 2048).
        timeout: seconds per request. max_retries: the SDK's retries of failed requests.

    Errors from the service are raised as :class:`EmbeddingError` (the SDK error is the cause).
    """

    def __init__(
        self,
        model: str = "text-embedding-3-small",
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        dimensions: int | None = None,
        max_batch_size: int = 512,
        timeout: float = 60.0,
        max_retries: int = 2,
    ) -> None:
        openai = openai_sdk()
        positive_int("dimensions", dimensions, none=True, error=ConfigurationError)
        positive_int("max_batch_size", max_batch_size, error=ConfigurationError)
        try:
            self._client = openai.OpenAI(api_key=api_key, base_url=base_url, timeout=timeout, max_retries=max_retries)
        except openai.OpenAIError as exc:
            raise ConfigurationError(f"OpenAIEmbeddings: {exc}") from exc
        self.model = model
        self._requested = dimensions
        self._dimensions = dimensions or KNOWN_DIMENSIONS.get(model)
        self._max_batch_size = max_batch_size
        self._lock = threading.Lock()

    @property
    def dimensions(self) -> int:
        """The vector length: requested, known for OpenAI's models, else from the first response
        (a one-text probe request when asked before any)."""
        if self._dimensions is None:
            with self._lock:
                if self._dimensions is None:
                    self._dimensions = self._request([_PROBE_TEXT]).shape[1]
        return self._dimensions

    @property
    def max_batch_size(self) -> int:
        return self._max_batch_size

    @property
    def base_url(self) -> str:
        return str(self._client.base_url)

    def embed(self, texts: Sequence[str], input_type: InputType = "document") -> np.ndarray:
        """One float32 row per text, in order; at most ``max_batch_size`` texts per request."""
        check_input_type(input_type)
        texts = list(texts)
        rows = [self._request(texts[i : i + self._max_batch_size]) for i in range(0, len(texts), self._max_batch_size)]
        if not rows:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        matrix = np.concatenate(rows) if len(rows) > 1 else rows[0]
        return as_matrix(matrix, self.dimensions, len(texts), f"{self.model} output")

    def _request(self, texts: list[str]) -> np.ndarray:
        options = {} if self._requested is None else {"dimensions": self._requested}
        try:
            response = self._client.embeddings.create(model=self.model, input=texts, **options)
        except openai_sdk().OpenAIError as exc:
            raise EmbeddingError(f"{self.model} at {self.base_url}: {exc}") from exc
        ordered = sorted(response.data, key=lambda item: item.index)
        matrix = as_matrix([item.embedding for item in ordered], self._dimensions, len(texts), f"{self.model} output")
        if self._dimensions is None:
            self._dimensions = matrix.shape[1]
        return matrix

    def __repr__(self) -> str:
        return f"OpenAIEmbeddings(model={self.model!r}, base_url={self.base_url!r})"
