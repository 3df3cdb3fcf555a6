"""The embedding provider HCE embeds turns and queries with, and a query's vector from text or a vector."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...embeddings._base import embed_in_batches
from ...embeddings._hashing import HashingEmbeddings
from ...store._connection import settings
from ...store._errors import ArgumentTypeError, ValidationError
from ...store._validation import utf8_text

__all__ = ["DEFAULT_DIMENSIONS", "resolve_provider", "query_vector_of"]

#: Dimensions of the default embedding provider (feature hashing) when none is configured.
DEFAULT_DIMENSIONS = 256


def resolve_provider(given: Any = None) -> Any:
    """``given``, else the configured provider, else feature hashing (:data:`DEFAULT_DIMENSIONS`)."""
    return given or settings().embedding_provider or HashingEmbeddings(DEFAULT_DIMENSIONS)


def query_vector_of(query: Any, provider: Any = None) -> np.ndarray:
    """A query as a vector: a text embedded (``input_type="query"``) by :func:`resolve_provider`
    of ``provider``, or a sequence of numbers taken as it is; ArgumentTypeError for anything else."""
    if isinstance(query, str):
        if not query.strip():
            raise ValidationError("a query text must not be empty")
        vector: np.ndarray = embed_in_batches(resolve_provider(provider), [utf8_text("query", query)], "query")[0]
        return vector
    try:
        array = np.asarray(query, dtype=np.float32)
    except (TypeError, ValueError):
        raise ArgumentTypeError(f"a query is a text or a vector of numbers, not {type(query).__name__}") from None
    if array.ndim != 1 or array.size == 0 or not np.isfinite(array).all():
        raise ValidationError(f"a query vector is a non-empty 1-d sequence of finite numbers, got shape {array.shape}")
    return array
