"""The one exception tree of redmem: every error the library raises derives from RedmemError.

Every class of the tree is defined here (the modules that raise them import them from here)::

    RedmemError
    ├── ValidationError (ValueError)           a value or argument does not fit
    │   ├── ArgumentTypeError (TypeError)      ... of the wrong type
    │   ├── MemoryTooLarge                     a text over max_text_bytes, nothing written
    │   ├── OutcomeError                       an outcome report that does not fit
    │   └── QueryArgumentError (+ QueryException)
    │       └── QueryArgumentTypeError (+ ArgumentTypeError)
    ├── QueryException                         a query cannot run as written
    │   └── MissingQueryMethod (AttributeError)
    ├── ConfigurationError                     redmem is set up wrongly
    │   └── DataDirectoryError                 the local server's directory is not to be trusted
    ├── ModelException                         a model class is declared wrongly
    ├── EmbeddingError                         a provider could not embed
    ├── ExtractionError                        an extractor could not produce memories
    ├── ExportError (ValueError)               an HCE export that is missing, corrupt or foreign
    ├── AgentNotServed (PermissionError)       an MCP call for an agent the server does not serve
    ├── ServerUnavailable (ConnectionError)    the server could not be reached
    │   └── WriteOutcomeUnknown (TimeoutError) a write sent, its reply lost: applied once or not at all
    ├── ServerError                            an error reply with no better name
    │   └── WriteRefused                       NOREPLICAS / READONLY / OOM, nothing applied
    ├── WriteConflict                          a write kept losing its WATCH race
    ├── RecordNotFound (LookupError)           a needed record is not stored
    └── PermissionDenied (PermissionError)     the server's ACL refused a command or key

Warnings are not errors: the schema check's ``SchemaWarning`` family lives in ``model/_schema.py``.
"""

from collections.abc import Callable

__all__ = [
    "RedmemError",
    "ValidationError",
    "ArgumentTypeError",
    "MemoryTooLarge",
    "QueryException",
    "QueryArgumentError",
    "QueryArgumentTypeError",
    "ConfigurationError",
    "DataDirectoryError",
    "ModelException",
    "ServerUnavailable",
    "WriteConflict",
    "RecordNotFound",
    "PermissionDenied",
    "WriteOutcomeUnknown",
    "ServerError",
    "WriteRefused",
    "OutcomeError",
    "MissingQueryMethod",
    "EmbeddingError",
    "ExtractionError",
    "ExportError",
    "AgentNotServed",
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


class OutcomeError(ValidationError):
    """An outcome report does not fit: unknown outcome, a key naming no record of the context, wrong type."""


class QueryException(RedmemError):
    """A query cannot be run as written (unknown field, missing partition, bad operator)."""


class MissingQueryMethod(QueryException, AttributeError):
    """A query method the query's model does not have; also an AttributeError, as for any attribute."""


class QueryArgumentError(QueryException, ValidationError):
    """An argument of a query method is out of range (``limit=-1``): a QueryException and a ValidationError."""


class QueryArgumentTypeError(QueryArgumentError, ArgumentTypeError):
    """An argument of a query method has the wrong type (``limit=None``); also a TypeError."""


class ConfigurationError(RedmemError):
    """redmem is set up wrongly: bad URL, no server binary, unknown option."""


class DataDirectoryError(ConfigurationError):
    """The local server's data directory cannot be trusted (a file, another user's, open to
    others, a socket not ours, a server that lost its socket); the message gives the fix."""


class ModelException(RedmemError):
    """A model class is declared wrongly (conflicting partitions, duplicate keys...)."""


class EmbeddingError(RedmemError):
    """A provider could not embed the texts (the service failed, the model could not run)."""


class ExtractionError(RedmemError):
    """An extractor could not produce memories (the model failed or answered malformed JSON)."""


class ExportError(RedmemError, ValueError):
    """An export directory that is missing, corrupt, of another format or version, or not a session's."""


class AgentNotServed(RedmemError, PermissionError):
    """A tool call named an agent the server was not started for (neither ``--agent`` nor in ``--agents``)."""


class ServerUnavailable(RedmemError, ConnectionError):
    """The Redis server could not be reached; the message names its address."""

    def __init__(self, address: str, reason: object) -> None:
        super().__init__(f"cannot reach Redis at {address}: {reason}")
        self.address = address


class ServerError(RedmemError):
    """The server answered a command with an error redmem has no better name for (``WRONGTYPE``,
    an unknown command...); the message names the server and quotes its reply."""

    def __init__(self, address: str, reason: object) -> None:
        super().__init__(f"Redis at {address} answered with an error: {reason}")
        self.address = address


class WriteRefused(ServerError):
    """The server refused a write and applied none of it: ``NOREPLICAS`` (too few replicas
    acknowledge), ``READONLY`` (a replica), ``OOM`` (``maxmemory`` reached). ``code`` names which."""

    def __init__(self, address: str, reason: object, code: str) -> None:
        super().__init__(address, reason)
        self.args = (f"Redis at {address} refused the write ({code}), nothing was applied: {reason}",)
        self.code = code


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
    its retry window plus a minute (:func:`redmem.store._outcome.op_ttl`). ``applied`` maps each to whether it was
    applied when redmem could decide (else None); ``settle()`` decides for good, once the server
    answers: False means not applied and never will be, so writing again is safe.
    """

    def __init__(
        self, address: str, reason: object, operations: list[str],
        decide: Callable[[], dict[str, bool]] | None = None, applied: dict[str, bool] | None = None,
    ) -> None:
        super().__init__(address, reason)
        self.args = (
            f"a write to Redis at {address} got no reply ({reason}): it was applied once or not "
            f"at all, never twice; call .settle() before retrying "
            f"(operation id(s): {', '.join(operations) or 'none'})",
        )
        self.operations = list(operations)
        self.applied = applied
        self._decide = decide

    def settle(self) -> dict[str, bool]:
        """Each operation id mapped to whether its write was applied, decided for good (a write not
        applied by now never will be). Raises ServerUnavailable while the server cannot be asked."""
        if self.applied is None:
            if self._decide is None:
                raise ServerUnavailable(self.address, "this write cannot be settled (a save_many chunk WATCHes "
                                        "nothing, so a late copy could still apply): read the records back")
            self.applied = self._decide()
        return dict(self.applied)
