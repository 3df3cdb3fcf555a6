"""A model's schema, recorded in Redis on first use, and the differences between it and the code.

The schema (each field's kind, type and index signature, the key and partition fields) is kept
as JSON in one model-wide key, ``<prefix>:<Model>:{%g}:schema``. The first use of a model in a
process (its first ``Options.client``) sends one round trip: it records the schema when none is
stored, reads it, and warns about what changed since (:class:`SchemaChangedWarning`,
:class:`IndexNotBuiltWarning`), naming the call that migrates. Fields added since read their
default on older records (:func:`~redmem.model._loading.decode_stored`); nothing is written
besides the first record, so a model that changed only by new plain fields costs nothing more.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sys
import threading
import warnings
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from ..store._connection import server_errors
from ..store._errors import PermissionDenied, ServerError
from ..store._keys import KeyKind, KeySpace
from ..store._watch import watched_transaction
from ._field import Field


class SchemaOwner(Protocol):
    """What the schema check reads of a model's ``Options`` (which calls the check, so this module
    does not import it)."""

    name: str
    abstract: bool
    fields: dict[str, Field[Any]]
    key_fields: tuple[str, ...]
    partition_fields: tuple[str, ...]

    @property
    def key_prefix(self) -> str: ...

    def global_keyspace(self) -> KeySpace: ...

__all__ = [
    "SchemaWarning",
    "SchemaChangedWarning",
    "IndexNotBuiltWarning",
    "SchemaDiff",
    "model_schema",
    "schema_key",
    "stored_schema",
    "diff",
    "check_once",
    "forget_checks",
    "record_schema",
]

log = logging.getLogger("redmem.schema")
#: The directory of the redmem package: warnings point at the first frame outside it.
_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep

#: Entries of a field's description that a new version must keep for its stored values to decode.
_VALUE_ENTRIES = ("kind", "type")
#: Entries that name what a field's index holds: when one changes, the index must be rebuilt.
_INDEX_ENTRIES = ("kind", "type", "source", "version")


class SchemaWarning(UserWarning):
    """Base of redmem's warnings about a model that differs from the schema stored in Redis."""


class SchemaChangedWarning(SchemaWarning):
    """Fields stored by an earlier version of the model are gone, renamed or of another type."""


class IndexNotBuiltWarning(SchemaWarning):
    """Indexes added (or changed) since records were stored do not cover those records yet."""


def field_schema(field: Field[Any]) -> dict[str, Any]:
    """What is recorded of one field: its class, value type, whether it is stored in the record
    hash, whether it writes an index, and the index's source field and version when it has them."""
    kind = type(field)
    indexed = not field.is_key and (kind.on_save is not Field.on_save or kind.on_save_many is not Field.on_save_many)
    source, version = getattr(field, "source", None), getattr(field, "version", None)
    return {
        "kind": kind.__name__,
        "type": field.python_type.__name__,
        "stored": field.stored,
        "indexed": indexed,
        "source": source if isinstance(source, str) else None,
        "version": version if isinstance(version, str) else None,
    }


def model_schema(meta: SchemaOwner) -> dict[str, Any]:
    """The schema of a model as the code declares it (JSON-ready)."""
    return {
        "fields": {name: field_schema(field) for name, field in meta.fields.items()},
        "keys": list(meta.key_fields),
        "partition": list(meta.partition_fields),
    }


def schema_key(meta: SchemaOwner) -> str:
    """The model-wide key holding the recorded schema (under ``{%g}``: one slot, any cluster)."""
    return meta.global_keyspace().key(KeyKind.SCHEMA)


def encode(schema: dict[str, Any]) -> str:
    """The stored JSON of a schema (sorted keys, so equal schemas are equal strings)."""
    return json.dumps(schema, sort_keys=True, separators=(",", ":"))


@dataclass(frozen=True)
class SchemaDiff:
    """How the code's model differs from the recorded schema."""

    #: stored fields the code declares and the record does not (they read their default)
    added: tuple[str, ...] = ()
    #: recorded fields the code no longer declares
    removed: tuple[str, ...] = ()
    #: fields whose kind or value type changed
    changed: tuple[str, ...] = ()
    #: indexing fields the recorded schema has no index of (new, or a new source/version)
    unbuilt: tuple[str, ...] = ()
    #: whether the key or partition fields changed (records live under other keys)
    keys_changed: bool = False

    @property
    def needs_migration(self) -> bool:
        """Whether anything but new plain fields changed."""
        return bool(self.removed or self.changed or self.unbuilt or self.keys_changed)

    def renames(self, current: dict[str, Any], stored: dict[str, Any]) -> dict[str, str]:
        """Likely renames: each removed stored field paired with an added field of the same kind and type."""
        pairs: dict[str, str] = {}
        free = list(self.added)
        for old in self.removed:
            entry = stored["fields"][old]
            match = next((new for new in free if _same(current["fields"][new], entry, _VALUE_ENTRIES)), None)
            if match is not None and entry["stored"]:
                pairs[old] = match
                free.remove(match)
        return pairs


def _same(a: dict[str, Any], b: dict[str, Any], entries: tuple[str, ...]) -> bool:
    return all(a.get(entry) == b.get(entry) for entry in entries)


def diff(stored: dict[str, Any], current: dict[str, Any]) -> SchemaDiff:
    """What changed from the ``stored`` schema to the ``current`` one."""
    old, new = stored["fields"], current["fields"]
    return SchemaDiff(
        added=tuple(n for n, f in new.items() if n not in old and f["stored"] and f["kind"] != "AutoKeyField"),
        removed=tuple(n for n in old if n not in new),
        changed=tuple(n for n, f in new.items() if n in old and not _same(f, old[n], _VALUE_ENTRIES)),
        unbuilt=tuple(n for n, f in new.items() if f["indexed"] and not (n in old and _same(f, old[n], _INDEX_ENTRIES))),
        keys_changed=(stored["keys"], stored["partition"]) != (current["keys"], current["partition"]),
    )


#: (id of the model's Options, key prefix, id of the client) of each check this process made; an
#: entry leaves when its Options or client is freed, since CPython hands a freed object's id to a
#: later one, and a model declared then would otherwise pass unchecked.
_checked: set[tuple[int, str, int]] = set()
_lock = threading.Lock()


def check_once(meta: SchemaOwner, client: Any, identity: Any) -> None:
    """At a model's first use in this process (per key prefix and client ``identity``): record
    its schema if none is stored, else warn about what differs. One round trip, then none.

    A server that refuses the schema key (an ACL confined to tenants, a read-only replica) is
    left unchecked, with a debug log line: the check never fails the operation it precedes.
    """
    if meta.abstract:
        return
    seen = (id(meta), meta.key_prefix, id(identity))
    if seen in _checked:
        return
    with _lock:
        if seen in _checked:
            return
        _checked.add(seen)
    for owner in (meta, identity):
        with contextlib.suppress(TypeError):  # an object that takes no weak reference stays remembered
            weakref.finalize(owner, _checked.discard, seen)
    current = model_schema(meta)
    key = schema_key(meta)
    try:
        stored = _record_or_read(client, key, encode(current))
    except (PermissionDenied, ServerError) as exc:
        log.debug("schema of %s not checked: %s", meta.name, exc)
        return
    except BaseException:
        _checked.discard(seen)  # not checked (the server is unreachable): the next use tries again
        raise
    if stored is not None:  # None: deleted between the two commands
        warn_changes(meta, json.loads(stored), current)


def _record_or_read(client: Any, key: str, schema: str) -> Any:
    """Store ``schema`` at ``key`` unless one is stored, and return the stored one (one round trip).

    PermissionDenied (ACL) or ServerError (WriteRefused from a read-only replica) when the server
    refuses the key; connection failures as :func:`~redmem.store._connection.server_errors` types them.
    """
    with server_errors(client), client.pipeline(transaction=False) as pipe:
        pipe.set(key, schema, nx=True)
        pipe.get(key)
        return pipe.execute()[1]


def forget_checks() -> None:
    """Check every model again at its next use (after the stored schemas were replaced or flushed)."""
    with _lock:
        _checked.clear()


def warn_changes(meta: SchemaOwner, stored: dict[str, Any], current: dict[str, Any]) -> None:
    """Warn (and log) what differs between the recorded and the declared schema, naming the migration."""
    changes = diff(stored, current)
    name = meta.name
    if changes.removed or changes.changed or changes.keys_changed:
        _warn(SchemaChangedWarning, _changed_message(name, changes, changes.renames(current, stored), stored, current))
    if changes.unbuilt:
        fields = ", ".join(changes.unbuilt)
        _warn(IndexNotBuiltWarning,
              f"{name}: the index of {fields} was added or changed after records were stored and does not cover "
              f"them yet; build it with {name}.migrate() (or `redmem migrate MODULE:{name}`)")


def _changed_message(
    name: str, changes: SchemaDiff, renames: dict[str, str], stored: dict[str, Any], current: dict[str, Any]
) -> str:
    parts = []
    if changes.removed:
        parts.append(f"field(s) {', '.join(changes.removed)} stored by an earlier version are no longer "
                     "declared (their values stay in the records, unread)")
    if changes.changed:
        parts.append(f"field(s) {', '.join(changes.changed)} changed kind or type (stored values may not decode)")
    if changes.keys_changed:
        parts.append(f"the key fields changed from {stored['keys']} (partition {stored['partition']}) to "
                     f"{current['keys']} (partition {current['partition']}): records stored under the old keys "
                     "are not found, and migrate cannot move them")
    guess = renames or {old: "<new name>" for old in changes.removed if stored["fields"][old]["stored"]}
    advice = ""
    if guess:
        flags = " ".join(f"--rename {a}={b}" for a, b in guess.items())
        advice = f"If renamed, run {name}.migrate(rename={guess!r}) (or `redmem migrate MODULE:{name} {flags}`); "
    return (f"{name}: " + "; ".join(parts) + ". " + advice
            + f"once the change is intended, {name}.migrate() records it (or `redmem migrate MODULE:{name}`)")


def _warn(category: type[SchemaWarning], message: str) -> None:
    """Log ``message`` and warn it at the user's line that first used the model."""
    log.warning("%s", message)
    warnings.warn(message, category, stacklevel=_outside_redmem())


def _outside_redmem() -> int:
    """The ``stacklevel`` of the nearest caller outside the redmem package."""
    level, frame = 1, sys._getframe(1)
    while frame.f_back is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        level, frame = level + 1, frame.f_back
    return level


def stored_schema(meta: SchemaOwner, client: Any) -> dict[str, Any] | None:
    """The recorded schema of the model (None: none recorded yet)."""
    with server_errors(client):
        raw = client.get(schema_key(meta))
    return None if raw is None else dict(json.loads(raw))


def record_schema(meta: SchemaOwner, client: Any, update: Callable[[dict[str, Any] | None], dict[str, Any]]) -> None:
    """Replace the recorded schema by ``update(stored or None)`` atomically (WATCH on its key)."""
    key = schema_key(meta)

    def attempt(pipe: Any) -> None:
        pipe.watch(key)
        raw = pipe.get(key)
        new = update(None if raw is None else json.loads(raw))
        pipe.multi()
        pipe.set(key, encode(new))
        pipe.execute()

    watched_transaction(client, attempt, f"gave up recording the schema of {meta.name}")

