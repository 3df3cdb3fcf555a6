"""Saving, deleting and loading records: one atomic MULTI/EXEC per write, pipelined reads.

A write WATCHes the record hash, reads the stored values (so fields can drop stale index
entries), then queues the hash write and every field's index writes in one MULTI/EXEC. A
concurrent write to the same record aborts the EXEC and the whole batch is rebuilt.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable

from redis.cluster import RedisCluster
from redis.exceptions import WatchError

from ..store.connection import server_errors
from ..store.errors import RedmemError
from .batch import SaveBatch
from .dbkey import DbKey
from .indexed import AutoKeyField

__all__ = ["save_record", "delete_record", "load_records", "decode_stored", "MAX_ATTEMPTS"]

#: How often a write is rebuilt after losing a WATCH race before giving up.
MAX_ATTEMPTS = 20
ALL_RECORDS = "all"
PARTITIONS = "partitions"


def decode_stored(model: type, raw: dict[bytes, bytes]) -> dict[str, Any]:
    """Field values of a stored hash, by field name (absent fields are None)."""
    values = {}
    for field in model._meta.stored_fields():
        encoded = raw.get(field.name.encode())
        values[field.name] = None if encoded is None else field.decode(encoded)
    return values


def instance_from_stored(model: type, key: DbKey, raw: dict[bytes, bytes]) -> Any:
    """A model instance holding the values of a stored hash."""
    instance = model.__new__(model)
    for name, value in decode_stored(model, raw).items():
        setattr(instance, name, value)
    instance._saved_key = key
    return instance


def _transact(
    client: Any, keys: list[str], build: Callable[[Any, list[dict]], None], *, fresh: bool = False
) -> list:
    """Run ``build(pipe, stored_hashes)`` as a MULTI/EXEC WATCHing ``keys``, retrying lost races.

    ``fresh``: the keys were just generated and cannot exist, so nothing is watched or read.
    """
    with server_errors(client), client.pipeline(transaction=True) as pipe:
        if fresh:
            build(pipe, [{} for _ in keys])
            return pipe.execute()
        for _ in range(MAX_ATTEMPTS):
            try:
                pipe.watch(*keys)
                stored = [pipe.hgetall(key) for key in keys]
                pipe.multi()
                build(pipe, stored)
                return pipe.execute()
            except WatchError:
                continue
    raise RedmemError(f"gave up writing {keys[0]} after {MAX_ATTEMPTS} conflicting concurrent writes")


def _register_partition(instance: Any, pipe: Any, client: Any) -> None:
    """Add the record's partition to the model's registry (inside the batch when one slot allows)."""
    meta = instance._meta
    if not meta.partition_fields:
        return
    registry = meta.global_keyspace().key(PARTITIONS)
    tag = instance.db_key.keyspace.tag
    if isinstance(client, RedisCluster):
        client.sadd(registry, tag)  # another slot: before the batch, harmless if the batch fails
    else:
        pipe.sadd(registry, tag)


def save_record(instance: Any) -> None:
    """Validate and write ``instance`` with all its indexes atomically."""
    meta = instance._meta
    creating = instance._saved_key is None
    fresh = creating and any(
        isinstance(f, AutoKeyField) and getattr(instance, n) is None for n, f in meta.fields.items()
    )
    for field in meta.fields.values():
        field.before_save(instance, creating)
    values = instance.validated_values()
    key = instance.db_key
    moved_from = instance._saved_key if instance._saved_key not in (None, key) else None
    if moved_from is not None and moved_from.keyspace != key.keyspace:
        raise RedmemError(
            f"{type(instance).__name__}: a saved record cannot change partition; "
            "create a new record and delete this one"
        )
    client = meta.client

    watched = [key.redis_key] + ([moved_from.redis_key] if moved_from else [])

    def build(pipe: Any, hashes: list[dict]) -> None:
        stored = hashes[0]
        old = decode_stored(type(instance), stored) if stored else None
        batch = SaveBatch(pipe, client, key.keyspace, key.record_id, instance)
        if moved_from is not None and hashes[1]:
            _queue_removal(pipe, client, instance, moved_from, decode_stored(type(instance), hashes[1]))
        _queue_hash_write(pipe, instance, key, values, stored)
        if old is None:
            pipe.zadd(key.keyspace.key(ALL_RECORDS), {key.record_id: 0})
            _register_partition(instance, pipe, client)
        for field in meta.fields.values():
            field.on_save(batch, old)

    _transact(client, watched, build, fresh=fresh)
    instance._saved_key = key


def _queue_hash_write(pipe: Any, instance: Any, key: DbKey, values: dict, stored: dict) -> None:
    fields = instance._meta.fields
    mapping = {n: fields[n].encode(v) for n, v in values.items() if v is not None}
    cleared = [n for n, v in values.items() if v is None and n.encode() in stored]
    if mapping:
        pipe.hset(key.redis_key, mapping=mapping)
    else:
        pipe.hset(key.redis_key, "_", "")  # a record whose fields are all None still exists
    if cleared:
        pipe.hdel(key.redis_key, *cleared)


def delete_record(instance: Any) -> bool:
    """Remove the record and its index entries atomically; False when nothing was stored."""
    key = instance._saved_key or instance.db_key
    client = instance._meta.client
    found: list[bool] = []

    def build(pipe: Any, hashes: list[dict]) -> None:
        stored = hashes[0]
        found.append(bool(stored))
        if stored:
            _queue_removal(pipe, client, instance, key, decode_stored(type(instance), stored))

    _transact(client, [key.redis_key], build)
    instance._saved_key = None
    return found[-1]


def _queue_removal(pipe: Any, client: Any, instance: Any, key: DbKey, old: dict) -> None:
    batch = SaveBatch(pipe, client, key.keyspace, key.record_id, instance)
    pipe.delete(key.redis_key)
    pipe.zrem(key.keyspace.key(ALL_RECORDS), key.record_id)
    for field in instance._meta.fields.values():
        field.on_delete(batch, old)


def load_records(model: type, keys: Iterable[DbKey]) -> list[Any]:
    """Hydrate records in one pipelined round trip; keys with no stored hash are skipped."""
    keys = list(keys)
    if not keys:
        return []
    client = model._meta.client
    with server_errors(client), client.pipeline(transaction=False) as pipe:
        for key in keys:
            pipe.hgetall(key.redis_key)
        raws = pipe.execute()
    return [instance_from_stored(model, key, raw) for key, raw in zip(keys, raws) if raw]
