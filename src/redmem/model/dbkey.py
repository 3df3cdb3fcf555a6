"""DbKey: where a record lives in Redis."""

from __future__ import annotations

from dataclasses import dataclass

from ..store.keys import KeySpace

__all__ = ["DbKey"]


@dataclass(frozen=True, order=True)
class DbKey:
    """A record's partition key space and id; ``redis_key`` is the name of its hash."""

    keyspace: KeySpace
    record_id: str

    @property
    def redis_key(self) -> str:
        return self.keyspace.record(self.record_id)

    @property
    def partition(self) -> tuple[str, ...]:
        """The values of the model's partition fields (empty for unpartitioned models)."""
        return self.keyspace.partition_values

    def __str__(self) -> str:
        return self.redis_key

    def __repr__(self) -> str:
        return f"DbKey({self.redis_key!r})"
