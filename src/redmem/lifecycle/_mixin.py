"""``LifecycleMixin``: validity time, reinforcement and supersede links on every record of a model.

A model lists the mixin and may set ``lifecycle = Lifecycle(...)``. Its reads (every path built
on :func:`~redmem.model._filters.compile_where`: ``assemble()``, ``keyword_search``,
``composite_score``, the recipes over them) then see current facts only, unless the ``where``
carries ``as_of`` (epoch seconds or a datetime: the facts valid then; ``"all"``: every record).
Saving a new record goes through :func:`~redmem.lifecycle.remember`.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any, ClassVar

from ..model._base import Model, RecordMixin
from ..model._batch import SaveBatch
from ..model._fields import FloatField, IntField, ListField, StringField
from ..model._filters import Condition
from ..model._persistence import queue_fields_save_many
from ._config import Lifecycle
from ._fields import ValidityEndField, ValidityStartField
from ._index import VERSION_ENTRY, card_entry, index_key, queue_card
from ._timeline import superseded_conditions, validity_conditions
from ._write import save_new

__all__ = ["LifecycleMixin", "AS_OF"]

#: The ``where`` entry that picks the time a read sees (not a field).
AS_OF = "as_of"


class LifecycleMixin(RecordMixin):
    """Adds ``valid_from`` / ``valid_to`` (when the fact was true), ``recorded_at`` (when it was
    written), ``subject`` / ``slot`` (what it is about), ``supersedes`` / ``superseded_by``
    (record ids, both ways) and ``seen_count`` / ``last_seen`` / ``sources`` (reinforcement)."""

    lifecycle: ClassVar[Lifecycle] = Lifecycle()

    valid_from = ValidityStartField()
    valid_to = ValidityEndField()
    recorded_at = FloatField()
    subject = StringField()
    slot = StringField()
    supersedes = StringField()
    superseded_by = StringField()
    seen_count = IntField(default=1)
    last_seen = FloatField()
    sources = ListField(default=list)

    def valid_since(self) -> float:
        """When the fact became true, for a record saved without ``valid_from``: the write time.
        A model that knows when its statements were made (a conversation turn's time) overrides it."""
        return time.time()

    def save(self) -> bool:
        """A new record goes through :func:`~redmem.lifecycle.remember` (merge or supersede;
        :func:`~._write.save_new`: no outcome built); a stored one is written as any record is."""
        if self._saved_key is None and type(self).lifecycle.active:
            save_new(self)
            return True
        return super().save()

    def queue_save(self, batch: SaveBatch) -> None:
        """The record's writes, its card in the lifecycle index (a model whose writes detect), and a
        bump of the partition's lifecycle version: a lifecycle write detecting under WATCH of that
        version then sees every change of the tenant's records."""
        super().queue_save(batch)
        queue_card(batch.pipe, self)
        batch.pipe.hincrby(index_key(batch.keyspace), VERSION_ENTRY, 1)

    @classmethod
    def queue_save_many(cls, batches: list[SaveBatch]) -> None:
        """Many new records' writes merged per field, as a plain model's, then each card and one
        version bump; when another mixin extends :meth:`queue_save` too, record by record."""
        if any("queue_save" in vars(k) for k in cls.__mro__ if k not in (LifecycleMixin, Model)):
            super().queue_save_many(batches)
            return
        queue_fields_save_many(batches)
        for batch in batches:
            queue_card(batch.pipe, batch.instance)
        if batches:
            batches[0].pipe.hincrby(index_key(batches[0].keyspace), VERSION_ENTRY, 1)

    def queue_delete(self, batch: SaveBatch) -> None:
        """The record's removal with its card, and a bump of the lifecycle version (see :meth:`queue_save`)."""
        super().queue_delete(batch)
        index = index_key(batch.keyspace)
        batch.pipe.hdel(index, card_entry(batch.record_id))
        batch.pipe.hincrby(index, VERSION_ENTRY, 1)

    @classmethod
    def validity_filter(cls, where: Mapping[str, Any] | None) -> tuple[dict[str, Any], tuple[Condition, ...]]:
        """``where`` without its ``as_of`` entry, and the validity conditions that entry asks for
        (current records when it has none). Called by :func:`~redmem.model._filters.compile_where`."""
        rest = dict(where or {})
        return rest, validity_conditions(rest.pop(AS_OF, None))

    @classmethod
    def superseded_filter(cls, where: Mapping[str, Any] | None) -> tuple[dict[str, Any], tuple[Condition, ...]]:
        """``where`` without its ``as_of`` entry, and the conditions of the records that entry's
        read leaves out as superseded (none for ``as_of="all"``). Called by
        :func:`~redmem.model._filters.compile_superseded`, for the explanation of a read."""
        rest = dict(where or {})
        return rest, superseded_conditions(rest.pop(AS_OF, None))
