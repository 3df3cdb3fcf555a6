"""The store layer: connections (and their asyncio facades), the embedded server, key schema, Lua scripts and errors."""

from .._public import publish
from ._aio import aclose_clients
from ._connection import configure, connect, get_client, server_address, settings
from ._embedded import EmbeddedServer
from ._errors import (
    AgentNotServed,
    ArgumentTypeError,
    ConfigurationError,
    DataDirectoryError,
    EmbeddingError,
    ExportError,
    ExtractionError,
    MemoryTooLarge,
    MissingQueryMethod,
    ModelException,
    OutcomeError,
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
from ._local_server import DATA_DIR_ENV_VAR, LocalServer

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
    "AgentNotServed",
    "DataDirectoryError",
    "EmbeddingError",
    "ExportError",
    "ExtractionError",
    "MissingQueryMethod",
    "OutcomeError",
    "KeySpace",
    "escape",
    "unescape",
    "EmbeddedServer",
    "LocalServer",
    "DATA_DIR_ENV_VAR",
]

publish(__name__, __all__)
