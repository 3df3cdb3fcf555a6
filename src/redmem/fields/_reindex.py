"""reindex: re-run fields' save hooks over every stored record, so indexes cover older records.

A field declared after records were saved (a BM25 index, a sorted field...) knows nothing of
them until each is saved again. :func:`reindex` walks every partition of the model in pages
of record ids and, per page, re-runs the chosen fields' save hooks (``on_save_many`` over the
page) exactly as a save of each unchanged record would (``old`` = the stored values), without
rewriting the records and without the model's other save effects (mixins' events, timestamps).
Per page: WATCH the records, one pipelined read of their hashes, one MULTI/EXEC of the hooks'
writes; a record changed concurrently makes the page start over.

The partitions come from the partition registry, or from a keyspace scan when it is turned off
(:mod:`redmem.model._registry`), so reindex runs as a user who may read the registry key (or run
``SCAN``), not as a user confined to one tenant.

A field may define ``reindex_read(pipe, batch)`` to queue one read of its own state per
record; the reply becomes ``batch.prepared[field.name]`` (else its ``prepare`` runs, as in a
save).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..model._dbkey import DbKey
from ..model._field import Field
from ..model._pages import read_batches, record_pages
from ..model._persistence import ALL_RECORDS
from ..store._connection import server_errors
from ..store._errors import ValidationError
from ..store._validation import positive_int
from ..store._watch import MAX_ATTEMPTS, watched_transaction

if TYPE_CHECKING:
    from ..model._base import Model

__all__ = ["reindex", "Progress"]

#: ``progress(done, total)``: records processed so far, and the records known to exist.
Progress = Callable[[int, int], None]


def reindex(
    model: type[Model],
    field_names: list[str] | tuple[str, ...] | None = None,
    batch_size: int = 500,
    progress: Progress | None = None,
) -> int:
    """Re-run the save hooks of ``field_names`` (default: every field) over every record.

    Returns how many records were processed. ``progress(done, total)`` is called before the
    first page and after each one. Raises ValidationError for an unknown field name or a
    ``batch_size`` below 1.
    """
    fields = _chosen_fields(model, field_names)
    batch_size = positive_int("batch_size", batch_size)
    client = model._meta.client
    spaces = model.query.partitions()
    with server_errors(client), client.pipeline(transaction=False) as pipe:
        for space in spaces:
            pipe.zcard(space.key(ALL_RECORDS))
        total = sum(pipe.execute())
    done = 0
    if progress is not None:
        progress(done, total)
    for space in spaces:
        for ids in record_pages(client, space, batch_size):
            _reindex_page(model, [DbKey(space, record_id) for record_id in ids], fields)
            done += len(ids)
            if progress is not None:
                progress(done, max(total, done))
    return done


def _chosen_fields(model: type[Model], names: list[str] | tuple[str, ...] | None) -> list[Field[Any]]:
    fields = model._meta.fields
    if names is None:
        return list(fields.values())
    if isinstance(names, str):
        names = [names]
    unknown = [name for name in names if name not in fields]
    if unknown:
        raise ValidationError(f"{model.__name__} has no field(s) {unknown}")
    return [fields[name] for name in names]


def _reindex_page(model: type[Model], keys: list[DbKey], fields: list[Field[Any]]) -> None:
    client = model._meta.client

    def attempt(pipe: Any) -> None:
        pipe.watch(*(key.redis_key for key in keys))
        batches = [batch for batch, _ in read_batches(model, client, pipe, keys, fields)]
        pipe.multi()
        for batch in batches:
            batch.pipe = pipe
        if batches:
            for field in fields:
                field.on_save_many(batches)
        pipe.execute()

    conflict = f"gave up reindexing {keys[0]}.. after {MAX_ATTEMPTS} conflicting concurrent writes"
    watched_transaction(client, attempt, conflict)
