"""redmem: memory for LLM agents on Redis — memory primitives as model fields, recipes on top."""

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
    PolicyCache,
    RetrievalQuality,
    SubconsciousMemory,
)
from .recipes.memory import Memory
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
