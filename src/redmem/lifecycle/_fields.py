"""The fields a lifecycle model carries, and the one index kind they add."""

from __future__ import annotations

from typing import Any

from ..model._batch import SaveBatch
from ..model._indexed import SortedField
from ._timeline import OPEN_END

__all__ = ["ValidityStartField", "ValidityEndField"]


class ValidityStartField(SortedField):
    """``valid_from``: epoch seconds the fact became true. A record saved without one gets the
    model's :meth:`~redmem.lifecycle.LifecycleMixin.valid_since` (the write time unless the model
    knows better), so every record of a lifecycle model is in the window index and ``as_of``
    reads find it, however it was saved (one at a time, in bulk, or by a recipe's own write).
    """

    def __init__(self, **options: Any) -> None:
        super().__init__(float, **options)

    def before_save(self, instance: Any, creating: bool) -> None:
        if getattr(instance, self.name) is None:
            setattr(instance, self.name, instance.valid_since())


class ValidityEndField(SortedField):
    """``valid_to``: epoch seconds the fact stopped being true, None while it still is.

    Unlike a plain SortedField an open end is indexed too, at :data:`OPEN_END`, so "current"
    and "valid at t" are both one range of the same sorted set, checked inside every search.
    """

    def __init__(self, **options: Any) -> None:
        super().__init__(float, **options)

    def on_save(self, batch: SaveBatch, old: dict[str, Any] | None) -> None:
        value = getattr(batch.instance, self.name)
        batch.pipe.zadd(self.index_key(batch), {batch.record_id: OPEN_END if value is None else self.score(value)})
