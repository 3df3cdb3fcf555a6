"""Restoring one partition from a backup server, and the cache epoch every restore must bump.

A process caches a partition's vectors and BM25 postings, and keeps them exact from the
partition's change log: a version hash ``{epoch, n, floor, run}`` per index, and a cache reloads
when the epoch differs from its own (:mod:`.embedding_search`, :mod:`.bm25_postings`). A
per-tenant restore (delete the tenant's keys, ``RESTORE ... REPLACE`` on the live server) brings
back an older version hash of the same epoch: a cache that had read past its ``n`` would take the
changes written after the restore as the ones it already holds. :func:`new_cache_epoch` gives
every index of the partition a new epoch, so every cache reloads; :func:`restore_partition`
copies the partition from a backup server and does it in the same transaction.
"""

from __future__ import annotations

import uuid
from collections.abc import Collection
from typing import Any

from ..model._base import Model
from ..model._registry import register
from ..store._aio import is_cluster
from ..store._connection import server_errors
from ..store._keys import KeySpace
from ._bm25 import BM25Field
from ._embedding import EmbeddingField

__all__ = ["restore_partition", "new_cache_epoch", "queue_new_epoch", "cache_version_keys"]

#: Keys read from the backup (DUMP and PTTL) per round trip.
DUMP_BATCH = 500


def cache_version_keys(model: type[Model], space: KeySpace) -> list[str]:
    """The version hashes of ``model``'s change-logged indexes (vectors, BM25) in partition ``space``."""
    keys = [field.keys(space)[1] for field in model._meta.fields_of(EmbeddingField)]
    keys += [field.keys_in(space).version for field in model._meta.fields_of(BM25Field)]
    return keys


def new_cache_epoch(model: type[Model], **partition: Any) -> None:
    """Give every change-logged index of ``model``'s partition a new epoch (after a restore of it
    by any other means than :func:`restore_partition`): every process's cache of it reloads."""
    space = model.query.filter(**partition).partition()
    client = model._meta.client
    keys = cache_version_keys(model, space)
    with server_errors(client):
        with client.pipeline(transaction=False) as pipe:
            for key in keys:
                pipe.exists(key)
            present = {key for key, found in zip(keys, pipe.execute()) if found}
        with client.pipeline(transaction=True) as pipe:
            queue_new_epoch(pipe, model, space, present)
            pipe.execute()


def restore_partition(model: type[Model], source: Any, **partition: Any) -> int:
    """Replace ``model``'s partition on its live server with the same partition on ``source`` (a
    client of a server holding the backup): the live keys deleted, the backup's restored with
    their TTLs, and every cache epoch bumped, in one MULTI/EXEC (one slot: the partition's hash
    tag). Other tenants are not touched. Returns how many keys were restored."""
    space = model.query.filter(**partition).partition()
    client = model._meta.client
    with server_errors(source):
        names = _partition_keys(source, space)
        dumps: list[tuple[str, bytes, int]] = []
        for start in range(0, len(names), DUMP_BATCH):
            batch = names[start : start + DUMP_BATCH]
            with source.pipeline(transaction=False) as pipe:
                for name in batch:
                    pipe.dump(name)
                    pipe.pttl(name)
                replies = pipe.execute()
            dumps += [(name, value, max(int(ttl), 0)) for name, value, ttl in zip(batch, replies[::2], replies[1::2])
                      if value is not None]
    with server_errors(client):
        live = _partition_keys(client, space)
        with client.pipeline(transaction=True) as pipe:
            if live:
                pipe.delete(*live)
            for name, value, ttl in dumps:
                pipe.restore(name, ttl, value, replace=True)
            queue_new_epoch(pipe, model, space, {name for name, _, _ in dumps})
            pipe.execute()
    register(model._meta, client, [space.tag])
    return len(dumps)


def queue_new_epoch(pipe: Any, model: type[Model], space: KeySpace, present: Collection[str]) -> None:
    """Queue a new epoch on each version hash of ``model`` in ``space`` that is in ``present`` (the
    keys that exist once the queued writes ran: a version hash created later starts its own epoch)."""
    epoch = f"restored-{uuid.uuid4().hex}"
    for key in cache_version_keys(model, space):
        if key in present:
            pipe.hset(key, "epoch", epoch)


def _partition_keys(client: Any, space: KeySpace) -> list[str]:
    """Every key of partition ``space`` (its keys share the prefix ``<base>:``), by SCAN."""
    pattern = _glob_escaped(space.base) + ":*"
    if is_cluster(client):
        node = client.get_node_from_key(space.base + ":")
        found = client.scan_iter(match=pattern, count=1000, target_nodes=node)
    else:
        found = client.scan_iter(match=pattern, count=1000)
    return sorted({key.decode() if isinstance(key, bytes) else key for key in found})


def _glob_escaped(text: str) -> str:
    return "".join("\\" + c if c in "*?[]\\" else c for c in text)
