"""Helpers of the frames tests: a word-overlap embedding provider that counts its calls, a
settable clock, a snapshot of every key (DUMP) to prove what a call did not write, and the
fixtures ``provider`` (a :class:`WordEmbeddings` configured for the test) and ``clock`` (a
:class:`Clock`), defined once here: a test module uses them by importing them
(``from frames_support import clock, provider``)."""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
import pytest

import redmem
from conftest import all_keys, configured_embeddings

WORD = re.compile(r"[a-z0-9]+")


class WordEmbeddings:
    """One dimension per distinct word: a cosine is the texts' word overlap, 0 without a shared word."""

    dimensions = 512
    max_batch_size = 64

    def __init__(self) -> None:
        self.vocabulary: dict[str, int] = {}
        self.calls: list[tuple[list[str], str]] = []

    def embed(self, texts: Sequence[str], input_type: str = "document") -> np.ndarray:
        self.calls.append((list(texts), input_type))
        out = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in WORD.findall(text.lower()):
                out[row, self.vocabulary.setdefault(word, len(self.vocabulary) % self.dimensions)] += 1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms == 0, 1.0, norms)

    def queries(self) -> int:
        return sum(1 for _, kind in self.calls if kind == "query")


class Clock:
    """Wall time the test moves by hand (seconds)."""

    def __init__(self, now: float = 1_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance_hours(self, hours: float) -> None:
        self.now += hours * 3600


def snapshot(client) -> dict[str, bytes]:
    """Every key of the test's prefix with its DUMP (type, value and encoding), TTLs aside."""
    prefix = redmem.store.settings().key_prefix
    return {key: client.dump(key) for key in sorted(all_keys(client, prefix))}


@pytest.fixture
def provider(db):
    """A fresh :class:`WordEmbeddings` as the configured embedding provider for the test."""
    with configured_embeddings(WordEmbeddings()) as words:
        yield words


@pytest.fixture
def clock():
    """A :class:`Clock` at its default start."""
    return Clock()
