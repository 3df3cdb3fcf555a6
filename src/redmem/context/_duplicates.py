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
from typing import Any, TypeVar

import numpy as np

__all__ = ["normalised_text", "collapse_duplicates", "DUPLICATE_COSINE"]

#: Cosine at or above which two memories are near duplicates. With the MiniLM model a sentence
#: and the same sentence with one word swapped for a synonym or added ("every" / "each",
#: "before work" / "before my work") score 0.99 or more, while an update of one fact ("at 7" /
#: "at 8", "Saturday" / "Sunday") scores 0.96-0.97 and must stay (tests/integration/context/test_duplicates.py).
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
    similar = _similar_pairs(candidates, vectors, key_of, threshold)
    kept_positions: set[int] = set()
    for position, candidate in enumerate(candidates):
        text = normalised_text(text_of(candidate))
        if text in seen or not similar.get(position, set()).isdisjoint(kept_positions):
            collapsed.append(candidate)
            continue
        kept.append(candidate)
        kept_positions.add(position)
        seen.add(text)
    return kept, collapsed


def _similar_pairs(candidates: Sequence[T], vectors: Mapping[Any, np.ndarray] | None, key_of: Callable[[T], Any],
                   threshold: float) -> dict[int, set[int]]:
    """For each position whose candidate has a vector, the earlier positions whose vectors' cosine
    with it reaches ``threshold``: one matrix product for all pairs instead of one per candidate."""
    if not vectors:
        return {}
    found = [(position, vectors.get(key_of(candidate))) for position, candidate in enumerate(candidates)]
    present = [(position, vector) for position, vector in found if vector is not None]
    if len(present) < 2:
        return {}
    stacked = np.stack([vector for _, vector in present])
    close = np.argwhere(np.tril(stacked @ stacked.T >= threshold, k=-1))
    similar: dict[int, set[int]] = {}
    for later, earlier in close.tolist():
        similar.setdefault(present[later][0], set()).add(present[earlier][0])
    return similar
