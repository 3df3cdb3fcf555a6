"""The scores of a memory that outcomes move: relevance (decay), confidence, rhythm (cyclic)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..fields.confidence import ConfidenceField
from .memory import ChatMemory

__all__ = ["Scores", "snapshot", "decide_outcomes"]


@dataclass(frozen=True)
class Scores:
    """One memory's scores at one moment (None: the record has no entry)."""

    relevance: float | None
    confidence: float
    rhythm: float | None


def snapshot(memories: list[ChatMemory]) -> dict[str, Scores]:
    """Each memory's scores now, by Redis key, read without side effects (a few round trips each)."""
    return {
        memory.db_key.redis_key: Scores(
            ChatMemory.relevance.score_of(memory),
            ConfidenceField.get_confidence(memory, "confidence"),
            ChatMemory.rhythm.score_of(memory),
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
