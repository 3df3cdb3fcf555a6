"""Helpers the HCE tree tests share: a provider that looks vectors up by the turn, and clustered
integer vectors (exact in float16) so topics hold several members."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


class TableProvider:
    """Vectors looked up by the turn's number (``user: u<n>``) or the query's text (``q<n>``)."""

    max_batch_size = 1000

    def __init__(self, vectors: dict[str, np.ndarray]) -> None:
        self.vectors = vectors
        self.dimensions = len(next(iter(vectors.values())))

    def embed(self, texts: Sequence[str], input_type: str = "document") -> np.ndarray:
        return np.stack([self.vectors[t.split()[1] if t.startswith("user:") else t] for t in texts])


def random_vectors(rng: np.random.Generator, count: int, clusters: int, dimensions: int) -> list[np.ndarray]:
    """``count`` integer vectors around ``clusters`` random centres."""
    centres = rng.integers(-6, 7, (clusters, dimensions))
    return [
        (centres[rng.integers(clusters)] + rng.integers(-3, 4, dimensions)).astype(np.float32) for _ in range(count)
    ]
