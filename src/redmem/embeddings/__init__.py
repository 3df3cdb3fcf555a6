"""Embedding providers: OpenAI-compatible APIs, two offline models (MiniLM, multilingual USE), and a hashing
provider for tests."""

from .base import EmbeddingError, EmbeddingProvider, as_matrix, embed_in_batches
from .hashing import HashingEmbeddings
from .local import MiniLMEmbeddings
from .matrix import VectorMatrix
from .openai_compatible import OpenAIEmbeddings
from .use_multilingual import MultilingualUSEEmbeddings

__all__ = [
    "EmbeddingError",
    "EmbeddingProvider",
    "HashingEmbeddings",
    "MiniLMEmbeddings",
    "MultilingualUSEEmbeddings",
    "OpenAIEmbeddings",
    "VectorMatrix",
    "as_matrix",
    "embed_in_batches",
]
