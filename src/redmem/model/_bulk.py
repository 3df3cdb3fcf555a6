"""Bulk saves: many new records in one MULTI/EXEC per partition and chunk, each index key written once.

Every record is checked before the first write. Chunks are small at both ends and large in the
middle; while the server executes one chunk's transaction the client builds the next one.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ..store._connection import never_sent, reply_timeout, server_address, server_errors
from ..store._errors import ServerUnavailable, ValidationError, WriteOutcomeUnknown
from ..store._outcome import LOST_REPLY, op_ttl, operation_key
from ..store._overlap import Request
from ..store._validation import positive_int
from ._indexed import AutoKeyField
from ._model_class import ModelClass
from ._persistence import queue_new_records, save_record
from ._registry import register

__all__ = ["save_many", "cyclic_gc_paused", "CHUNK_START", "CHUNK_GROWTH", "REPLY_SECONDS_PER_RECORD"]

#: The first chunk of a bulk save is its chunk_size divided by this (at least one record) ..
CHUNK_START = 16
#: .. and each next chunk is this much larger, up to chunk_size (the last chunks mirror the first).
CHUNK_GROWTH = 1.5
#: A chunk's replies may take this many seconds per record when that is longer than the client's
#: ``socket_timeout``: a chunk is never resent, so waiting is safe, and a loaded server took up
#: to 4.3 ms per record (``benchmarks/scale.py``, 1M memories; 0.1 ms on a quiet one).
REPLY_SECONDS_PER_RECORD = 0.01


def save_many(model: ModelClass, instances: list[Any], chunk_size: int = 1000) -> int:
    """Save many records: new auto-keyed ones in one MULTI/EXEC per partition and chunk, others one by one.

    Every record is checked and embedded before the first write (each field's ``before_save``,
    batched per field, then validation), so an invalid record or a failing embedding provider
    raises with nothing stored. Then each chunk of one partition is one atomic MULTI/EXEC (all
    or nothing) that writes each index key once (:func:`~redmem.model._persistence.queue_new_records`); a server failure
    midway leaves the chunks before it stored. Returns how many were saved.
    """
    chunk_size = positive_int("chunk_size", chunk_size)
    meta = model._meta
    fresh_ok = not any(f.reads_before_write for f in meta.fields.values())
    autokeys = [f.name for f in meta.fields_of(AutoKeyField)]
    new: list[Any] = []
    others: list[Any] = []
    for instance in instances:
        if type(instance) is not model:
            raise ValidationError(f"save_many of {model.__name__} got a {type(instance).__name__}")
        fresh = fresh_ok and instance._saved_key is None and any(getattr(instance, n) is None for n in autokeys)
        (new if fresh else others).append(instance)
    by_partition = _checked_by_partition(meta, new, others)
    for instance in others:
        save_record(instance)
    client = meta.client
    chunks = [chunk for group in by_partition.values() for chunk in _chunks(group, chunk_size)]
    register(meta, client, [meta.keyspace(partition).tag for partition in by_partition])
    with server_errors(client), cyclic_gc_paused():
        _write_chunks(client, chunks)
    return len(instances)


def _checked_by_partition(meta: Any, new: list[Any], others: list[Any]) -> dict[tuple[Any, ...], list[tuple[Any, dict[str, Any]]]]:
    """Check every record of a bulk save before anything is written; the new ones' (instance,
    validated values) pairs by partition."""
    groups = [(new, True), ([i for i in others if i._saved_key is None], True),
              ([i for i in others if i._saved_key is not None], False)]
    for field in meta.fields.values():
        for group, creating in groups:
            if group:
                field.before_save_many(group, creating)
    by_partition: dict[tuple[Any, ...], list[tuple[Any, dict[str, Any]]]] = {}
    for instance in new:
        values = instance.validated_values()
        partition = tuple(values[n] for n in meta.partition_fields)
        by_partition.setdefault(partition, []).append((instance, values))
    for instance in others:
        instance.validated_values()
    return by_partition


@contextmanager
def cyclic_gc_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector inside the block (reference counting goes on).

    Building chunks allocates many short-lived containers, which start full collections, each
    walking every object of the process (measured: two of ~8 ms while 210 records were built,
    a fifth of a 1,000-record bulk save). A collector the caller had disabled stays disabled.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _chunks(records: list[Any], chunk_size: int) -> list[list[Any]]:
    """Consecutive chunks of at most ``chunk_size`` records, small at both ends.

    Sizes start at ``chunk_size / CHUNK_START`` and grow by ``CHUNK_GROWTH``, from the front and,
    mirrored, from the back (1000: 62, 93, 140, 210, 316, 474, 711, 1000, .., 1000, 711, .., 62):
    the server starts early, each chunk the client builds takes about as long as the server's
    work on the one before, and the last one, which nothing overlaps, is short
    (``benchmarks/bulk_schedule.py`` measures the choice).
    """
    front, back = [], []
    start, end, size = 0, len(records), max(1.0, chunk_size / CHUNK_START)
    while start < end:
        front.append(records[start : min(start + int(size), end)])
        start += len(front[-1])
        if start < end:
            back.append(records[max(end - int(size), start) : end])
            end -= len(back[-1])
        size = min(size * CHUNK_GROWTH, chunk_size)
    return front + back[::-1]


def _write_chunks(client: Any, chunks: list[list[Any]]) -> None:
    """One MULTI/EXEC per chunk of checked new records, in order; none after one that failed.

    A chunk is never resent after it left: a lost reply raises WriteOutcomeUnknown naming each
    chunk's operation key (it exists iff that chunk was applied). So its replies may wait longer
    than ``socket_timeout`` (:func:`_chunk_reply_timeout`): a slow server is not taken for a lost reply.

    While the server executes a chunk's transaction the client builds and packs the next one
    (:class:`~redmem.store._overlap.Request`) and sends it once the first one's replies are read,
    so the server's work overlaps the client's.
    """
    current = following = None
    markers: list[str] = []
    try:
        for chunk in chunks:
            try:
                following = Request(client, _chunk_transaction(client, chunk, markers),
                                    reply_timeout=_chunk_reply_timeout(client, len(chunk)))
            finally:  # built, or not, while the chunk before ran: that one's replies first
                if current is not None:
                    current.replies()
            current, following = following, None
            current.send()
        if current is not None:
            current.replies()
    except LOST_REPLY as exc:
        if len(markers) == 1 and never_sent(exc):  # the first chunk could not even connect
            raise ServerUnavailable(server_address(client), f"{exc}; nothing was sent") from exc
        raise WriteOutcomeUnknown(server_address(client), exc, markers) from exc
    finally:
        for request in (current, following):
            if request is not None:
                request.abandon()


def _chunk_reply_timeout(client: Any, records: int) -> float | None:
    """Seconds a chunk of ``records`` may wait for its replies: the client's ``socket_timeout`` or,
    when longer, :data:`REPLY_SECONDS_PER_RECORD` per record (None: the client waits without limit)."""
    timeout = reply_timeout(client)
    return None if timeout is None else max(timeout, REPLY_SECONDS_PER_RECORD * records)


def _chunk_transaction(client: Any, chunk: list[tuple[Any, dict[str, Any]]], markers: list[str]) -> Any:
    """A transaction pipeline holding the writes of a chunk of checked new records and its operation key (not sent)."""
    pipe = client.pipeline(transaction=True)
    instances, values = [i for i, _ in chunk], [v for _, v in chunk]
    batches = queue_new_records(pipe, client, instances, values=values, fresh=True)
    markers.append(operation_key(batches[0].record_key))
    pipe.set(markers[-1], 1, ex=op_ttl(client))
    return pipe
