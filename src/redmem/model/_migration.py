"""Migrating stored records to the model the code declares: renamed fields moved, new indexes built.

:func:`migrate` walks every partition in pages of record ids. Per page, one MULTI/EXEC under
WATCH of the page's records moves each renamed entry (``HSET new`` + ``HDEL old``, only when
the new entry is absent, so nothing is overwritten), runs the save hooks of every index the
stored schema lacks over each record and those of the indexes over a renamed field over each
record whose entries moved (as for a new record: the index never saw it), and advances the
partition's cursor (``mg:<migration id>``, in the partition's slot). A page is therefore applied
exactly once: a crash or a killed process leaves each page applied or not, and a rerun resumes
after the cursor. At the end the schema is recorded, then the cursors go; a later run finds
nothing left to move or build and writes nothing but its cursors, dropped again.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..store._connection import server_errors
from ..store._errors import ModelException, ValidationError
from ..store._keys import KeyKind, KeySpace
from ..store._validation import positive_int
from ..store._watch import MAX_ATTEMPTS, watched_transaction
from ._dbkey import DbKey
from ._field import Field
from ._model_class import ModelClass
from ._pages import read_batches, record_pages
from ._persistence import ALL_RECORDS
from ._query import Query
from ._schema import diff, encode, model_schema, record_schema, stored_schema

__all__ = ["migrate", "MigrationReport", "Progress"]

#: ``progress(done, total)``: records migrated so far (earlier runs' included), and records known.
Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class MigrationReport:
    """What one :func:`migrate` call did."""

    #: the migration's id (a digest of the renames and the target schema)
    migration: str
    #: records this call walked (a resumed run: those after the cursor)
    records: int
    #: records whose entries this call renamed
    renamed: int
    #: records that already held both the old and the new entry: left as they are, nothing lost
    kept_both: int
    #: fields whose index writes ran: over every record, or over the records whose entries moved
    indexes: tuple[str, ...]


def migrate(
    model: ModelClass, rename: Mapping[str, str] | None = None, batch_size: int = 500,
    progress: Progress | None = None,
) -> MigrationReport:
    """Rename stored entries (``rename``: old name -> new field name) and build every index the
    stored records lack, exactly once and resumably; then record the model's schema.

    Raises ValidationError for a bad ``rename`` (nothing written) and ModelException when the
    key or partition fields changed, or a stored field changed type (records cannot move).
    """
    meta = model._meta
    renames = _checked_renames(model, dict(rename or {}))
    batch_size = positive_int("batch_size", batch_size)
    client = meta.client
    current = model_schema(meta)
    unbuilt, following = _fields_to_build(model, stored_schema(meta, client), current, renames)
    migration = hashlib.sha1(encode({"rename": renames, "target": current}).encode()).hexdigest()[:16]
    spaces = Query(model).partitions()
    cursors = [space.key(KeyKind.MIGRATION, migration) for space in spaces]
    walk = _Walk(model, renames, unbuilt, following, batch_size, progress)
    if renames or unbuilt:
        walk.run(client, spaces, cursors)
    record_schema(meta, client, lambda _: current)
    _drop(client, cursors)
    return MigrationReport(migration, walk.records, walk.renamed, walk.kept_both,
                           tuple(f.name for f in (*unbuilt, *following)))


def _checked_renames(model: ModelClass, rename: dict[str, str]) -> dict[str, str]:
    """``rename`` checked: each old name is no field of the model, each new one a stored, non-key
    field named once."""
    fields = model._meta.fields
    for old, new in rename.items():
        if not isinstance(old, str) or not isinstance(new, str):
            raise ValidationError(f"rename maps old field names to new ones (str), got {old!r}: {new!r}")
        if old in fields:
            raise ValidationError(f"{model.__name__}.{old} is still declared: rename moves entries of a field "
                                  "the model no longer has")
        field = fields.get(new)
        if field is None or not field.stored or field.is_key:
            raise ValidationError(f"rename target {new!r} must be a stored, non-key field of {model.__name__}")
    if len(set(rename.values())) != len(rename):
        raise ValidationError(f"rename gives two old fields the same new name: {rename}")
    return dict(sorted(rename.items()))


def _fields_to_build(
    model: ModelClass, stored: dict[str, Any] | None, current: dict[str, Any], renames: dict[str, str],
) -> tuple[list[Field[Any]], list[Field[Any]]]:
    """The indexing fields to run over every record (those the stored schema lacks, or holds with
    another source or version), and those to run over each record whose entries move (the
    indexes of a renamed field or over one)."""
    changes = diff(stored or current, current)
    if changes.keys_changed:
        raise ModelException(f"{model.__name__}: the key or partition fields changed since the records were "
                             "stored; they cannot be migrated in place (create the records again under the new model)")
    mismatched = [new for old, new in renames.items() if stored is not None and old in stored["fields"]
                  and stored["fields"][old]["type"] != current["fields"][new]["type"]]
    if changes.changed or mismatched:
        raise ModelException(f"{model.__name__}: field(s) {', '.join((*changes.changed, *mismatched))} changed "
                             "type; their stored values cannot be converted by migrate")
    targets = set(renames.values())
    fields = model._meta.fields
    unbuilt = [fields[name] for name in changes.unbuilt]
    following = [fields[n] for n, f in current["fields"].items() if f["indexed"] and n not in changes.unbuilt
                 and (n in targets or f["source"] in targets)]
    return unbuilt, following


def _drop(client: Any, cursors: list[str]) -> None:
    """Delete the partitions' cursors of a completed migration."""
    if cursors:
        with server_errors(client), client.pipeline(transaction=False) as pipe:
            for cursor in cursors:
                pipe.delete(cursor)
            pipe.execute()


class _Walk:
    """One run over the partitions: each page renamed, indexed and its cursor advanced atomically."""

    def __init__(
        self, model: ModelClass, renames: dict[str, str], unbuilt: list[Field[Any]], following: list[Field[Any]],
        batch_size: int, progress: Progress | None,
    ) -> None:
        self.model, self.unbuilt, self.following = model, unbuilt, following
        self.batch_size, self.progress = batch_size, progress
        self.moves = [(old.encode(), new.encode()) for old, new in renames.items()]
        self.records = self.renamed = self.kept_both = 0

    def run(self, client: Any, spaces: list[KeySpace], cursors: list[str]) -> None:
        """Every partition from its cursor on (``cursors``: one key per partition), reporting
        ``progress`` before the first page and after each, earlier runs' pages counted."""
        with server_errors(client), client.pipeline(transaction=False) as pipe:
            for space, cursor in zip(spaces, cursors):
                pipe.zcard(space.key(ALL_RECORDS))
                pipe.get(cursor)
            replies = pipe.execute()
            total = sum(replies[0::2])
            starts = [None if raw is None else raw.decode() for raw in replies[1::2]]
            for space, after in zip(spaces, starts):
                if after is not None:
                    pipe.zlexcount(space.key(ALL_RECORDS), "-", "[" + after)
            done = sum(pipe.execute())
        self._report(done, total)
        for space, cursor, after in zip(spaces, cursors, starts):
            for ids in record_pages(client, space, self.batch_size, after):
                self._page(client, [DbKey(space, record_id) for record_id in ids], cursor)
                done += len(ids)
                self.records += len(ids)
                self._report(done, max(total, done))

    def _report(self, done: int, total: int) -> None:
        if self.progress is not None:
            self.progress(done, total)

    def _rewrite(self, raw: dict[bytes, bytes]) -> dict[bytes, bytes]:
        """The hash a record holds once its renamed entries moved (an entry never overwrites another)."""
        moved = dict(raw)
        for old, new in self.moves:
            if old in moved and new not in moved:
                moved[new] = moved.pop(old)
        return moved

    def _page(self, client: Any, keys: list[DbKey], cursor: str) -> None:
        """One MULTI/EXEC: the page's renames, its index writes and the partition's cursor."""
        counts: list[int] = []

        def attempt(pipe: Any) -> None:
            pipe.watch(*(key.redis_key for key in keys), cursor)
            found = read_batches(self.model, client, pipe, keys, [*self.unbuilt, *self.following], self._rewrite)
            pipe.multi()
            moved, kept = [], 0
            for batch, raw in found:
                moves = [(old, new) for old, new in self.moves if old in raw and new not in raw]
                kept += any(old in raw and new in raw for old, new in self.moves)
                if moves:
                    pipe.hset(batch.record_key, mapping={new: raw[old] for old, new in moves})
                    pipe.hdel(batch.record_key, *(old for old, _ in moves))
                    moved.append(batch)
                batch.pipe, batch.old = pipe, None  # the index never saw the record: written as for a new one
            for fields, batches in ((self.unbuilt, [batch for batch, _ in found]), (self.following, moved)):
                for field in fields if batches else ():
                    field.on_save_many(batches)
            pipe.set(cursor, keys[-1].record_id)
            pipe.execute()
            counts[:] = [len(moved), kept]

        watched_transaction(client, attempt, f"gave up migrating {keys[0]}.. after {MAX_ATTEMPTS} conflicting writes")
        self.renamed += counts[0]
        self.kept_both += counts[1]
