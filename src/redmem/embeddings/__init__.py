"""Embedding providers: OpenAI-compatible APIs, an offline MiniLM, and a hashing provider for tests."""

from .base import EmbeddingError, EmbeddingProvider, as_matrix, embed_in_batches
from .hashing import HashingEmbeddings
from .local import MiniLMEmbeddings
from .matrix import VectorMatrix
from .openai_compatible import OpenAIEmbeddings

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
