"""Candidates: records found by a retrieval path, and the merge that re-ranks both paths together.

A pull candidate (query-driven) scores by fusion; a push candidate (proactive) by its cyclic
score. The two scales differ, so each path's scores are divided by that path's best score.

When a question was asked (the query has text), what the query found ranks by its own score
and proactive surfacing never outranks it:

    combined(d) = pull(d) / max pull          (the push term only breaks ties)

every pull candidate (found by both paths too) comes first, and at most ``max_proactive``
push-only records (found by the cyclic scan alone) follow, best first, with
``combined = push / max push``: they fill only the slots the pull path leaves, and the others
are dropped. With no question (nothing for a pull candidate to answer) both terms add up,

    combined(d) = pull(d) / max pull  +  push(d) / max push

so a record found by both paths outranks one found by either alone; the best
``max_proactive`` push-only records compete at their combined score and the rest queue behind
the pull candidates. Ties keep pull order, then push order.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, cast

from ..model._dbkey import DbKey

__all__ = ["Candidate", "merge_paths"]


@dataclass
class Candidate:
    """One record a path found: its key, path scores, per-signal scores and merged score."""

    key: DbKey
    record: Any = None
    pull: float | None = None
    push: float | None = None
    signals: dict[str, float] = field(default_factory=dict)
    combined: float = 0.0

    @property
    def source(self) -> str:
        """``pull``, ``push``, or ``both``."""
        if self.pull is not None and self.push is not None:
            return "both"
        return "pull" if self.pull is not None else "push"


def _normaliser(scores: list[float]) -> float:
    top = max(scores, default=0.0)
    return top if top > 0 else 1.0


def merge_paths(
    pull: list[Candidate], push: list[Candidate], max_proactive: int | None = None, asked: bool = False,
) -> list[Candidate]:
    """Deduplicate by key and rank by the combined score (module docstring), best first.

    ``asked`` (the query has text): pull candidates by their pull score (the push score breaks
    ties), then the best ``max_proactive`` push-only records. Otherwise push-only records past
    the best ``max_proactive`` move behind every pull candidate, yet fill slots the pull path
    leaves empty.
    """
    pull_top = _normaliser([c.pull for c in pull if c.pull is not None])
    push_top = _normaliser([c.push for c in push if c.push is not None])
    merged: dict[DbKey, Candidate] = {}
    for candidate in pull:
        merged.setdefault(candidate.key, candidate)
    for candidate in push:
        found = merged.get(candidate.key)
        if found is None:
            merged[candidate.key] = candidate
        else:
            found.push = candidate.push
            found.signals.update(candidate.signals)
            found.record = found.record or candidate.record
    order = {key: i for i, key in enumerate(merged)}
    if asked:
        for candidate in merged.values():
            candidate.combined = (candidate.pull / pull_top if candidate.pull is not None
                                  else cast(float, candidate.push) / push_top)  # each candidate has pull or push
        pulled = sorted((c for c in merged.values() if c.pull is not None),
                       key=lambda c: (-c.combined, -(c.push or 0.0), order[c.key]))
        proactive = sorted((c for c in merged.values() if c.pull is None), key=lambda c: (-c.combined, order[c.key]))
        return pulled + (proactive if max_proactive is None else proactive[:max_proactive])
    for candidate in merged.values():
        candidate.combined = (candidate.pull or 0.0) / pull_top + (candidate.push or 0.0) / push_top
    ranked = sorted(merged.values(), key=lambda c: (-c.combined, order[c.key]))
    if max_proactive is None:
        return ranked
    overflow = {id(c) for c in [c for c in ranked if c.pull is None][max_proactive:]}
    return [c for c in ranked if id(c) not in overflow] + [c for c in ranked if id(c) in overflow]
