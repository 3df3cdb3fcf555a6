"""Embedding providers: OpenAI-compatible APIs, an offline MiniLM, and a hashing provider for tests."""

from .._public import publish
from ._base import EmbeddingError, EmbeddingProvider, as_matrix, embed_in_batches
from ._hashing import HashingEmbeddings
from ._local import MiniLMEmbeddings
from ._matrix import VectorMatrix
from ._openai_compatible import OpenAIEmbeddings

__all__ = [
    "EmbeddingError",
    "EmbeddingProvider",
    "HashingEmbeddings",
    "MiniLMEmbeddings",
    "OpenAIEmbeddings",
    "VectorMatrix",
    "as_matrix",
    "embed_in_batches",
]

publish(__name__, __all__)
