"""Relational weight as support strength (spec §5.2): how firmly a session's beats back a claim.

A beat's term weights hold, per term, ``PRESENCE_FLOOR + (1 - PRESENCE_FLOOR) * w`` with ``w``
the term's relational (layer 1) weight (:mod:`.beats`). A claim's support in one beat is the
mean relational weight of its terms there (an absent term: 0); its strength is the best beat's::

    strength(claim) = max over beats b of mean over terms t of claim: w_b(t)

so 1 when every term of the claim is woven into one beat's recurring vocabulary, 0 when none
occurs. :func:`confidence_signal` maps it onto a ConfidenceField signal: ``0.5 + strength / 2``,
so support corroborates and its absence is no contradiction.
"""

from __future__ import annotations

from collections.abc import Sequence
from statistics import fmean

from ._beats import PRESENCE_FLOOR, Beat

__all__ = ["support_strength", "confidence_signal"]


def support_strength(beats: Sequence[Beat], terms: Sequence[str]) -> float:
    """The claim's support strength over ``beats`` (module docstring); 0 with no beat or no term."""
    if not terms or not beats:
        return 0.0
    def relational(beat: Beat, term: str) -> float:
        weight = beat.term_weights.get(term)
        return 0.0 if weight is None else max(0.0, (weight - PRESENCE_FLOOR) / (1 - PRESENCE_FLOOR))
    return max(fmean(relational(b, t) for t in terms) for b in beats)


def confidence_signal(strength: float) -> float:
    """A ConfidenceField signal from a support strength: ``0.5 + strength / 2`` (corroboration only)."""
    return 0.5 + min(1.0, max(0.0, strength)) / 2
