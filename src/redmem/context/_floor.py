"""The relevance floor: memories that match the query too weakly stay out, however many slots remain.

A context padded to ``max_items`` with memories that share nothing with the question costs
tokens and misleads the model ("Gus grows tomatoes" for "When do we deploy?"). Each pull
candidate carries its ``match`` (:func:`~redmem.context._retrieval.match_scores`: its keyword
and vector scores, each divided by its list's best, averaged); one below ``min_relevance`` is
cut. Candidates without a match (composite ranking, which answers no query) and proactive
(push-only) candidates, which the push path offers on purpose and caps itself, are kept.
Pure computation, no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence

from ._candidates import Candidate
from ._retrieval import MATCH_SIGNAL

__all__ = ["above_floor", "DEFAULT_MIN_RELEVANCE"]

#: The default floor, calibrated on LoCoMo's first three dev conversations and the dev half of
#: the user-scenario suite (docs/recipes/context-assembler.md, "The relevance floor").
DEFAULT_MIN_RELEVANCE = 0.3


def above_floor(candidates: Sequence[Candidate], min_relevance: float | None) -> tuple[list[Candidate], list[Candidate]]:
    """``(kept, cut)`` in the given order: cut are the pull candidates whose match is below
    ``min_relevance`` (None: nothing is cut)."""
    if min_relevance is None:
        return list(candidates), []
    kept: list[Candidate] = []
    cut: list[Candidate] = []
    for candidate in candidates:
        match = candidate.signals.get(MATCH_SIGNAL)
        (cut if match is not None and match < min_relevance else kept).append(candidate)
    return kept, cut
