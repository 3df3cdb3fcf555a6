"""The scores of a memory that outcomes move: relevance (decay), confidence, rhythm (its cycle's strength)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..fields._confidence import ConfidenceField
from ._memory import ChatMemory

__all__ = ["Scores", "snapshot", "decide_outcomes"]


@dataclass(frozen=True)
class Scores:
    """One memory's scores at one moment (None: the record has no entry).

    ``rhythm`` is the learned amplitude of the memory's daily cycle, what acting on a routine
    strengthens and dismissing it weakens (its cyclic score also moves with the time of day).
    """

    relevance: float | None
    confidence: float
    rhythm: float | None


def snapshot(memories: list[ChatMemory], as_of: float | None = None) -> dict[str, Scores]:
    """Each memory's scores at ``as_of`` (default now), by Redis key, read without side effects.

    Two snapshots compared should share ``as_of``: decaying and cyclic scores move with the clock.
    """
    return {
        memory.db_key.redis_key: Scores(
            ChatMemory.relevance.score_of(memory, as_of),
            ConfidenceField.get_confidence(memory, "confidence"),
            sum(ChatMemory.rhythm.amplitudes_of(memory).values()),
        )
        for memory in memories
    }


def _mentions(text: str, phrases: tuple[str, ...]) -> bool:
    lowered = text.lower()
    return any(phrase.lower() in lowered for phrase in phrases)


def decide_outcomes(
    records: list[Any], proactive: list[Any], uses: tuple[str, ...], contradicts: tuple[str, ...]
) -> dict[str, str]:
    """The demo's stand-in for a model reporting what it did with each memory.

    A memory mentioning a ``contradicts`` phrase is ``contradicted`` (it is out of date), one
    mentioning a ``uses`` phrase is ``acted`` on, a proactive one that answers nothing is
    ``dismissed``; the others are left out (``deferred``).
    """
    pushed = {memory.db_key.redis_key for memory in proactive}
    outcomes = {}
    for memory in records:
        key = memory.db_key.redis_key
        if _mentions(memory.content or "", contradicts):
            outcomes[key] = "contradicted"
        elif _mentions(memory.content or "", uses):
            outcomes[key] = "acted"
        elif key in pushed:
            outcomes[key] = "dismissed"
    return outcomes
