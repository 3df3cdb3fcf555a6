"""The store layer: connections (and their asyncio facades), the embedded server, key schema, Lua scripts and errors."""

from ._aio import aclose_clients
from ._connection import configure, connect, get_client, server_address, settings
from ._errors import (
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
)
from ._keys import KeySpace, escape, unescape

__all__ = [
    "aclose_clients",
    "configure",
    "connect",
    "get_client",
    "server_address",
    "settings",
    "ArgumentTypeError",
    "ConfigurationError",
    "MemoryTooLarge",
    "ModelException",
    "PermissionDenied",
    "QueryException",
    "QueryArgumentError",
    "QueryArgumentTypeError",
    "RedmemError",
    "ServerUnavailable",
    "ValidationError",
    "WriteConflict",
    "WriteOutcomeUnknown",
    "WriteRefused",
    "ServerError",
    "RecordNotFound",
    "KeySpace",
    "escape",
    "unescape",
]
