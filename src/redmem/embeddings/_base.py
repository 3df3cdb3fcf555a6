"""The embedding provider contract and the checks every vector passes before it is stored.

A provider turns texts into vectors::

    provider.embed(texts, input_type="document" | "query") -> numpy float32 array (n x dimensions)
    provider.dimensions       # int, the length of every vector
    provider.max_batch_size   # int, the most texts one embed() call should be given

``input_type`` lets models that embed queries and documents differently (e5's ``query:`` /
``passage:`` prefixes, asymmetric APIs) do so; symmetric models ignore it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np

from ..store._errors import EmbeddingError, RedmemError, ValidationError

__all__ = [
    "EmbeddingProvider",
    "EmbeddingError",
    "InputType",
    "INPUT_TYPES",
    "as_matrix",
    "embed_in_batches",
    "unit_rows",
]

InputType = Literal["document", "query"]
INPUT_TYPES = ("document", "query")



@runtime_checkable
class EmbeddingProvider(Protocol):
    """What :class:`~redmem.fields._embedding.EmbeddingField` needs from an embedding model."""

    @property
    def dimensions(self) -> int: ...

    @property
    def max_batch_size(self) -> int: ...

    def embed(self, texts: Sequence[str], input_type: InputType = "document") -> np.ndarray: ...


def check_input_type(input_type: str) -> None:
    """Raise ValidationError unless ``input_type`` is "document" or "query"."""
    if input_type not in INPUT_TYPES:
        raise ValidationError(f"input_type must be 'document' or 'query', not {input_type!r}")


def as_matrix(vectors: Any, dimensions: int | None, rows: int | None = None, label: str = "vector") -> np.ndarray:
    """``vectors`` as a C-contiguous float32 array of shape (rows, dimensions).

    A single vector (1-d) becomes one row. Raises ValidationError for a wrong shape, a wrong
    length, a wrong number of rows, or NaN / infinite values.
    """
    try:
        matrix = np.asarray(vectors, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise ValidationError(f"{label} is not a numeric vector: {exc}") from exc
    if matrix.ndim == 1:
        matrix = matrix.reshape(1, -1)
    if matrix.ndim != 2:
        raise ValidationError(f"{label} must be one vector or a list of vectors, got shape {matrix.shape}")
    if dimensions is not None and matrix.shape[1] != dimensions:
        raise ValidationError(f"{label} has {matrix.shape[1]} dimensions, expected {dimensions}")
    if rows is not None and matrix.shape[0] != rows:
        raise ValidationError(f"{label}: got {matrix.shape[0]} vectors for {rows} texts")
    if not np.isfinite(matrix).all():
        raise ValidationError(f"{label} holds NaN or infinite values")
    return np.ascontiguousarray(matrix)


def unit_rows(matrix: np.ndarray) -> np.ndarray:
    """Each row divided by its L2 norm; all-zero rows stay zero (their cosine with anything is 0)."""
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    units: np.ndarray = np.divide(matrix, norms, out=np.zeros_like(matrix), where=norms > 0)
    return units


def _embed(provider: Any, texts: list[str], input_type: InputType) -> Any:
    """``provider.embed(texts)``, its errors (but redmem's own) raised as EmbeddingError."""
    try:
        return provider.embed(texts, input_type=input_type)
    except RedmemError:
        raise
    except Exception as exc:
        raise EmbeddingError(
            f"embedding provider {type(provider).__name__} failed on {len(texts)} text(s): "
            f"{type(exc).__name__}: {exc}"
        ) from exc


def embed_in_batches(provider: Any, texts: Sequence[str], input_type: InputType = "document") -> np.ndarray:
    """Embed ``texts`` in calls of at most ``provider.max_batch_size`` texts; (n x dimensions) float32.

    Every batch is checked with :func:`as_matrix` against ``provider.dimensions``, so a provider
    that returns the wrong number or length of vectors raises ValidationError; a provider that
    raises anything but a RedmemError raises EmbeddingError naming it, chained to its error.
    """
    check_input_type(input_type)
    if not texts:
        return np.zeros((0, provider.dimensions), dtype=np.float32)
    size = max(1, int(provider.max_batch_size))
    label = f"{type(provider).__name__} output"
    parts = []
    for start in range(0, len(texts), size):
        chunk = list(texts[start : start + size])
        output = as_matrix(_embed(provider, chunk, input_type), None, len(chunk), label)
        parts.append(as_matrix(output, provider.dimensions, len(chunk), label))  # after the call: it may learn
    return np.concatenate(parts) if len(parts) > 1 else parts[0]
