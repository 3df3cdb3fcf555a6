"""Search results as values: each found record with its score and the per-signal scores behind it.

Every search query method (``keyword_search``, ``semantic_search``, ``top_by_decay``,
``above_cyclic_threshold``, ``composite_score``, ``top_by_priority``, ``fuse``) returns a
:class:`HitList`: the records best first, as a ``list`` (iterate it as the records), whose
:attr:`HitList.hits` holds one typed :class:`Hit` per record, in the same order. Each record
also carries its score as an underscore attribute (``_bm25_score``, ``_rrf_score``, ...), an
alias kept for code that reads scores off the records.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Generic, TypeVar

__all__ = ["Hit", "HitList", "hit_list"]

R_co = TypeVar("R_co", covariant=True)
R = TypeVar("R")

@dataclass(frozen=True)
class Hit(Generic[R_co]):
    """One found record, its score, and the scores of the signals behind it (read-only mappings).

    ``signals`` maps each signal's name to its score: ``{"bm25": s}`` for a keyword search,
    ``{"vector": cosine}``, ``{"decay": s}``, ``{"cyclic": s}``, ``{"priority": s}``; a
    composite score's signals mapped into [0, 1] (``{"relevance": 0.5, ...}``); ``{"rrf": s}``
    for ``fuse``, whose ``ranks`` hold the record's 1-based rank in each list it was found in
    (empty for every other search).
    """

    record: R_co
    score: float
    signals: Mapping[str, float] = field(default_factory=dict)
    ranks: Mapping[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "signals", MappingProxyType(dict(self.signals)))
        object.__setattr__(self, "ranks", MappingProxyType(dict(self.ranks)))

    def __reduce__(self) -> tuple[type[Hit[R_co]], tuple[R_co, float, dict[str, float], dict[str, int]]]:
        """Pickled as its fields, the read-only mappings as dicts."""
        return type(self), (self.record, self.score, dict(self.signals), dict(self.ranks))


class HitList(list[R]):
    """Records best first, as a plain ``list`` of them, with :attr:`hits`: their :class:`Hit` values.

    ``hits`` is the ranking as the search returned it; changing the list does not change it.
    """

    def __init__(self, hits: Iterable[Hit[R]] = ()) -> None:
        found = tuple(hits)
        super().__init__(hit.record for hit in found)
        self._hits = found

    @property
    def hits(self) -> tuple[Hit[R], ...]:
        """One :class:`Hit` per record, in the order of the records."""
        return self._hits


def hit_list(hits: Iterable[Hit[R]], alias: str) -> HitList[R]:
    """``hits`` as a :class:`HitList`, each record also carrying its score as the attribute ``alias``
    (``_bm25_score``, ...: the alias older code reads)."""
    found = HitList(hits)
    for hit in found.hits:
        setattr(hit.record, alias, hit.score)
    return found
