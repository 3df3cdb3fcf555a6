"""Layers 1 to 3 on one turn: the WeightedChunk and the term weights layer 1 found.

Checks the turn (:func:`.text.checked_turn`), parses it once, then: relational weight
(:mod:`.relational`, against ``context`` when the turn is short) times the chunk's originality
(:mod:`.originality`, the discount for stuffing), domain tags (:mod:`.domains`),
coherence (:mod:`.coherence`), the deterministic nuance flags (:mod:`.nuance`), ``short_chunk``
when layer 1 scored the turn as short, and the model's flags when a model is given
(:mod:`.nuance_model`). Empty text is a defined result: layer 1 and coherence 0,
``["unclassified"]``, only the ``short_chunk`` flag.

Flag weights (tuned per agent, :mod:`.tuning`) scale the relational weight by the chunk's
flags: ``layer1 = min(1, relational * originality * prod(flag_weights.get(f, 1) for f in flags))``;
with no weights layer 1 is ``relational * originality``.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ...text._analyzer import Analyzer
from ._coherence import coherence_score
from ._domain_model import EmbeddingDomains
from ._domains import KeywordWeights, classify_domains
from ._interface import NuanceFlag, WeightedChunk
from ._nuance import deterministic_flags
from ._nuance_model import NuanceModel
from ._originality import originality
from ._relational import TIE_SATURATION, relational_weight
from ._text import MAX_TURN_CHARS, ParsedTurn, checked_turn, parse_turn

__all__ = ["ScoredTurn", "score_turn", "weighted_layer1"]


@dataclass(frozen=True)
class ScoredTurn:
    """A scored turn: its chunk, its parse (the context of later short turns) and its term weights."""

    chunk: WeightedChunk
    parsed: ParsedTurn
    term_weights: dict[str, float]


def weighted_layer1(relational: float, flags: Sequence[str], flag_weights: Mapping[str, float] | None) -> float:
    """The relational weight scaled by the chunk's flag weights, capped at 1 (module docstring)."""
    if not flag_weights:
        return relational
    return min(1.0, relational * math.prod(flag_weights.get(f, 1.0) for f in flags))


def score_turn(text: Any, window: int, context: Sequence[ParsedTurn] = (),
               nuance_model: NuanceModel | None = None, analyzer: Analyzer | None = None,
               domain_model: EmbeddingDomains | None = None,
               flag_weights: Mapping[str, float] | None = None,
               keyword_weights: KeywordWeights | None = None,
               max_chars: int = MAX_TURN_CHARS, tie_saturation: float = TIE_SATURATION,
               short_prior: float = 0.0) -> ScoredTurn:
    """Layers 1-3 of ``text``; ArgumentTypeError for a non-str, ValidationError for unwritable text.

    ``domain_model`` tags domains by meaning (:mod:`.domain_model`) instead of keyword lists;
    ``keyword_weights`` scale the keyword lists' hits (:mod:`.domains`); ``max_chars``: the
    longest turn taken (ValidationError beyond it); ``tie_saturation`` and ``short_prior``: layer
    1's conversation terms (:mod:`.relational`).
    """
    parsed = parse_turn(checked_turn(text, max_chars), analyzer)
    relational = relational_weight(parsed, window, context, tie_saturation=tie_saturation, short_prior=short_prior)
    discounted = relational.score * originality(parsed)
    flags = deterministic_flags(parsed)
    if relational.short_chunk:
        flags.append(NuanceFlag.SHORT_CHUNK.value)
    if nuance_model is not None and parsed.sentences:
        flags += nuance_model.flags(parsed.text)
    chunk = WeightedChunk(
        chunk_id=str(uuid.uuid4()),
        text=parsed.text,
        layer1_score=weighted_layer1(discounted, flags, flag_weights),
        domain_tags=(classify_domains(parsed, keyword_weights) if domain_model is None
                     else domain_model.classify(parsed, context, keyword_weights)),
        coherence_score=coherence_score(parsed),
        nuance_flags=flags,
        parent_id=None,
    )
    return ScoredTurn(chunk, parsed, relational.term_weights)
