"""HashingEmbeddings: a tiny deterministic provider for tests and benchmarks (no model, no I/O).

Features of a text: its lower-cased words (runs of Unicode word characters) and the character
trigrams of each word padded with one space on either side ("cat" -> " ca", "cat", "at ").
Each feature f adds ``sign(f)`` to slot ``h(f) mod d`` — signed feature hashing
(Weinberger et al., 2009, "Feature Hashing for Large Scale Multitask Learning") with h = CRC-32
and the sign taken from bit 31 — and the vector is divided by its L2 norm. Texts that share
words or word pieces get a positive cosine; the same text gives the same vector in every
process. It knows nothing of meaning: use it where a test needs vectors, not semantics.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from ..store._errors import ConfigurationError
from ..store._validation import positive_int
from ._base import InputType, check_input_type, unit_rows

__all__ = ["HashingEmbeddings", "hashed_features"]

_WORD = re.compile(r"\w+")


def hashed_features(text: str) -> list[str]:
    """The word and padded character-trigram features of ``text``, in order, repeats kept."""
    features = []
    for word in _WORD.findall(text.lower()):
        features.append(word)
        padded = f" {word} "
        features.extend(padded[i : i + 3] for i in range(len(padded) - 2))
    return features


@lru_cache(maxsize=1 << 18)
def _slot(feature: str, dimensions: int) -> tuple[int, float]:
    code = zlib.crc32(feature.encode("utf-8"))
    return code % dimensions, (1.0 if code >> 31 else -1.0)


class HashingEmbeddings:
    """Deterministic hashed bag-of-features vectors of ``dimensions`` floats, L2-normalised.

    ``input_type`` is accepted and ignored (the same text has the same vector either way).
    A text without word characters maps to the zero vector.
    """

    def __init__(self, dimensions: int = 256, max_batch_size: int = 1024) -> None:
        positive_int("dimensions", dimensions, error=ConfigurationError)
        positive_int("max_batch_size", max_batch_size, error=ConfigurationError)
        self._dimensions = dimensions
        self._max_batch_size = max_batch_size

    @property
    def dimensions(self) -> int:
        return self._dimensions

    @property
    def max_batch_size(self) -> int:
        return self._max_batch_size

    def embed(self, texts: Sequence[str], input_type: InputType = "document") -> np.ndarray:
        """One unit-length float32 row per text."""
        check_input_type(input_type)
        matrix = np.zeros((len(texts), self._dimensions), dtype=np.float32)
        for row, text in enumerate(texts):
            slots = [_slot(f, self._dimensions) for f in hashed_features(text)]
            if slots:
                index, sign = zip(*slots)
                matrix[row] = np.bincount(index, weights=sign, minlength=self._dimensions)
        return unit_rows(matrix)

    def __repr__(self) -> str:
        return f"HashingEmbeddings(dimensions={self._dimensions})"
