"""Macro-layer computations over a session's beats: domain evolution and localised relevance. Pure.

Relevance of a beat to a query (its analyser terms ``q``) is the mean term weight of the query's
terms in the beat, damped by distance from a conversation position when one is given::

    relevance = (sum(term_weights.get(t, 0) for t in q) / |q|) * exp(-|position - context_position| / locality)

so a keyword present only in peripheral chunks weighs little (its relational weight is low), and
"what we were discussing three beats ago" is ``context_position = current - 3``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from ._interface import ContextSnapshot

__all__ = ["Beat", "DomainStep", "RelevantBeat", "dominant_domain", "domain_steps", "domain_evolution", "relevance", "damping", "rank_relevant", "DEFAULT_LOCALITY"]

#: Beats of distance over which the position prior falls by a factor e.
DEFAULT_LOCALITY = 3.0


@dataclass(frozen=True)
class Beat:
    """A snapshot and its term weights (built by :mod:`.beats`)."""

    snapshot: ContextSnapshot
    term_weights: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class DomainStep:
    """One snapshot's place in the domain evolution: its dominant domain and whether it moved."""

    position: int
    dominant: str
    domain_summary: dict[str, float]
    shifted: bool


@dataclass(frozen=True)
class RelevantBeat:
    """A snapshot found relevant to a query, with its relevance in [0, 1], the weight of each
    query term in it and the distance damping applied (what an explanation shows)."""

    snapshot: ContextSnapshot
    relevance: float
    terms: dict[str, float] = field(default_factory=dict, compare=False)
    damping: float = 1.0


def dominant_domain(summary: dict[str, float]) -> str:
    """The domain of largest weight (ties by name); ``unclassified`` for an empty summary."""
    return min(summary, key=lambda d: (-summary[d], d)) if summary else "unclassified"


def domain_steps(summaries: Sequence[tuple[int, dict[str, float]]]) -> list[DomainStep]:
    """The steps of ``(position, domain_summary)`` pairs in order: each one's dominant domain
    (largest weight, ties by name) and whether it differs from the previous one's."""
    steps: list[DomainStep] = []
    for position, summary in summaries:
        dominant = dominant_domain(summary)
        shifted = bool(steps) and steps[-1].dominant != dominant
        steps.append(DomainStep(position, dominant, dict(summary), shifted))
    return steps


def domain_evolution(snapshots: Sequence[ContextSnapshot]) -> list[DomainStep]:
    """The domain steps of ``snapshots`` (:func:`domain_steps`): the full-read computation."""
    return domain_steps([(s.conversation_position, s.domain_summary) for s in snapshots])


def relevance(beat: Beat, terms: Sequence[str], context_position: int | None = None,
              locality: float = DEFAULT_LOCALITY) -> float:
    """The relevance of ``beat`` to a query of ``terms`` (module docstring); 0 without terms."""
    distinct = set(terms)
    if not distinct:
        return 0.0
    score = sum(beat.term_weights.get(t, 0.0) for t in distinct) / len(distinct)
    return score * damping(beat, context_position, locality)


def damping(beat: Beat, context_position: int | None, locality: float = DEFAULT_LOCALITY) -> float:
    """``exp(-|position - context_position| / locality)``; 1 without a ``context_position``."""
    if context_position is None:
        return 1.0
    return math.exp(-abs(beat.snapshot.conversation_position - context_position) / locality)


def rank_relevant(beats: Sequence[Beat], terms: Sequence[str], context_position: int | None = None,
                  limit: int = 5, locality: float = DEFAULT_LOCALITY) -> list[RelevantBeat]:
    """The ``limit`` most relevant beats with a positive relevance, best first (ties: earlier first)."""
    scored = [(relevance(b, terms, context_position, locality), b) for b in beats]
    ranked = sorted((s for s in scored if s[0] > 0), key=lambda s: (-s[0], s[1].snapshot.conversation_position))
    distinct = sorted(set(terms))
    return [RelevantBeat(b.snapshot, score, {t: b.term_weights.get(t, 0.0) for t in distinct},
                         damping(b, context_position, locality)) for score, b in ranked[:limit]]
