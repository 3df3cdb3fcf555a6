"""DbKey: where a record lives in Redis."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..store._keys import KeyKind, KeySpace

__all__ = ["DbKey"]

#: ``<prefix>:<Model>:{<tag>}:r[:<record id>]``: prefix and model name hold none of ``:{}``, the
#: tag (escaped partition values) no brace.
_RECORD_KEY = re.compile(
    r"^(?P<prefix>[^:{}]+):(?P<model>[^:{}]+):\{(?P<tag>[^{}]*)\}:" + re.escape(KeyKind.RECORD) + r"(?::(?P<id>.*))?$"
)


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

    @classmethod
    def parse(cls, redis_key: str) -> DbKey | None:
        """The DbKey whose ``redis_key`` is ``redis_key``; None when it names no record hash."""
        match = _RECORD_KEY.match(redis_key)
        if match is None:
            return None
        return cls(KeySpace(match["prefix"], match["model"], match["tag"]), match["id"] or "")

    def __str__(self) -> str:
        return self.redis_key

    def __repr__(self) -> str:
        return f"DbKey({self.redis_key!r})"
