"""redmem: memory for LLM agents on Redis — memory primitives as model fields, recipes on top."""

from .model import (
    AutoKeyField,
    BooleanField,
    BytesField,
    DatetimeField,
    DbKey,
    DictField,
    Field,
    FloatField,
    IntField,
    KeyField,
    ListField,
    Model,
    SortedField,
    StringField,
    TagField,
)
from .store import (
    ConfigurationError,
    ModelException,
    QueryException,
    RedmemError,
    ServerUnavailable,
    ValidationError,
    configure,
    connect,
    get_client,
)

__version__ = "0.1.0"

__all__ = [
    "AutoKeyField",
    "BooleanField",
    "BytesField",
    "DatetimeField",
    "DbKey",
    "DictField",
    "Field",
    "FloatField",
    "IntField",
    "KeyField",
    "ListField",
    "Model",
    "SortedField",
    "StringField",
    "TagField",
    "ConfigurationError",
    "ModelException",
    "QueryException",
    "RedmemError",
    "ServerUnavailable",
    "ValidationError",
    "configure",
    "connect",
    "get_client",
]
