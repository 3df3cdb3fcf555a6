"""Snapshots as a ContextAssembler source: HSCA as a memory an agent pulls from, not a report.

Each stored snapshot has a :class:`SnapshotPassage`, partitioned like the snapshots by
``(agent_id, session_id)``: its position (a sorted field), its dominant domain, its macro
weight and its ``content``, with a BM25 index over it. The content is the chunks' text, one
line each; when the engine drops the text (``keep_text=False``) it is the snapshot's terms,
heaviest first, so the passage stays searchable. Two pull paths:

- **the whole session**: ``ContextAssembler(SnapshotPassage, ...).assemble(query,
  agent_id=..., session_id=...)``: the assembler's own BM25 pull, budget, rendering, as for
  any model (lexical: the passage has no vectors);
- **a region** (:func:`assemble_region`): the passages of positions ``start..stop`` (one range
  query, so exact whatever the rest of the session holds), ranked by HSCA relevance (the
  snapshots' term weights, damped by distance from ``context_position``), then packed and
  rendered by the same assembler: "what is relevant in the last three beats", within a token
  budget, as injectable text.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...model._dbkey import DbKey
from ...model._hits import Hit
from ...model._loading import load_records
from ..assembler._context_assembler import AssemblyResult, ContextAssembler
from ._explain import RegionTrail
from ._macro import RelevantBeat
from ._models import PASSAGE_TERMS, SnapshotPassage, passage_content, passage_of

if TYPE_CHECKING:
    from ...model._query import Query

__all__ = ["SnapshotPassage", "passage_content", "passage_of", "assemble_region", "PASSAGE_TERMS", "PASSAGE_FIELDS", "Explaining"]

#: The fields HSCAEngine.assemble shows of a passage by default.
PASSAGE_FIELDS = ("position", "domain", "content")


def session_passages(agent_id: str, session_id: str) -> Query:
    return SnapshotPassage.query.filter(agent_id=agent_id, session_id=session_id)


def assemble_region(assembler: ContextAssembler, ranked: Sequence[RelevantBeat], agent_id: str,
                    session_id: str, explained: Explaining | None = None) -> AssemblyResult:
    """Pack and render the passages of ``ranked`` (best first) with ``assembler``'s format and budget
    (its first ``max_items``, skip-not-break, its ``oversize``); one round trip to read them.
    ``explained``: the context position, locality and region the ranking used (the result then
    explains itself, :mod:`.explain`)."""
    meta = SnapshotPassage._meta
    space = meta.keyspace((agent_id, session_id))
    keys = [DbKey(space, meta.record_id({"snapshot_id": r.snapshot.snapshot_id})) for r in ranked[: assembler.max_items]]
    records = load_records(SnapshotPassage, keys, track=False)
    relevance = {r.snapshot.snapshot_id: r.relevance for r in ranked}
    fitted = assembler.fit(records)
    chosen = [records[i] for i in fitted.selected]
    metadata: dict[str, Any] = {
        "pull_count": len(chosen), "push_count": 0, "token_count": fitted.token_count,
        "oversize": fitted.oversize.report([r.snapshot_id for r in records]),
        "total_candidates": len(ranked), "retrieval_mode": "hsca_region",
        "relevance": [relevance[r.snapshot_id] for r in chosen],
    }
    hits = tuple(Hit(r, relevance[r.snapshot_id], {"hsca_relevance": relevance[r.snapshot_id]}) for r in chosen)
    trail = None if explained is None else RegionTrail(
        ranked, [r.snapshot_id for r in records], fitted, assembler.max_items, assembler.budget.max_tokens,
        explained.context_position, explained.locality, explained.region, space)
    return AssemblyResult(chosen, [], fitted.text, metadata, hits, trail)


@dataclass(frozen=True)
class Explaining:
    """How a region's snapshots were ranked: the context position, the locality, the region."""

    context_position: int | None
    locality: float
    region: tuple[int, int | None]
