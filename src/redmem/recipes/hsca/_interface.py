"""HSCA's data: the tag vocabularies and the micro (WeightedChunk) and meso (ContextSnapshot) levels.

Plain dataclasses and ``str`` enums; ``to_dict()`` gives primitives (scores rounded to 4 places)
and ``from_dict()`` reads them back, defaulting the optional keys as the module interface does
(its lists and dicts copied: the object shares nothing with the dict it was read from).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

__all__ = ["DomainTag", "NuanceFlag", "WeightedChunk", "ContextSnapshot", "MODEL_FLAGS"]


class DomainTag(StrEnum):
    """The controlled vocabulary of layer 2 (``unclassified``: no domain could be decided).

    The spec's domains, then redmem's everyday topics of conversation (``family`` to ``celebrations``,
    :data:`~.domains.EVERYDAY_DOMAINS`)."""

    PHYSICS = "physics"
    MATHEMATICS = "mathematics"
    LEGAL = "legal"
    MEDICAL = "medical"
    POETRY = "poetry"
    NARRATIVE = "narrative"
    TECHNICAL_PROSE = "technical_prose"
    CONVERSATIONAL = "conversational"
    PHILOSOPHICAL = "philosophical"
    HISTORICAL = "historical"
    FAMILY = "family"
    RELATIONSHIPS = "relationships"
    WORK = "work"
    EDUCATION = "education"
    FOOD = "food"
    TRAVEL = "travel"
    PETS = "pets"
    ARTS_HOBBIES = "arts_hobbies"
    FITNESS = "fitness"
    EMOTIONS = "emotions"
    COMMUNITY = "community"
    HOME = "home"
    ENTERTAINMENT = "entertainment"
    CELEBRATIONS = "celebrations"
    CROSS_DOMAIN = "cross_domain"
    UNCLASSIFIED = "unclassified"


class NuanceFlag(StrEnum):
    """Layer 3's flags; a ``_model`` flag came from a model call. An absent flag is unknown, not false.

    ``short_chunk`` is redmem's addition: layer 1 scored the chunk as a short one.
    """

    METAPHOR = "metaphor"
    METAPHOR_MODEL = "metaphor_model"
    SARCASM = "sarcasm"
    SARCASM_MODEL = "sarcasm_model"
    EMOTIONAL_TONE_POSITIVE = "emotional_tone_positive"
    EMOTIONAL_TONE_NEGATIVE = "emotional_tone_negative"
    EMOTIONAL_TONE_URGENT = "emotional_tone_urgent"
    EMOTIONAL_TONE_NEUTRAL = "emotional_tone_neutral"
    RHETORICAL_QUESTION = "rhetorical_question"
    ANALOGY = "analogy"
    ANALOGY_MODEL = "analogy_model"
    HEDGED = "hedged"
    ABSOLUTE = "absolute"
    NARRATIVE_THREAD = "narrative_thread"
    NARRATIVE_THREAD_MODEL = "narrative_thread_model"
    INSTRUCTIONAL = "instructional"
    SHORT_CHUNK = "short_chunk"


#: The flags only a model can give, as the model returns them (with the ``_model`` suffix).
MODEL_FLAGS: dict[str, NuanceFlag] = {
    "metaphor": NuanceFlag.METAPHOR_MODEL,
    "sarcasm": NuanceFlag.SARCASM_MODEL,
    "analogy": NuanceFlag.ANALOGY_MODEL,
    "narrative_thread": NuanceFlag.NARRATIVE_THREAD_MODEL,
}


@dataclass
class WeightedChunk:
    """One scored turn: relational weight and coherence in [0, 1], domain tags, nuance flags.

    ``parent_id`` is the id of the snapshot that took the chunk (None while it is in the buffer).
    """

    chunk_id: str
    text: str
    layer1_score: float
    domain_tags: list[str]
    coherence_score: float
    nuance_flags: list[str]
    parent_id: str | None
    created_at: float = field(default_factory=time.time)

    def to_dict(self) -> dict[str, Any]:
        return {
            "chunk_id": self.chunk_id,
            "text": self.text,
            "layer1_score": round(self.layer1_score, 4),
            "domain_tags": self.domain_tags,
            "coherence_score": round(self.coherence_score, 4),
            "nuance_flags": self.nuance_flags,
            "parent_id": self.parent_id,
            "created_at": self.created_at,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> WeightedChunk:
        return cls(
            chunk_id=d["chunk_id"],
            text=d["text"],
            layer1_score=d["layer1_score"],
            domain_tags=list(d.get("domain_tags", [DomainTag.UNCLASSIFIED.value])),
            coherence_score=d["coherence_score"],
            nuance_flags=list(d.get("nuance_flags", [])),
            parent_id=d.get("parent_id"),
            created_at=d.get("created_at", 0.0),
        )


@dataclass
class ContextSnapshot:
    """One conversational beat: its chunks with their weight map, domain distribution and density.

    ``domain_summary`` maps a domain tag to its share of the chunks' layer-1 weight;
    ``conversation_position`` is the snapshot's index in its session; ``forced`` marks a snapshot
    taken because the buffer was full, not because it was coherent.
    """

    snapshot_id: str
    chunks: list[WeightedChunk]
    macro_weight: float
    domain_summary: dict[str, float]
    conversation_position: int
    forced: bool
    created_at: float = field(default_factory=time.time)

    def to_dict(self) -> dict[str, Any]:
        return {
            "snapshot_id": self.snapshot_id,
            "chunks": [c.to_dict() for c in self.chunks],
            "macro_weight": round(self.macro_weight, 4),
            "domain_summary": {k: round(v, 4) for k, v in self.domain_summary.items()},
            "conversation_position": self.conversation_position,
            "forced": self.forced,
            "created_at": self.created_at,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ContextSnapshot:
        return cls(
            snapshot_id=d["snapshot_id"],
            chunks=[WeightedChunk.from_dict(c) for c in d.get("chunks", [])],
            macro_weight=d["macro_weight"],
            domain_summary=dict(d.get("domain_summary", {})),
            conversation_position=d.get("conversation_position", 0),
            forced=d.get("forced", False),
            created_at=d.get("created_at", 0.0),
        )

    def weight_map(self) -> dict[str, float]:
        """Each chunk's layer-1 score by chunk id: the durable artifact of the snapshot."""
        return {c.chunk_id: c.layer1_score for c in self.chunks}
