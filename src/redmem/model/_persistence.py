"""Saving and deleting records: one atomic MULTI/EXEC per write, and the queued writes of new records.

A write WATCHes the record hash, reads the stored values (so fields can drop stale index
entries), then queues the hash write and every field's index writes in one MULTI/EXEC. A
concurrent write to the same record aborts the EXEC and the whole batch is rebuilt. Bulk saves
(:mod:`.bulk`) and recipes that write in their own transaction queue new records here too.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from typing import Any

from redis.exceptions import WatchError

from ..store._connection import server_errors
from ..store._errors import RecordNotFound, ValidationError, WriteConflict, WriteOutcomeUnknown
from ..store._keys import KeyKind
from ..store._outcome import LOST_REPLY, op_ttl, operation_key, unknown_outcome
from ..store._watch import MAX_ATTEMPTS, watch_and_read
from ._batch import SaveBatch
from ._dbkey import DbKey
from ._indexed import AutoKeyField
from ._key_values import key_derived_fields
from ._loading import decode_stored
from ._registry import register

__all__ = [
    "save_record",
    "save_records",
    "delete_record",
    "queue_removal",
    "queue_fields_save",
    "queue_record_write",
    "queue_new_record",
    "queue_new_records",
    "checked_values",
    "queue_fields_save_many",
    "ALL_RECORDS",
    "LOST_REPLY_REBUILDS",
    "EXISTS_ENTRY",
    "held_entries",
    "was_stored",
    "transact",
]

#: A write rebuilt this many times in a row after its EXEC's reply was lost reports its outcome unknown.
LOST_REPLY_REBUILDS = 3
#: Key kind of the sorted set of every record id of a partition.
ALL_RECORDS = KeyKind.ALL_RECORDS
#: The entry of a record hash that holds no field (every value None, key fields in the key name),
#: so the record still exists.
EXISTS_ENTRY = "_"


def _transact(
    client: Any,
    keys: list[str],
    prepare: Callable[[Any, list[dict[bytes, bytes]]], Any],
    write: Callable[[Any, Any], None],
    *,
    fresh: bool = False,
    also_watch: Sequence[str] = (),
    replies: list[Any] | None = None,
    reads: Callable[[Any], None] | None = None,
) -> bool:
    """WATCH ``keys``, ``prepare(reader, stored_hashes)``, then ``write(pipe, prepared)`` in MULTI/EXEC.

    A lost race (another client wrote a watched key) rebuilds the whole batch. ``fresh``: the keys
    were just generated and cannot exist, so only the operation key is watched and ``prepare``
    reads directly.
    The EXEC also sets an operation key (:mod:`redmem.store._outcome`): a batch rebuilt after an
    EXEC whose reply was lost first checks it, so an applied batch is never applied again.
    Returns False when the batch found already applied, else True; after ``LOST_REPLY_REBUILDS``
    lost replies in a row the outcome is decided (:func:`~redmem.store._outcome.unknown_outcome`):
    applied returns True, not applied raises ServerUnavailable, undecidable WriteOutcomeUnknown. ``also_watch``: further keys WATCHed
    (not read as hashes); the first of ``keys`` + ``also_watch`` places the operation key.
    ``reads``: queues reads on the pipeline it is given; they are sent with the WATCH, in its
    round trip (:func:`~redmem.store._watch.watch_and_read`), and their replies follow the stored
    hashes in what ``prepare`` gets. ``replies``: filled with the EXEC's replies, one per queued command (left empty when the batch
    was found applied by an earlier attempt whose reply was lost).
    """
    marker = operation_key([*keys, *also_watch][0])
    sent: list[str] = []  # the marker, once an EXEC carrying it was sent
    out: list[Any] = [] if replies is None else replies
    try:
        return _attempts(client, keys, prepare, write, marker, sent, out, fresh=fresh, also_watch=also_watch,
                         reads=reads)
    except WriteOutcomeUnknown as unknown:
        if unknown.applied and all(unknown.applied.values()):
            return True  # decided: the lost EXEC was applied
        raise


def _attempts(
    client: Any,
    keys: list[str],
    prepare: Callable[[Any, list[dict[bytes, bytes]]], Any],
    write: Callable[[Any, Any], None],
    marker: str,
    sent: list[str],
    replies: list[Any],
    *,
    fresh: bool,
    also_watch: Sequence[str],
    reads: Callable[[Any], None] | None,
) -> bool:
    """The attempts of :func:`_transact`. The marker is always WATCHed (a new record's too), so
    deciding a lost EXEC (:func:`~redmem.store._outcome.settle`) aborts any copy still on its way."""
    with (
        server_errors(client),
        unknown_outcome(client, sent, one_command=False),
        client.pipeline(transaction=True) as pipe,
    ):
        lost = 0
        for _ in range(MAX_ATTEMPTS):
            try:
                watched = [*([] if fresh else [*keys, *also_watch]), marker]
                read = [] if reads is None else watch_and_read(client, pipe, watched, reads)
                if reads is None:
                    pipe.watch(*watched)
                if sent and pipe.exists(marker):
                    return False
                if fresh:
                    prepared = prepare(client, [*({} for _ in keys), *read])
                else:
                    prepared = prepare(pipe, [*(pipe.hgetall(key) for key in keys), *read])
                pipe.multi()
                write(pipe, prepared)
                replies[:] = _send(pipe, marker, sent)
                return True
            except WatchError as exc:
                reason = exc.__cause__ or exc.__context__
                lost = lost + 1 if isinstance(reason, LOST_REPLY) and sent else 0
                if lost == LOST_REPLY_REBUILDS and reason is not None:
                    raise reason from None
    raise WriteConflict(f"gave up writing {keys[0]} after {MAX_ATTEMPTS} conflicting concurrent writes")


def _send(pipe: Any, marker: str, sent: list[str]) -> list[Any]:
    """Queue the operation key ``marker`` and EXEC the transaction; its replies but the marker's.

    A lost EXEC reply under WATCH is a WatchError (redis-py does not resend it); when redis-py
    then fails to reconnect for its UNWATCH, that WatchError is raised still, so the caller rebuilds.
    """
    pipe.set(marker, 1, ex=op_ttl(pipe))
    sent[:] = [marker]
    try:
        replies: list[Any] = pipe.execute()[:-1]
    except LOST_REPLY as exc:
        cause = exc.__context__
        while cause is not None and not isinstance(cause, WatchError):
            cause = cause.__context__
        if cause is None:
            raise
        pipe.watching = False  # its connection is closed, and its WATCH gone with it:
        pipe.reset()  # finish the reset redis-py's UNWATCH could not
        raise cause from exc
    return replies


def _batch(reader: Any, client: Any, instance: Any, key: DbKey, stored: dict[bytes, bytes]) -> SaveBatch:
    """A batch for the record at ``key`` with its stored values and every field's prepared reads."""
    old = decode_stored(type(instance), key, stored) if stored else None
    batch = SaveBatch(None, client, key.keyspace, key.record_id, instance, old, held=held_entries(stored))
    for field in instance._meta.fields.values():
        batch.prepared[field.name] = field.prepare(reader, batch)
    return batch


def was_stored(instance: Any) -> bool:
    """Whether ``instance`` was read from Redis or written by a save that returned: its record then
    exists unless someone deleted it since (a key set by a write that failed proves nothing)."""
    return bool(getattr(instance, "_was_stored", False))


def _require_stored(instance: Any, stored: dict[bytes, bytes], key: DbKey) -> None:
    """RecordNotFound when the loaded record at ``key`` is gone (read under the save's WATCH):
    saving a stale instance of a deleted record must not bring it back."""
    if not stored:
        raise RecordNotFound(
            f"{type(instance).__name__} {key.redis_key} was deleted since it was loaded; "
            "saving it would bring it back (create a new record to store it again)"
        )


def save_record(instance: Any) -> None:
    """Validate and write ``instance`` with all its indexes atomically; a loaded instance whose
    record was deleted since raises RecordNotFound and writes nothing."""
    meta = instance._meta
    creating = instance._saved_key is None
    generated = creating and any(getattr(instance, f.name) is None for f in meta.fields_of(AutoKeyField))
    values = checked_values(instance, creating)
    key = instance.db_key
    moved_from = instance._saved_key if instance._saved_key not in (None, key) else None
    if moved_from is not None and moved_from.keyspace != key.keyspace:
        raise ValidationError(
            f"{type(instance).__name__}: a saved record cannot change partition; "
            "create a new record and delete this one"
        )
    client = meta.client
    register(meta, client, [key.keyspace.tag])

    watched = [key.redis_key] + ([moved_from.redis_key] if moved_from else [])
    fresh = generated and not any(f.reads_before_write for f in meta.fields.values())

    def prepare(reader: Any, hashes: list[dict[bytes, bytes]]) -> tuple[SaveBatch, SaveBatch | None]:
        if not creating and was_stored(instance):
            _require_stored(instance, hashes[-1], moved_from or key)
        batch = _batch(reader, client, instance, key, hashes[0])
        batch.fresh = generated
        moved = _batch(reader, client, instance, moved_from, hashes[1]) if moved_from and hashes[1] else None
        return batch, moved

    def write(pipe: Any, batches: tuple[SaveBatch, SaveBatch | None]) -> None:
        batch, moved = batches
        if moved is not None:
            moved.pipe = pipe
            instance.queue_delete(moved)
        batch.pipe = pipe
        queue_record_write(batch, values)

    _transact(client, watched, prepare, write, fresh=fresh)
    instance._saved_key = key
    instance._was_stored = True


#: The WATCH + MULTI/EXEC of a write built by its caller (the lifecycle's merge-or-supersede write):
#: ``transact(client, keys, prepare, write, also_watch=...)``, exactly once as every save.
transact = _transact


class _Stale(Exception):
    """Raised inside a :func:`save_records` transaction whose ``unchanged`` check failed."""


def save_records(
    created: Sequence[Any],
    updated: Sequence[Any] = (),
    *,
    watch: Sequence[str] = (),
    unchanged: Callable[[Any], bool] | None = None,
    also: Callable[[Any], None] | None = None,
    changed: Sequence[Collection[str]] | None = None,
) -> bool:
    """Validate and write records of one partition, with all their indexes, in one MULTI/EXEC.

    ``created``: new records whose keys were just generated (nothing is stored under them);
    ``updated``: stored records written again (WATCHed and read, so their stale index entries
    go; one deleted since it was loaded raises RecordNotFound, or returns False when ``unchanged``
    is given, so the caller rebuilds). ``watch``: further keys of the partition's slot to WATCH; ``unchanged(reader)`` runs
    under the WATCH before the MULTI (reads through ``reader`` execute at once) and returns
    False when what the caller built the records from has changed since: then nothing is
    written and False is returned, so the caller rebuilds them. ``also(pipe)`` queues further
    writes in the same MULTI/EXEC (after the records'). ``changed``: for each ``updated`` record,
    the fields the caller set; its other stored fields are written as read under the WATCH, so
    what another client wrote to them after the record was loaded (a counter, a time) is kept,
    not overwritten with the loaded values (None: every field as the instance holds it). The
    EXEC carries an operation key, as :func:`save_record`'s does, so the whole write is applied
    exactly once. Returns True when written (or found already applied after a lost reply).
    """
    instances = [*created, *updated]
    if not instances:
        raise ValidationError("save_records needs at least one record")
    meta = instances[0]._meta
    new_values = [checked_values(instance, True) for instance in created]
    old_values = [checked_values(instance, instance._saved_key is None) for instance in updated]
    spaces = {instance.db_key.keyspace for instance in instances}
    if len(spaces) > 1:
        raise ValidationError("save_records writes records of one partition only")
    client = meta.client
    register(meta, client, [space.tag for space in spaces])
    keys = [instance.db_key for instance in updated]

    def prepare(reader: Any, hashes: list[dict[bytes, bytes]]) -> list[SaveBatch]:
        gone = [not stored and was_stored(instance) for instance, stored in zip(updated, hashes)]
        if unchanged is not None and (not unchanged(reader) or any(gone)):
            raise _Stale  # what the records were built from changed, or one of them was deleted
        for instance, key, stored in zip(updated, keys, hashes):
            if was_stored(instance):
                _require_stored(instance, stored, key)
        for instance, key, stored, values, kept in zip(updated, keys, hashes, old_values, changed or ()):
            if stored:
                _rebase(instance, key, stored, kept, values)
        return [_batch(reader, client, instance, key, stored) for instance, key, stored in zip(updated, keys, hashes)]

    def write(pipe: Any, batches: list[SaveBatch]) -> None:
        if created:
            queue_new_records(pipe, client, list(created), values=new_values, fresh=True)
        for batch, values in zip(batches, old_values):
            batch.pipe = pipe
            queue_record_write(batch, values)
        if also is not None:
            also(pipe)

    # the operation key goes in the slot of the first key named (any record of the partition will do)
    watched = list(watch) or ([] if keys else [created[0].db_key.redis_key])
    try:
        _transact(client, [key.redis_key for key in keys], prepare, write, also_watch=watched)
    except _Stale:
        return False
    for instance, key in zip(updated, keys):
        instance._saved_key = key
    for instance in instances:
        instance._was_stored = True
    return True


def _rebase(instance: Any, key: DbKey, stored: dict[bytes, bytes], kept: Collection[str], values: dict[str, Any]) -> None:
    """Set every stored field of ``instance`` but the ``kept`` ones (and the key fields) to its
    value in ``stored`` (the hash read under the WATCH), in the instance and in its ``values``."""
    fields = instance._meta.fields
    for name, value in decode_stored(type(instance), key, stored).items():
        if name not in kept and not fields[name].is_key:
            setattr(instance, name, value)
            values[name] = value


def queue_record_write(batch: SaveBatch, values: dict[str, Any]) -> None:
    """Queue the record hash, its id in the partition, and every field's writes."""
    pipe, instance = batch.pipe, batch.instance
    key = DbKey(batch.keyspace, batch.record_id)
    _queue_hash_write(pipe, instance, key, values, hashes_present(batch))
    if batch.old is None:
        pipe.zadd(key.keyspace.key(ALL_RECORDS), {key.record_id: 0})
    instance.queue_save(batch)


def queue_new_record(pipe: Any, client: Any, instance: Any) -> SaveBatch:
    """Queue the unconditional write of a record known to be new (no WATCH, no stale indexes).

    Fields' ``prepare`` reads go straight to ``client``. Used by recipes that create records in
    their own pipeline.
    """
    return queue_new_records(pipe, client, [instance])[0]


def queue_new_records(
    pipe: Any, client: Any, instances: list[Any], *, values: list[dict[str, Any]] | None = None, fresh: bool = False
) -> list[SaveBatch]:
    """Queue the unconditional writes of records known to be new, with merged index writes.

    One HSET per record; per partition one ZADD of the ids and each field's writes for the whole
    group (``Model.queue_save_many``), so the stored result is that of one save per record.
    ``values``: each instance's already validated values (:func:`checked_values`), else they are
    checked here; ``fresh``: every key was just generated, so nothing is stored under it
    (``SaveBatch.fresh``). The partitions go to the best-effort registry (:mod:`.registry`).
    """
    if values is None:
        values = [checked_values(instance, True) for instance in instances]
    groups: dict[Any, list[SaveBatch]] = {}
    for instance, stored in zip(instances, values):
        key = instance.db_key
        batch = _batch(client, client, instance, key, {})
        batch.pipe, batch.fresh = pipe, fresh
        _queue_hash_write(pipe, instance, key, stored, set() if fresh else hashes_present(batch))
        groups.setdefault(key.keyspace, []).append(batch)
    if groups:
        register(instances[0]._meta, client, [space.tag for space in groups])
    for space, batches in groups.items():
        pipe.zadd(space.key(ALL_RECORDS), {batch.record_id: 0 for batch in batches})
        model = type(batches[0].instance)
        model.queue_save_many(batches)
        for batch in batches:
            batch.instance._saved_key = DbKey(space, batch.record_id)
    return [batch for batches in groups.values() for batch in batches]


def checked_values(instance: Any, creating: bool) -> dict[str, Any]:
    """Run every field's ``before_save`` on ``instance``, then return its validated stored values."""
    for field in instance._meta.fields.values():
        field.before_save(instance, creating)
    values: dict[str, Any] = instance.validated_values()
    return values


def held_entries(stored: dict[bytes, bytes]) -> frozenset[str] | None:
    """The entry names of a stored hash as read (``SaveBatch.held``); None for no hash."""
    return frozenset(name.decode() for name in stored) if stored else None


def hashes_present(batch: SaveBatch) -> set[str]:
    """Names of the entries the stored record may hold: its hash's when it was read, else every
    stored field but the key fields (with a non-None value, when the stored values are known).

    A key field is never None, and the entry an older version wrote for one holds the key's own
    value, so an entry nobody read may stay.
    """
    if batch.held is not None:
        return set(batch.held)
    names = {field.name for field in batch.instance._meta.stored_fields() if not field.is_key}
    return names if batch.old is None else {name for name in names if batch.old.get(name) is not None}


def _queue_hash_write(pipe: Any, instance: Any, key: DbKey, values: dict[str, Any], present: set[str]) -> None:
    """Queue the HSET of the record's entries, then the HDEL of the ``present`` ones it no longer has.

    Entries: every non-None value but the key-derived fields (:mod:`.key_values`). Deleted: the
    fields now None, a key-derived field's entry an older version wrote, and ``EXISTS_ENTRY``
    once the record has entries of its own.
    """
    meta = instance._meta
    derived = key_derived_fields(meta, values)
    mapping = {n: meta.fields[n].encode(v) for n, v in values.items() if v is not None and n not in derived}
    cleared = [n for n, v in values.items() if (v is None or n in derived) and n in present]
    if mapping:
        pipe.hset(key.redis_key, mapping=mapping)
        cleared += [EXISTS_ENTRY] if EXISTS_ENTRY in present else []
    else:
        pipe.hset(key.redis_key, EXISTS_ENTRY, "")  # a record with no entry of its own still exists
    if cleared:
        pipe.hdel(key.redis_key, *cleared)


def delete_record(instance: Any) -> bool:
    """Remove the record and its index entries atomically; False when nothing was stored."""
    key = instance._saved_key or instance.db_key
    client = instance._meta.client
    found: list[bool] = []  # whether the batch that ran (the last one built) found the record

    def prepare(reader: Any, hashes: list[dict[bytes, bytes]]) -> SaveBatch | None:
        return _batch(reader, client, instance, key, hashes[0]) if hashes[0] else None

    def write(pipe: Any, batch: SaveBatch | None) -> None:
        found[:] = [batch is not None]
        if batch is not None:
            batch.pipe = pipe
            instance.queue_delete(batch)

    _transact(client, [key.redis_key], prepare, write)
    instance._saved_key = None
    instance._was_stored = False
    return found[0]


def queue_removal(batch: SaveBatch) -> None:
    """Queue the deletion of the batch's record hash, its id, and every field's index entries."""
    batch.pipe.delete(batch.record_key)
    batch.pipe.zrem(batch.keyspace.key(ALL_RECORDS), batch.record_id)
    for field in batch.instance._meta.fields.values():
        field.on_delete(batch, batch.old)


def queue_fields_save(batch: SaveBatch) -> None:
    """Queue every field's index writes for the batch's record."""
    for field in batch.instance._meta.fields.values():
        field.on_save(batch, batch.old)


def queue_fields_save_many(batches: list[SaveBatch]) -> None:
    """Queue every field's index writes for records of one partition, merged per field."""
    for field in batches[0].instance._meta.fields.values():
        field.on_save_many(batches)
