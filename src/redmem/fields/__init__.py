"""Memory primitives as model fields, one module each, their Lua beside them in ``redmem/fields/lua/``."""

from .bloom import ExistenceFilter
from .bm25 import BM25Field, keyword_search
from .composite import composite_score
from .confidence import ConfidenceField
from .cooccurrence import CoOccurrenceField, Entity
from .cyclic import CyclicDecayField, TemporalPeriod, above_cyclic_threshold
from .decay import DecayingSortedField, top_by_decay
from .embedding import EmbeddingField, embed_many
from .reindex import reindex
from .sketch import FrequencySketch

__all__ = [
    "ExistenceFilter",
    "ConfidenceField",
    "CoOccurrenceField",
    "Entity",
    "FrequencySketch",
    "DecayingSortedField",
    "top_by_decay",
    "CyclicDecayField",
    "TemporalPeriod",
    "above_cyclic_threshold",
    "EmbeddingField",
    "embed_many",
    "BM25Field",
    "keyword_search",
    "reindex",
    "composite_score",
]
