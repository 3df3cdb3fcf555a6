"""redmem: memory for LLM agents on Redis — memory primitives as model fields, recipes on top.

The public names load on first use (PEP 562 ``__getattr__``), each from the module that defines
it, so ``import redmem`` and ``redmem --help`` do not load the whole library (numpy, redis-py,
every recipe) before they need it; ``from redmem import X`` and ``redmem.X`` work as ever.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from . import _tiktoken_ranks as tiktoken_ranks

if TYPE_CHECKING:
    from .context import (
        estimate_tokens,
        exact_counter,
        query_adaptive_weights,
        reciprocal_rank_fusion,
        resolve_counter,
    )
    from .embeddings import EmbeddingError, HashingEmbeddings, MiniLMEmbeddings, OpenAIEmbeddings
    from .fields import (
        BM25Field,
        ConfidenceField,
        CoOccurrenceField,
        CyclicDecayField,
        DecayingSortedField,
        EmbeddingField,
        Entity,
        ExistenceFilter,
        FrequencySketch,
        TemporalPeriod,
        reindex,
    )
    from .model import (
        AutoKeyField,
        BooleanField,
        BytesField,
        DatetimeField,
        DbKey,
        DictField,
        Field,
        FloatField,
        Hit,
        HitList,
        IndexNotBuiltWarning,
        IntField,
        KeyField,
        ListField,
        MigrationReport,
        Model,
        SchemaChangedWarning,
        SchemaWarning,
        SortedField,
        StringField,
        TagField,
    )
    from .observation import (
        AccessTrackerMixin,
        EventStreamMixin,
        ObservationProtocol,
        OutcomeError,
        PredictionLedgerMixin,
        RecallProposal,
        StreamConsumer,
        StreamEvent,
        WriteFilterMixin,
    )
    from .recipes import (
        AdaptiveAssembler,
        AssemblerConfig,
        AssemblyResult,
        ContextAssembler,
        DefaultMemory,
        HybridMemory,
        Memory,
        PolicyCache,
        RetrievalQuality,
        SubconsciousMemory,
    )
    from .store import (
        ArgumentTypeError,
        ConfigurationError,
        MemoryTooLarge,
        ModelException,
        PermissionDenied,
        QueryArgumentError,
        QueryArgumentTypeError,
        QueryException,
        RecordNotFound,
        RedmemError,
        ServerError,
        ServerUnavailable,
        ValidationError,
        WriteConflict,
        WriteOutcomeUnknown,
        WriteRefused,
        aclose_clients,
        configure,
        connect,
        get_client,
    )
    from .text import Analyzer, default_analyzer

__version__ = "0.1.0"

# tiktoken's own encoding_for_model("gpt-4") (the seeds' counter) works offline once redmem is imported.
tiktoken_ranks.seed_quietly()

#: Each public name and the module it is imported from when first used.
_HOMES: dict[str, str] = {
    **dict.fromkeys(["estimate_tokens", "exact_counter", "query_adaptive_weights", "reciprocal_rank_fusion", "resolve_counter"], ".context"),
    **dict.fromkeys(["EmbeddingError", "HashingEmbeddings", "MiniLMEmbeddings", "OpenAIEmbeddings"], ".embeddings"),
    **dict.fromkeys(["BM25Field", "ConfidenceField", "CoOccurrenceField", "CyclicDecayField", "DecayingSortedField", "EmbeddingField", "Entity", "ExistenceFilter", "FrequencySketch", "TemporalPeriod", "reindex"], ".fields"),
    **dict.fromkeys(["AutoKeyField", "BooleanField", "BytesField", "DatetimeField", "DbKey", "DictField", "Field", "FloatField", "Hit", "HitList", "IndexNotBuiltWarning", "IntField", "KeyField", "ListField", "MigrationReport", "Model", "SchemaChangedWarning", "SchemaWarning", "SortedField", "StringField", "TagField"], ".model"),
    **dict.fromkeys(["AccessTrackerMixin", "EventStreamMixin", "ObservationProtocol", "OutcomeError", "PredictionLedgerMixin", "RecallProposal", "StreamConsumer", "StreamEvent", "WriteFilterMixin"], ".observation"),
    **dict.fromkeys(["AdaptiveAssembler", "AssemblerConfig", "AssemblyResult", "ContextAssembler", "DefaultMemory", "HybridMemory", "Memory", "PolicyCache", "RetrievalQuality", "SubconsciousMemory"], ".recipes"),
    **dict.fromkeys(["ArgumentTypeError", "ConfigurationError", "MemoryTooLarge", "ModelException", "PermissionDenied", "QueryArgumentError", "QueryArgumentTypeError", "QueryException", "RecordNotFound", "RedmemError", "ServerError", "ServerUnavailable", "ValidationError", "WriteConflict", "WriteOutcomeUnknown", "WriteRefused", "aclose_clients", "configure", "connect", "get_client"], ".store"),
    **dict.fromkeys(["Analyzer", "default_analyzer"], ".text"),
}
#: Subpackages reachable as attributes (``redmem.store.settings()``) before anything imported them.
_PACKAGES = {"cli", "cli_commands", "context", "embeddings", "fields", "integrations", "lifecycle", "model",
             "observation", "recipes", "store", "testing", "text"}

__all__ = [
    # model
    "Model", "DbKey", "Field", "StringField", "IntField", "FloatField", "BooleanField",
    "ListField", "DictField", "BytesField", "DatetimeField", "KeyField", "AutoKeyField",
    "SortedField", "TagField", "Hit", "HitList", "MigrationReport", "SchemaWarning", "SchemaChangedWarning",
    "IndexNotBuiltWarning",
    # memory primitives
    "DecayingSortedField", "CyclicDecayField", "TemporalPeriod", "ConfidenceField",
    "CoOccurrenceField", "Entity", "ExistenceFilter", "FrequencySketch", "BM25Field",
    "EmbeddingField", "reindex",
    # observation
    "AccessTrackerMixin", "WriteFilterMixin", "EventStreamMixin", "PredictionLedgerMixin",
    "ObservationProtocol", "RecallProposal", "StreamConsumer", "StreamEvent",
    # retrieval and context
    "Analyzer", "default_analyzer", "HashingEmbeddings", "MiniLMEmbeddings", "OpenAIEmbeddings",
    "reciprocal_rank_fusion", "query_adaptive_weights", "estimate_tokens", "exact_counter",
    "resolve_counter",
    # recipes
    "ContextAssembler", "AssemblerConfig", "AssemblyResult", "RetrievalQuality", "AdaptiveAssembler", "PolicyCache",
    "SubconsciousMemory", "DefaultMemory", "HybridMemory", "Memory",
    # connection and errors
    "connect", "configure", "get_client", "aclose_clients", "RedmemError", "ValidationError", "ArgumentTypeError",
    "QueryException", "QueryArgumentError", "QueryArgumentTypeError",
    "ConfigurationError", "ModelException", "ServerUnavailable", "WriteConflict", "WriteOutcomeUnknown",
    "RecordNotFound", "PermissionDenied", "ServerError", "WriteRefused", "EmbeddingError", "OutcomeError", "MemoryTooLarge",
]

def __getattr__(name: str) -> Any:
    """Import a public name (or a subpackage) the first time it is used, and keep it."""
    if name in _HOMES:
        value = getattr(importlib.import_module(_HOMES[name], __name__), name)
    elif name in _PACKAGES:
        value = importlib.import_module(f".{name}", __name__)
    else:
        raise AttributeError(f"module 'redmem' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
