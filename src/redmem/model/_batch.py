"""SaveBatch: the single MULTI/EXEC batch into which a record and its fields queue their writes."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..store._keys import KeySpace
from ..store._scripts import queue_script

__all__ = ["SaveBatch"]


@dataclass
class SaveBatch:
    """What a field's save/delete hook needs: the queued transaction and where the record lives.

    Everything queued on ``pipe`` runs atomically with the record's own hash write, so a crash
    leaves either the whole save or nothing. ``pipe`` is None while fields prepare.
    """

    pipe: Any
    client: Any
    keyspace: KeySpace
    record_id: str
    instance: Any
    #: The record's stored field values before this write (None: it did not exist), the key
    #: fields its hash leaves out filled from the key.
    old: dict[str, Any] | None = None
    #: What each field's ``prepare`` read, by field name.
    prepared: dict[str, Any] = field(default_factory=dict)
    #: The record's key was generated for this write: nothing at all is stored under it.
    fresh: bool = False
    #: The entry names of the stored hash when it was read (None: not read), so a write deletes
    #: exactly the entries it replaces with nothing.
    held: frozenset[str] | None = None

    @property
    def record_key(self) -> str:
        return self.keyspace.record(self.record_id)

    def script(self, name: str, keys: list[str], args: list[Any]) -> None:
        """Queue a Lua script (named by its file, in its owner's ``lua/`` folder) in the batch."""
        queue_script(self.pipe, name, keys, args)
