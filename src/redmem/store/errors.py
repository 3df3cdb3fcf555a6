"""The one exception tree of redmem: every error the library raises derives from RedmemError."""

__all__ = [
    "RedmemError",
    "ValidationError",
    "ArgumentTypeError",
    "MemoryTooLarge",
    "QueryException",
    "QueryArgumentError",
    "QueryArgumentTypeError",
    "ConfigurationError",
    "ModelException",
    "ServerUnavailable",
    "WriteConflict",
    "RecordNotFound",
    "PermissionDenied",
    "WriteOutcomeUnknown",
]


class RedmemError(Exception):
    """Base class of every error redmem raises."""


class ValidationError(RedmemError, ValueError):
    """A value does not fit its field (type, null, max_length, finite score...)."""


class ArgumentTypeError(ValidationError, TypeError):
    """An argument has the wrong type (``max_items=None``, ``limit="5"``); also a TypeError, so
    ``except TypeError`` written for the builtin error keeps working."""


class MemoryTooLarge(ValidationError):
    """A record's text is over the write-size limit (``max_text_bytes``); nothing was written.

    ``field`` names the field, ``size`` its UTF-8 bytes and ``limit`` the limit in force.
    """

    def __init__(self, message: str, *, field: str, size: int, limit: int) -> None:
        super().__init__(message)
        self.field, self.size, self.limit = field, size, limit


class QueryException(RedmemError):
    """A query cannot be run as written (unknown field, missing partition, bad operator)."""


class QueryArgumentError(QueryException, ValidationError):
    """An argument of a query method is out of range (``limit=-1``): a QueryException and a ValidationError."""


class QueryArgumentTypeError(QueryArgumentError, ArgumentTypeError):
    """An argument of a query method has the wrong type (``limit=None``); also a TypeError."""


class ConfigurationError(RedmemError):
    """redmem is set up wrongly: bad URL, no server binary, unknown option."""


class ModelException(RedmemError):
    """A model class is declared wrongly (conflicting partitions, duplicate keys...)."""


class ServerUnavailable(RedmemError, ConnectionError):
    """The Redis server could not be reached; the message names its address."""

    def __init__(self, address: str, reason: object) -> None:
        super().__init__(f"cannot reach Redis at {address}: {reason}")
        self.address = address


class WriteConflict(RedmemError):
    """A write kept losing its optimistic-lock race (WATCH) to concurrent writers and gave up."""


class RecordNotFound(RedmemError, LookupError):
    """An operation needs a stored record that does not exist (never saved, or deleted)."""


class PermissionDenied(RedmemError, PermissionError):
    """The server's ACL refused a command or key (``NOPERM``); the message names the server and,
    when Redis reports it, the command and key that were refused."""

    def __init__(self, address: str, reason: object) -> None:
        super().__init__(f"Redis at {address} refused the command (ACL): {reason}")
        self.address = address


class WriteOutcomeUnknown(ServerUnavailable, TimeoutError):
    """A write was sent but no reply came back after every retry: it ran once or not at all.

    Never twice: each write carries operation ids (``operations``) that the server remembers for
    ``OP_TTL_SECONDS`` (:mod:`redmem.store.scripts`). Read the state back before writing again.
    """

    def __init__(self, address: str, reason: object, operations: list[str]) -> None:
        super().__init__(address, reason)
        self.args = (
            f"a write to Redis at {address} got no reply ({reason}): it was applied once or not "
            f"at all, never twice; read the state back before retrying "
            f"(operation id(s): {', '.join(operations) or 'none'})",
        )
        self.operations = list(operations)
