"""Walking a model's stored records in pages, and reading a page for a rewrite of its indexes.

Shared by :func:`redmem.fields._reindex.reindex` and :func:`redmem.model._migration.migrate`:
both re-run fields' save hooks over stored records, one atomic page at a time.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from ..store._connection import server_errors
from ..store._keys import KeySpace
from ._batch import SaveBatch
from ._dbkey import DbKey
from ._field import Field
from ._loading import decode_stored, instance_from_stored
from ._model_class import ModelClass
from ._persistence import ALL_RECORDS

__all__ = ["record_pages", "read_batches", "Rewrite"]

#: ``rewrite(raw)``: the hash a record will hold, from the hash it holds (a migration's renames).
Rewrite = Callable[[dict[bytes, bytes]], dict[bytes, bytes]]


def record_pages(client: Any, space: KeySpace, size: int, after: str | None = None) -> Iterator[list[str]]:
    """Record ids of the partition in pages of ``size``, by id (stable while records come and go),
    starting after the id ``after`` (None: from the first)."""
    start = "-" if after is None else "(" + after
    while True:
        with server_errors(client):
            ids = [raw.decode() for raw in client.zrangebylex(space.key(ALL_RECORDS), start, "+", 0, size)]
        if ids:
            yield ids
        if len(ids) < size:
            return
        start = "(" + ids[-1]


def read_batches(
    model: ModelClass, client: Any, watching: Any, keys: list[DbKey], fields: list[Field[Any]],
    rewrite: Rewrite | None = None,
) -> list[tuple[SaveBatch, dict[bytes, bytes]]]:
    """One pipelined read of the records and the fields' own state (``reindex_read``); for each
    record that exists, its batch (as an unchanged save of the ``rewrite`` of its hash would
    prepare it) and the hash as read."""
    readers: list[Any] = [f for f in fields if callable(getattr(f, "reindex_read", None))]
    batches = [SaveBatch(None, client, key.keyspace, key.record_id, None) for key in keys]
    with client.pipeline(transaction=False) as reads:
        for key, batch in zip(keys, batches):
            reads.hgetall(key.redis_key)
            for field in readers:
                field.reindex_read(reads, batch)
        replies = iter(reads.execute())
    found = []
    for key, batch in zip(keys, batches):
        raw = next(replies)
        batch.prepared = {field.name: next(replies) for field in readers}
        if not raw:
            continue  # deleted since the page was listed
        written = raw if rewrite is None else rewrite(raw)
        batch.instance = instance_from_stored(model, key, written)
        batch.old = decode_stored(model, key, written)
        for field in fields:
            if field not in readers:
                batch.prepared[field.name] = field.prepare(watching, batch)
        found.append((batch, raw))
    return found
