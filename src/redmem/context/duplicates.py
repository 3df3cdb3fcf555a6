"""Collapsing duplicate memories before packing: one copy of a text per context.

Two candidates are duplicates when their memory texts are equal after :func:`normalised_text`
(case folded, punctuation removed, whitespace runs made one space), or when both have a
vector and ``cosine(u, v) >= threshold`` (near duplicates: the same sentence reworded a
little). Candidates arrive best first; each is compared with the copies kept so far, so the
best-ranked copy of a group is the one kept. Pure computation, no I/O.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar, cast

import numpy as np

__all__ = ["normalised_text", "collapse_duplicates", "DUPLICATE_COSINE"]

#: Cosine at or above which two memories are near duplicates. With the MiniLM model a sentence
#: and the same sentence with one word swapped for a synonym or added ("every" / "each",
#: "before work" / "before my work") score 0.99 or more, while an update of one fact ("at 7" /
#: "at 8", "Saturday" / "Sunday") scores 0.96-0.97 and must stay (tests/test_duplicates.py).
DUPLICATE_COSINE = 0.98

T = TypeVar("T")
#: Deletes the ASCII characters of Unicode category P* (``str.translate`` table).
_ASCII_PUNCTUATION = {i: None for i in range(128) if unicodedata.category(chr(i)).startswith("P")}


def normalised_text(text: str) -> str:
    """``text`` case folded (after NFKC), without punctuation (Unicode category P*), with every
    whitespace run made one space and none at the ends. (ASCII text, where NFKC changes nothing and
    case folding is ``lower``, takes a table lookup instead of a category per character.)"""
    if text.isascii():
        return " ".join(text.lower().translate(_ASCII_PUNCTUATION).split())
    folded = unicodedata.normalize("NFKC", text).casefold()
    kept = "".join(c for c in folded if not unicodedata.category(c).startswith("P"))
    return " ".join(kept.split())


def collapse_duplicates(
    candidates: Sequence[T], text_of: Callable[[T], str], vectors: Mapping[Any, np.ndarray] | None = None,
    key_of: Callable[[T], Any] = lambda candidate: candidate, threshold: float = DUPLICATE_COSINE,
) -> tuple[list[T], list[T]]:
    """``(kept, collapsed)``: ``candidates`` (best first) without the later copies of a text.

    ``vectors`` maps ``key_of(candidate)`` to a unit vector (missing: no vector, exact
    comparison only).
    """
    kept: list[T] = []
    collapsed: list[T] = []
    seen: set[str] = set()
    kept_vectors: np.ndarray | None = None  # the kept copies' vectors, rows 0..count-1 (no restacking)
    count = 0
    for candidate in candidates:
        text = normalised_text(text_of(candidate))
        vector = vectors.get(key_of(candidate)) if vectors else None
        near = vector is not None and count > 0 and float((cast(np.ndarray, kept_vectors)[:count] @ vector).max()) >= threshold
        if text in seen or near:
            collapsed.append(candidate)
            continue
        kept.append(candidate)
        seen.add(text)
        if vector is not None:
            if kept_vectors is None:
                kept_vectors = np.empty((len(candidates), vector.shape[0]), dtype=vector.dtype)
            kept_vectors[count] = vector
            count += 1
    return kept, collapsed
