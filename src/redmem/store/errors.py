"""The one exception tree of redmem: every error the library raises derives from RedmemError."""

__all__ = [
    "RedmemError",
    "ValidationError",
    "QueryException",
    "ConfigurationError",
    "ModelException",
    "ServerUnavailable",
    "WriteConflict",
    "RecordNotFound",
    "WriteOutcomeUnknown",
]


class RedmemError(Exception):
    """Base class of every error redmem raises."""


class ValidationError(RedmemError, ValueError):
    """A value does not fit its field (type, null, max_length, finite score...)."""


class QueryException(RedmemError):
    """A query cannot be run as written (unknown field, missing partition, bad operator)."""


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
