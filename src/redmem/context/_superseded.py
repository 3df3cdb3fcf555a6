"""Superseded hits: the records a lifecycle read's validity filter kept out of the searches that
would have ranked, found in the same round trip, for the explanation's left-out list.

A lifecycle model's read sees its current records (or those valid at ``as_of``): the keyword and
vector searches check the validity window inside each search, so a superseded record never
becomes a candidate. To say which ones were left out that way, the pull sends beside its own
searches the same keyword search over the superseded records (the filter of
:func:`~redmem.model._filters.compile_superseded`: the read's other conditions and a closed window)
and the ``filter_ids.lua`` listing of their ids, whose rows the vector search's matrix scores once
it is up to date: riders of the pull's first round trip (:class:`~redmem.context._retrieval.Retrieval`),
no round trip added.

A superseded hit is kept when it would have ranked within the search depth ``D`` (the pull's
``candidate_limit``) had the filter let it through. Each searched list ``L`` holds the exact top
``D`` of the current records and its shadow the exact top ``D`` of the superseded ones, so

    merged_L = the best D of current_L + superseded_L, by (score desc, record id)

is the top ``D`` the search would return had it let the superseded records through (records
not valid yet at ``as_of`` stay out), and the superseded hits kept are the
superseded records of any ``merged_L``, each with its rank there and its score

    score(d) = max over L of  s_L(d) / top_L        (top_L: merged_L's best score)

(the share of the best hit a relevance floor reads, :func:`~redmem.context._retrieval.match_scores`).

A list that does not check windows in its search (HCE's tree) lets superseded records into the
fusion; the read drops them once it has loaded them. :func:`dropped_hits` names those, each with
its rank in each list and its score ``pull / best pull``; :func:`combined` joins them with the
twin's hits. Frames name theirs in their candidate script's reply (:mod:`redmem.recipes.frames._retrieval`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from ..fields._embedding_search import VectorSearch
from ..fields.search_protocol import Hits, Search
from ..model._dbkey import DbKey
from ..model._filters import Where
from ..store._scripts import ScriptCall
from ._candidates import Candidate
from ._fusion import distinct_ranks
from ._retrieval import KEYWORD_LIST, Capabilities, Retrieval, Retrieved, keyword_hits

__all__ = [
    "SupersededHit",
    "IdsListing",
    "superseded_searches",
    "superseded_hits",
    "dropped_hits",
    "combined",
    "VECTOR_LIST",
]

#: The vector search's list name.
VECTOR_LIST = "vector"


@dataclass
class SupersededHit:
    """A superseded record that would have ranked: its key, its rank in each list whose top
    ``depth`` it would have entered, its score (module docstring), and the id of the record that
    superseded it (None until its record is read, or when it names none)."""

    key: DbKey
    ranks: dict[str, int]
    score: float
    depth: int
    superseded_by: str | None = field(default=None)


@dataclass(frozen=True)
class IdsListing:
    """A ``filter_ids.lua`` call as a search: its reply ``(mode, ids)`` as it is (``b"only"``:
    these ids pass; ``b"except"``: every id but these)."""

    call: ScriptCall

    def calls(self) -> list[ScriptCall]:
        return [self.call]

    def finish(self, replies: list[Any]) -> tuple[bytes, list[bytes]]:
        mode, ids = replies[0]
        return mode, list(ids)


def superseded_searches(
    retrieval: Retrieval,
    caps: Capabilities,
    text: str,
    superseded: Where | None,
    depth: int,
) -> dict[str, Search[Any]]:
    """The searches of the superseded records that mirror ``retrieval``'s keyword and vector
    lists (none without a ``superseded`` filter or query text): the keyword search of ``text``
    at ``depth`` and the listing of the ids the vector search would score."""
    if superseded is None or not text:
        return {}
    space, searches = retrieval.space, dict[str, Search[Any]]()
    if KEYWORD_LIST in retrieval.lists and caps.bm25 is not None:
        searches[KEYWORD_LIST] = keyword_hits(caps.bm25, space, text, depth, superseded)
    if isinstance(retrieval.lists.get(VECTOR_LIST), VectorSearch):
        searches[VECTOR_LIST] = IdsListing(superseded.ids_call(space))
    return searches


def superseded_hits(
    retrieval: Retrieval,
    retrieved: Retrieved,
    searches: dict[str, Search[Any]],
    answers: list[Any],
    depth: int,
) -> list[SupersededHit]:
    """The superseded records that would have ranked within ``depth`` in a list (module
    docstring), best score first, from the answers of :func:`superseded_searches`."""
    hits: dict[str, SupersededHit] = {}
    for name, answer in zip(searches, answers):
        shadow = answer if name == KEYWORD_LIST else _scored(retrieval, retrieved, answer, depth)
        merged = sorted(
            [*((i, s, False) for i, s in retrieved.lists.get(name, [])), *((i, s, True) for i, s in shadow)],
            key=lambda hit: (-hit[1], hit[0]),
        )[:depth]
        top = merged[0][1] if merged and merged[0][1] > 0 else 1.0
        for rank, (record_id, score, is_superseded) in enumerate(merged, 1):
            if not is_superseded:
                continue
            hit = hits.setdefault(record_id, SupersededHit(DbKey(retrieval.space, record_id), {}, 0.0, depth))
            hit.ranks[name] = rank
            hit.score = max(hit.score, max(score, 0.0) / top)
    return sorted(hits.values(), key=lambda hit: (-hit.score, hit.key.record_id))


def _scored(retrieval: Retrieval, retrieved: Retrieved, listing: tuple[bytes, list[bytes]], depth: int) -> Hits:
    """The vector search's top ``depth`` of the listed superseded records, scored on its matrix
    (brought up to date by that search in the same round trip)."""
    search, matrix = cast(VectorSearch, retrieval.lists[VECTOR_LIST]), retrieved.matrix
    if matrix is None or search.vector is None:
        return []
    mode, ids = listing
    with matrix.lock:
        if mode == b"except":
            return matrix.search_except(search.vector, ids, depth)
        return matrix.search_among(search.vector, ids, depth)


def dropped_hits(
    candidates: Sequence[Candidate],
    lists: Mapping[str, Hits],
    successors: Mapping[str, str | None],
    depth: int,
) -> list[SupersededHit]:
    """The fused ``candidates`` a read dropped as superseded once loaded (``successors``: their
    ids, each with the id of the record that superseded it), with their rank in each list and
    the score ``pull / best pull``."""
    top = max((c.pull or 0.0 for c in candidates), default=0.0) or 1.0
    ranks = {name: distinct_ranks([record_id for record_id, _ in hits]) for name, hits in lists.items()}
    return [
        SupersededHit(
            c.key,
            {name: found[c.key.record_id] for name, found in ranks.items() if c.key.record_id in found},
            (c.pull or 0.0) / top,
            depth,
            successors[c.key.record_id],
        )
        for c in candidates
        if c.key.record_id in successors
    ]


def combined(*groups: Iterable[SupersededHit]) -> list[SupersededHit]:
    """One hit per record from several groups: its ranks joined, its best score, the successor
    any of them knows; best score first."""
    hits: dict[str, SupersededHit] = {}
    for group in groups:
        for hit in group:
            known = hits.setdefault(hit.key.record_id, SupersededHit(hit.key, {}, 0.0, hit.depth))
            known.ranks.update({name: rank for name, rank in hit.ranks.items() if name not in known.ranks})
            known.score = max(known.score, hit.score)
            known.superseded_by = known.superseded_by or hit.superseded_by
    return sorted(hits.values(), key=lambda hit: (-hit.score, hit.key.record_id))
