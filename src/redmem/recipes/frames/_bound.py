"""The score bound that lets the candidate script skip reading blocks no frame could choose.

A block reached by graph expansion has similarity 0, so its composite score is at most

    upper = w_conf * confidence + feedback_most

(every signal lies in [0, 1]; ``feedback_most``: ``feedback_cap`` when damped, ``w_rec + w_reinf +
w_cent`` raw), and a seed's is at least

    lower = w_sim * similarity + w_conf * confidence.

When ``top_k`` seeds that contradict nothing have ``lower > upper``, they rank above the block,
survive suppression and fill the frame (guaranteed blocks only take places): the block cannot be
chosen, so the script returns its scoring inputs (the normalisation and the explanation use them)
but does not read its stored fields. :data:`MARGIN` covers the rounding of the scores' sums.
"""

from __future__ import annotations

from dataclasses import dataclass

from ._definitions import ScoringWeights

__all__ = ["ScoreBound", "NO_BOUND", "MARGIN", "score_bound"]

#: Added to ``feedback_most``: more than the rounding error of a composite score (a few ulps of 1).
MARGIN = 1e-9


@dataclass(frozen=True)
class ScoreBound:
    """The bound's inputs as the candidate script takes them (``top_k`` 0: no bound)."""

    top_k: int
    similarity: float
    confidence: float
    feedback_most: float

    def arguments(self) -> list[str]:
        """ARGV[7..10] of ``frames_candidates.lua``."""
        return [str(self.top_k), repr(self.similarity), repr(self.confidence), repr(self.feedback_most)]


NO_BOUND = ScoreBound(0, 0.0, 0.0, 0.0)


def score_bound(weights: ScoringWeights, feedback_cap: float | None, top_k: int) -> ScoreBound:
    """The bound of a frame with a query scored with ``weights`` (``feedback_cap`` as
    :func:`~._scoring.frame_composite` takes it)."""
    share = weights.recency + weights.reinforcement + weights.centrality
    most = share if feedback_cap is None else (feedback_cap if share > 0 else 0.0)
    return ScoreBound(top_k, weights.similarity, weights.confidence, most + MARGIN)
