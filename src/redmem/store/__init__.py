"""The store layer: connections, the embedded server, key schema, Lua scripts and errors."""

from .connection import configure, connect, get_client, server_address, settings
from .errors import (
    ConfigurationError,
    ModelException,
    PermissionDenied,
    QueryException,
    RedmemError,
    ServerUnavailable,
    ValidationError,
    WriteConflict,
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
    "PermissionDenied",
    "QueryException",
    "RedmemError",
    "ServerUnavailable",
    "ValidationError",
    "WriteConflict",
    "RecordNotFound",
    "KeySpace",
    "escape",
    "unescape",
]
