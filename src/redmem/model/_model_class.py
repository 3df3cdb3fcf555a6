"""``ModelClass``: what the model's function modules ask of a ``Model`` subclass.

The function modules (persistence, loading, queries, filters, bulk saves, migration, the
partition registry, paging) take a model class and read its options and two queue hooks. They
annotate it with this protocol rather than with ``type[Model]``, so ``model/_base.py`` imports
them and none of them imports it back: the package has no import circle, not even one closed
only for the type checker.
"""

from __future__ import annotations

from typing import Any, ClassVar, Protocol

from ._batch import SaveBatch
from ._dbkey import DbKey
from ._options import Options

__all__ = ["ModelClass", "ModelRecord"]


class ModelRecord(Protocol):
    """A record of a ``Model`` subclass, seen from below: its class's ``_meta`` and queue hooks."""

    _meta: ClassVar[Options]
    _saved_key: DbKey | None
    _was_stored: bool

    @classmethod
    def queue_read_effects(cls, pipe: Any, keys: list[DbKey]) -> None: ...

    @classmethod
    def queue_save_many(cls, batches: list[SaveBatch]) -> None: ...


#: A ``Model`` subclass, as the function modules below ``model/_base.py`` take it.
ModelClass = type[ModelRecord]
