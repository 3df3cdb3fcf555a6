"""A beat: one snapshot with its term weights, and the beats of a session kept in memory.

The term weights are the snapshot's weight map by concept: for each analyser term of its chunks,
the best over the chunks holding it of ``PRESENCE_FLOOR + (1 - PRESENCE_FLOOR) * w`` where ``w``
is the term's relational (layer 1) weight in that chunk. They outlive the chunks' text, so a
snapshot stays searchable after the text is dropped.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ._macro import Beat, DomainStep, domain_steps

__all__ = ["Beat", "MemoryBeats", "snapshot_term_weights", "PRESENCE_FLOOR"]

#: The weight a term gets in a snapshot for being there at all (the rest is its relational weight).
PRESENCE_FLOOR = 0.1


def snapshot_term_weights(chunk_terms: Sequence[Mapping[str, float]]) -> dict[str, float]:
    """The term weights of a snapshot from each chunk's relational term weights (module docstring)."""
    weights: dict[str, float] = {}
    for terms in chunk_terms:
        for term, weight in terms.items():
            value = round(PRESENCE_FLOOR + (1 - PRESENCE_FLOOR) * weight, 4)
            if value > weights.get(term, 0.0):
                weights[term] = value
    return weights


class MemoryBeats:
    """The beats of a session held in this process (an engine without a Redis session)."""

    def __init__(self) -> None:
        self._beats: list[Beat] = []

    def next_position(self) -> int:
        return len(self._beats)

    def append(self, beat: Beat) -> None:
        self._beats.append(beat)

    def count(self) -> int:
        return len(self._beats)

    def between(self, start: int = 0, stop: int | None = None) -> list[Beat]:
        end = len(self._beats) if stop is None else stop + 1
        return self._beats[max(start, 0) : max(end, 0)]

    def last(self, n: int) -> list[Beat]:
        return self._beats[-n:] if n > 0 else []

    def domain_evolution(self, start: int = 0, stop: int | None = None) -> list[DomainStep]:
        """The domain steps of positions ``start..stop`` (``shifted`` against the step before ``start``)."""
        before = self._beats[max(start, 0) - 1 : max(start, 0)] if start > 0 else []
        steps = domain_steps([(b.snapshot.conversation_position, b.snapshot.domain_summary)
                              for b in before + self.between(start, stop)])
        return steps[len(before):]

    def first_mention(self, terms: Sequence[str]) -> int | None:
        for beat in self._beats:
            if all(t in beat.term_weights for t in terms):
                return beat.snapshot.conversation_position
        return None

    def mentioning(self, terms: Sequence[str], start: int = 0, stop: int | None = None) -> list[Beat]:
        return [b for b in self.between(start, stop) if any(t in b.term_weights for t in terms)]
