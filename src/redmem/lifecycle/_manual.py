"""Supersede and restore by hand, and a record's history in one call."""

from __future__ import annotations

from typing import Any

from ..model._dbkey import DbKey
from ..model._loading import load_records
from ..model._persistence import save_records
from ..store._errors import ValidationError
from ._detect import slot_key, text_digest
from ._index import VERSION_ENTRY, index_key
from ._timeline import as_epoch

__all__ = ["supersede", "restore", "history"]

#: The fields a supersede or restore sets on the record it closes or reopens, and on its successor.
_CLOSED, _LINKED = ("valid_to", "superseded_by"), ("supersedes",)


def _linked(record: Any, record_id: str | None) -> Any:
    """The record of the same partition named by ``record_id`` (None when absent or deleted)."""
    if not record_id:
        return None
    found = load_records(type(record), [DbKey(record.db_key.keyspace, record_id)], track=False)
    return found[0] if found else None


def supersede(older: Any, newer: Any, *, at: Any = None) -> None:
    """Mark ``older`` superseded by ``newer`` (both stored, one partition): ``older.valid_to`` =
    ``at`` (default ``newer.valid_from``), links both ways; one MULTI/EXEC, exactly once. Only
    those three fields are written from the instances: the others as stored at the write (a
    count or time another client wrote since they were loaded stays)."""
    if type(older) is not type(newer) or older.db_key.keyspace != newer.db_key.keyspace:
        raise ValidationError("supersede links two records of one model and one partition")
    if older.db_key == newer.db_key:
        raise ValidationError("a record cannot supersede itself")
    end = as_epoch(at) if at is not None else newer.valid_from
    if end < older.valid_from:
        raise ValidationError(f"superseding at {end} would end {older!r} before it began ({older.valid_from})")
    older.valid_to, older.superseded_by = end, newer.db_key.record_id
    newer.supersedes = older.db_key.record_id
    index = index_key(older.db_key.keyspace)
    slot = slot_key(newer.subject, newer.slot) if newer.subject and newer.slot else None

    def also(pipe: Any) -> None:
        pipe.hincrby(index, VERSION_ENTRY, 1)
        if slot and newer.valid_to is None:
            pipe.hset(index, "s:" + slot, newer.db_key.record_id)

    save_records([], [older, newer], watch=[index], also=also, changed=[_CLOSED, _LINKED])


def restore(record: Any) -> None:
    """Make a superseded record current again: its window reopened, the links to its successor
    removed (the successor stays as it is); one MULTI/EXEC, exactly once, writing those fields
    alone (as :func:`supersede`)."""
    successor = _linked(record, record.superseded_by)
    record.valid_to = record.superseded_by = None
    updated = [record]
    if successor is not None and successor.supersedes == record.db_key.record_id:
        successor.supersedes = None
        updated.append(successor)
    index = index_key(record.db_key.keyspace)
    text = str(getattr(record, type(record).lifecycle.text_field) or "")

    def also(pipe: Any) -> None:
        pipe.hincrby(index, VERSION_ENTRY, 1)
        pipe.hset(index, "d:" + text_digest(text), record.db_key.record_id)

    save_records([], updated, watch=[index], also=also, changed=[_CLOSED, _LINKED][: len(updated)])


def history(record: Any) -> list[Any]:
    """Every version of ``record``'s fact, oldest first: the chain of ``supersedes`` links back
    and ``superseded_by`` links forward (a record superseded by hand included)."""
    chain = [record]
    seen = {record.db_key.record_id}
    while (before := _linked(chain[0], chain[0].supersedes)) is not None and before.db_key.record_id not in seen:
        seen.add(before.db_key.record_id)
        chain.insert(0, before)
    while (after := _linked(chain[-1], chain[-1].superseded_by)) is not None and after.db_key.record_id not in seen:
        seen.add(after.db_key.record_id)
        chain.append(after)
    return chain
