"""PrefixIndexField: the values of another field (a tag list or one string) in a lexicographic index,
so "every record with a tag starting ``self/``" is one range read, never a scan.

Where it lives in Redis: ``<base>:px:<field>``, a sorted set whose scores are all 0 and whose
members are ``"<value> <record id>"``. Values hold no whitespace, so the records of an exact value
``v`` are the range ``[v `` .. ``(v!`` and those of a prefix ``p`` the range ``[p`` .. ``(p\\xff``
(no UTF-8 text holds the byte 0xff).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...model._field import Field
from ...store._errors import ValidationError
from ...store._keys import KeySpace
from ._definitions import check_tag
from ._keys import FrameKeyKind

if TYPE_CHECKING:
    from ...model._batch import SaveBatch

__all__ = ["PrefixIndexField", "pattern_range"]


def pattern_range(pattern: str) -> tuple[str, str]:
    """The ZRANGEBYLEX bounds of the entries matching a tag pattern (``self/%``: prefix; else exact)."""
    if pattern.endswith("%"):
        stem = pattern[:-1]
        return ("[" + stem, "(" + stem + "\xff") if stem else ("-", "+")
    return "[" + pattern + " ", "(" + pattern + "!"


class PrefixIndexField(Field[Any]):
    """Index the value(s) of field ``source`` (a list of tags, or one string) by prefix."""

    stored = False

    def __init__(self, source: str) -> None:
        super().__init__()
        self.source = source

    def index_key(self, keyspace: KeySpace) -> str:
        """``<base>:px:<field>``."""
        return keyspace.key(FrameKeyKind.PREFIX_INDEX, self.name)

    def values(self, value: Any) -> set[str]:
        """The index values of a source value: a string is one value, a list its items."""
        if value is None:
            return set()
        return {value} if isinstance(value, str) else set(value)

    def before_save(self, instance: Any, creating: bool) -> None:
        """Refuse a value the index cannot hold (whitespace, control characters, ``%``) before anything is written."""
        try:
            for value in self.values(getattr(instance, self.source)):
                check_tag(value)
        except (ValidationError, TypeError) as exc:
            raise ValidationError(f"{self.label}: {exc}") from None

    def on_save(self, batch: SaveBatch, old: dict[str, Any] | None) -> None:
        new_values = self.values(getattr(batch.instance, self.source))
        old_values = self.values((old or {}).get(self.source))
        key = self.index_key(batch.keyspace)
        gone = [f"{value} {batch.record_id}" for value in old_values - new_values]
        if gone:
            batch.pipe.zrem(key, *gone)
        added = {f"{value} {batch.record_id}": 0 for value in new_values - old_values}
        if added:
            batch.pipe.zadd(key, added)

    def on_delete(self, batch: SaveBatch, old: dict[str, Any]) -> None:
        gone = [f"{value} {batch.record_id}" for value in self.values(old.get(self.source))]
        if gone:
            batch.pipe.zrem(self.index_key(batch.keyspace), *gone)
