"""Candidates: records found by a retrieval path, and the merge that re-ranks both paths together.

A pull candidate (query-driven) scores by fusion; a push candidate (proactive) by its cyclic
score. The two scales differ, so each path's scores are divided by that path's best score
before they are added:

    combined(d) = pull(d) / max pull  +  push(d) / max push

A record found by both paths therefore outranks one found by either alone, and the best of
each path scores 1.0. Ties keep pull order, then push order.

Push-only records (proactive: found by the cyclic scan alone, not by the query) never outrank
what the query found. When a question was asked, every pull candidate comes first and at most
``max_proactive`` push-only records follow, best first: they fill only the slots the pull path
leaves, and the others are dropped. With no question (nothing for a pull candidate to answer)
the best ``max_proactive`` push-only records compete at their combined score and the rest queue
behind the pull candidates.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..model.dbkey import DbKey

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
    """Deduplicate by key and sort by the combined score (module docstring), best first.

    ``asked`` (the query has text): every push-only record comes after every pull candidate,
    and only the best ``max_proactive`` of them are kept. Otherwise push-only records past the
    best ``max_proactive`` move behind every pull candidate, yet fill slots the pull path leaves
    empty. Records found by both paths are pull candidates and rank by their combined score.
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
    for candidate in merged.values():
        candidate.combined = (candidate.pull or 0.0) / pull_top + (candidate.push or 0.0) / push_top
    order = {key: i for i, key in enumerate(merged)}
    ranked = sorted(merged.values(), key=lambda c: (-c.combined, order[c.key]))
    if asked:
        found = [c for c in ranked if c.pull is not None]
        proactive = [c for c in ranked if c.pull is None]
        return found + (proactive if max_proactive is None else proactive[:max_proactive])
    if max_proactive is None:
        return ranked
    overflow = {id(c) for c in [c for c in ranked if c.pull is None][max_proactive:]}
    return [c for c in ranked if id(c) not in overflow] + [c for c in ranked if id(c) in overflow]
