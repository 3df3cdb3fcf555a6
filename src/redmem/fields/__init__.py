"""Memory primitives as model fields, one module each, their Lua beside them in ``redmem/fields/lua/``."""

from .._public import publish
from ._bloom import ExistenceFilter
from ._bm25 import BM25Field, BM25Search, keyword_search
from ._composite import composite_score
from ._confidence import ConfidenceField
from ._cooccurrence import CoOccurrenceField, Entity
from ._cyclic import CyclicDecayField, TemporalPeriod, above_cyclic_threshold
from ._decay import DecayingSortedField, top_by_decay
from ._embedding import EmbeddingField, embed_many
from ._reindex import reindex
from ._restore import new_cache_epoch, restore_partition
from ._sketch import FrequencySketch

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
    "BM25Search",
    "new_cache_epoch",
    "restore_partition",
]

publish(__name__, __all__)
