"""The store layer: connections, the embedded server, key schema, Lua scripts and errors."""

from .connection import configure, connect, get_client, server_address, settings
from .errors import (
    ConfigurationError,
    ModelException,
    QueryException,
    RedmemError,
    ServerUnavailable,
    ValidationError,
    WriteConflict,
    WriteOutcomeUnknown,
    RecordNotFound,
)
from .keys import KeySpace, escape, unescape

__all__ = [
    "configure",
    "connect",
    "get_client",
    "server_address",
    "settings",
    "ConfigurationError",
    "ModelException",
    "QueryException",
    "RedmemError",
    "ServerUnavailable",
    "ValidationError",
    "WriteConflict",
    "WriteOutcomeUnknown",
    "RecordNotFound",
    "KeySpace",
    "escape",
    "unescape",
]
