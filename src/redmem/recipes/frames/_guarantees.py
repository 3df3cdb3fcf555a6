"""Guarantees and contradiction suppression: which scored candidates a frame keeps (pure, no I/O).

Rules, in order:

1. Oversample: the best ``top_k * 2`` candidates by score, plus every guaranteed block (a block
   matching a guarantee pattern that passed the pre-filter's tags and categories, however long ago
   it was last reinforced: the active-hours window never drops it; an archived block is never guaranteed).
2. Suppress: for every contradicting pair among them, the loser is removed (every pair is judged,
   a loser of one pair still beats its own weaker partners). The loser is the non-guaranteed block
   when exactly one is guaranteed; else the lower confidence, then the less recently reinforced,
   then the larger id. Suppression only removes.
3. Select: every surviving guaranteed block (best score first), even beyond ``top_k``; then the
   best other survivors until ``top_k`` blocks are chosen.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import replace

from ._scoring import Scored

__all__ = ["CONTRADICTION_OVERSAMPLE", "oversampled", "suppress_contradictions", "select", "loser"]

#: Candidates kept for suppression: ``top_k`` times this.
CONTRADICTION_OVERSAMPLE = 2


def oversampled(ranked: Sequence[Scored], guaranteed: Collection[str], top_k: int) -> list[Scored]:
    """The best ``top_k * CONTRADICTION_OVERSAMPLE`` of ``ranked`` (best first) and every guaranteed one."""
    limit = top_k * CONTRADICTION_OVERSAMPLE
    return [s for rank, s in enumerate(ranked) if rank < limit or s.candidate.id in guaranteed]


def loser(a: Scored, b: Scored, guaranteed: Collection[str]) -> str:
    """The id of the block of a contradicting pair that leaves the frame."""
    a_kept, b_kept = a.candidate.id in guaranteed, b.candidate.id in guaranteed
    if a_kept != b_kept:
        return b.candidate.id if a_kept else a.candidate.id

    def strength(s: Scored) -> tuple[float, float, str]:
        return (s.candidate.confidence, s.candidate.last_reinforced, _inverted(s.candidate.id))

    return b.candidate.id if strength(a) > strength(b) else a.candidate.id


def _inverted(text: str) -> str:
    """A key that sorts ``text`` descending (the smaller id is the stronger)."""
    return "".join(chr(0x10FFFF - ord(c)) for c in text)


def suppress_contradictions(
    candidates: Sequence[Scored], pairs: Sequence[tuple[str, str]], guaranteed: Collection[str],
) -> list[Scored]:
    """``candidates`` without the loser of every contradicting pair of which both are present."""
    by_id = {s.candidate.id: s for s in candidates}
    removed = {loser(by_id[a], by_id[b], guaranteed) for a, b in pairs if a in by_id and b in by_id}
    return [s for s in candidates if s.candidate.id not in removed]


def select(survivors: Sequence[Scored], guaranteed: Collection[str], top_k: int) -> list[Scored]:
    """Every guaranteed survivor, then the best others up to ``top_k`` in all (survivors are best first)."""
    pinned = [replace(s, guaranteed=True) for s in survivors if s.candidate.id in guaranteed]
    others = [s for s in survivors if s.candidate.id not in guaranteed]
    return pinned + others[: max(top_k - len(pinned), 0)]
