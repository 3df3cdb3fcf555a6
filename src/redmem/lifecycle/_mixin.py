"""``LifecycleMixin``: validity time, reinforcement and supersede links on every record of a model.

A model lists the mixin and may set ``lifecycle = Lifecycle(...)``. Its reads (every path built
on :func:`~redmem.model.filters.compile_where`: ``assemble()``, ``keyword_search``,
``composite_score``, the recipes over them) then see current facts only, unless the ``where``
carries ``as_of`` (epoch seconds or a datetime: the facts valid then; ``"all"``: every record).
Saving a new record goes through :func:`~redmem.lifecycle.remember`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from ..model.base import RecordMixin
from ..model.batch import SaveBatch
from ..model.fields import FloatField, IntField, ListField, StringField
from ..model.filters import Condition
from ..model.indexed import SortedField
from ._config import Lifecycle
from ._fields import ValidityEndField
from ._timeline import validity_conditions
from ._write import VERSION_ENTRY, index_key, remember

__all__ = ["LifecycleMixin", "AS_OF"]

#: The ``where`` entry that picks the time a read sees (not a field).
AS_OF = "as_of"


class LifecycleMixin(RecordMixin):
    """Adds ``valid_from`` / ``valid_to`` (when the fact was true), ``recorded_at`` (when it was
    written), ``subject`` / ``slot`` (what it is about), ``supersedes`` / ``superseded_by``
    (record ids, both ways) and ``seen_count`` / ``last_seen`` / ``sources`` (reinforcement)."""

    lifecycle: ClassVar[Lifecycle] = Lifecycle()

    valid_from = SortedField(float)
    valid_to = ValidityEndField()
    recorded_at = FloatField()
    subject = StringField()
    slot = StringField()
    supersedes = StringField()
    superseded_by = StringField()
    seen_count = IntField(default=1)
    last_seen = FloatField()
    sources = ListField(default=list)

    def save(self) -> bool:
        """A new record goes through :func:`~redmem.lifecycle.remember` (merge or supersede);
        a stored one is written as any record is."""
        if self._saved_key is None and type(self).lifecycle.active:
            remember(self)
            return True
        return super().save()

    def queue_save(self, batch: SaveBatch) -> None:
        """The record's writes, and a bump of the partition's lifecycle version: a lifecycle write
        detecting under WATCH of that version then sees every change of the tenant's records."""
        super().queue_save(batch)
        batch.pipe.hincrby(index_key(batch.keyspace), VERSION_ENTRY, 1)

    def queue_delete(self, batch: SaveBatch) -> None:
        """The record's removal, and a bump of the lifecycle version (see :meth:`queue_save`)."""
        super().queue_delete(batch)
        batch.pipe.hincrby(index_key(batch.keyspace), VERSION_ENTRY, 1)

    @classmethod
    def validity_filter(cls, where: Mapping[str, Any] | None) -> tuple[dict[str, Any], tuple[Condition, ...]]:
        """``where`` without its ``as_of`` entry, and the validity conditions that entry asks for
        (current records when it has none). Called by :func:`~redmem.model.filters.compile_where`."""
        rest = dict(where or {})
        return rest, validity_conditions(rest.pop(AS_OF, None))
