"""Fields that name or index records: KeyField, AutoKeyField, SortedField, TagField."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..store._errors import ModelException, ValidationError
from ..store._keys import KeyKind
from ..store._validation import epoch_of, tenant
from ._codecs import finite_float
from ._field import Field

if TYPE_CHECKING:
    from ._batch import SaveBatch

__all__ = ["KeyField", "AutoKeyField", "SortedField", "TagField"]


class KeyField(Field[Any]):
    """Part of the record's identity (and of its Redis key); never None.

    Its value is in the record's key name, so the record hash does not repeat it when its
    encoding is its key text (:mod:`.key_values`: a str or int KeyField, an AutoKeyField).
    When a model has several non-partition key fields, each is also indexed by value so that
    a filter naming only some of them can find records.
    """

    is_key = True

    def __init__(self, type: type = str, **options: Any) -> None:
        if type not in (str, int):
            raise ModelException(f"KeyField type must be str or int, not {type!r}")
        if options.pop("null", False):
            raise ModelException("a KeyField names the record and cannot be null")
        super().__init__(type, null=False, **options)

    def coerce(self, value: Any) -> Any:
        """The checked value; a partition field's must name a tenant (:func:`~redmem.store._validation.tenant`)."""
        value = super().coerce(value)
        if self.name in self.model._meta.partition_fields:
            tenant(self.label, value)
        return value

    def key_text(self, value: Any) -> str:
        """The value as it appears (escaped) in the record's key."""
        return str(value)

    @property
    def value_indexed(self) -> bool:
        meta = self.model._meta
        return self.name not in meta.partition_fields and len(meta.id_fields) > 1

    def value_index_key(self, batch: SaveBatch, value: Any) -> str:
        return batch.keyspace.value_key(KeyKind.KEY_VALUE, self.name, self.key_text(value))

    def on_save(self, batch: SaveBatch, old: dict[str, Any] | None) -> None:
        if self.value_indexed and old is None:
            value = getattr(batch.instance, self.name)
            batch.pipe.sadd(self.value_index_key(batch, value), batch.record_id)

    def on_delete(self, batch: SaveBatch, old: dict[str, Any]) -> None:
        if self.value_indexed:
            batch.pipe.srem(self.value_index_key(batch, old[self.name]), batch.record_id)


class AutoKeyField(KeyField):
    """A key filled with a random UUID (32 hex digits) when a new record is saved without one."""

    def __init__(self, **options: Any) -> None:
        super().__init__(str, **options)

    def before_save(self, instance: Any, creating: bool) -> None:
        if getattr(instance, self.name) is None:
            setattr(instance, self.name, uuid.uuid4().hex)


class SortedField(Field[Any]):
    """A number or datetime kept in a sorted set per partition, for range filters and ordering.

    The score is the number itself, or seconds since the epoch for a datetime; NaN and
    infinities are rejected.
    """

    def __init__(self, type: type = float, **options: Any) -> None:
        if type not in (int, float, datetime):
            raise ModelException(f"SortedField type must be int, float or datetime, not {type!r}")
        super().__init__(type, **options)

    def coerce(self, value: Any) -> Any:
        value = super().coerce(value)
        self.score(value)
        return value

    def score(self, value: Any) -> float:
        """The sorted-set score of a value of this field."""
        if isinstance(value, datetime):
            return epoch_of(value)
        return finite_float(value, self.label)

    def index_key(self, batch: SaveBatch) -> str:
        return batch.keyspace.key(KeyKind.SORTED, self.name)

    def on_save(self, batch: SaveBatch, old: dict[str, Any] | None) -> None:
        value = getattr(batch.instance, self.name)
        if value is None:
            if old is not None and old.get(self.name) is not None:
                batch.pipe.zrem(self.index_key(batch), batch.record_id)
        else:
            batch.pipe.zadd(self.index_key(batch), {batch.record_id: self.score(value)})

    def on_delete(self, batch: SaveBatch, old: dict[str, Any]) -> None:
        batch.pipe.zrem(self.index_key(batch), batch.record_id)


class TagField(Field[list[str]]):
    """A set of string tags, stored as a sorted JSON list, one Redis set per tag value.

    One str is a one-tag set (``kind="fact"`` is ``kind=["fact"]``), as in a filter (``where={"kind": "fact"}``).
    """

    python_type = list

    def coerce(self, value: Any) -> list[str]:
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, (list, tuple, set, frozenset)):
            raise ValidationError(f"{self.label} expects a str or a list or set of str, got {type(value).__name__}")
        if not all(isinstance(tag, str) for tag in value):
            raise ValidationError(f"{self.label} tags must all be str")
        return sorted(set(value))

    def tag_key(self, batch: SaveBatch, tag: str) -> str:
        return batch.keyspace.value_key(KeyKind.TAG, self.name, tag)

    def on_save(self, batch: SaveBatch, old: dict[str, Any] | None) -> None:
        new_tags = set(getattr(batch.instance, self.name) or ())
        old_tags = set((old or {}).get(self.name) or ())
        for tag in old_tags - new_tags:
            batch.pipe.srem(self.tag_key(batch, tag), batch.record_id)
        for tag in new_tags - old_tags:
            batch.pipe.sadd(self.tag_key(batch, tag), batch.record_id)

    def on_delete(self, batch: SaveBatch, old: dict[str, Any]) -> None:
        for tag in old.get(self.name) or ():
            batch.pipe.srem(self.tag_key(batch, tag), batch.record_id)
