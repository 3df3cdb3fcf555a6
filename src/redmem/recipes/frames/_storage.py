"""The frames recipe's reads and writes of its own keys, beside the blocks' records.

The duplicate pairs ``<space>:z:duplicates`` (lex members ``"<a> <b>"``, both orders), the self
version counter, the active-hours clock, the custom frame definitions, and single hash entries
of stored blocks (their content or tags, read without loading the record). Every Redis call of
:class:`~redmem.recipes.frames._engine.FrameMemory` that is not a primitive's, a script's or a
record's own goes through :class:`FrameStore`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ...store._connection import server_errors
from ...store._keys import KeyKind, KeySpace
from ._retrieval import block_keys

__all__ = ["FrameStore"]


@dataclass(frozen=True)
class FrameStore:
    """One agent's frames keys (``space``: the agent's partition of ``Block``)."""

    client: Any
    space: KeySpace

    @property
    def duplicates_key(self) -> str:
        """The agent's duplicate pairs, both orders, as lex members ``"<a> <b>"``."""
        return self.space.key(KeyKind.SORTED, "duplicates")

    def queue_duplicates(self, pipe: Any, block_id: str, others: Sequence[str]) -> None:
        """Queue the pairs (``block_id``, other) in both orders."""
        for other in others:
            pipe.zadd(self.duplicates_key, {f"{block_id} {other}": 0, f"{other} {block_id}": 0})

    def duplicates_of(self, block_id: str) -> list[str]:
        """The blocks paired with ``block_id`` as duplicates (sorted ids): one ZRANGEBYLEX."""
        with server_errors(self.client):
            found = self.client.zrangebylex(self.duplicates_key, f"[{block_id} ", f"({block_id}!")
        return sorted(_text(entry)[len(block_id) + 1:] for entry in found)

    def queue_self_changed(self, pipe: Any) -> None:
        """Queue a move of the self version (cached frames built before are stale)."""
        pipe.incr(block_keys(self.space)["version"])

    def self_changed(self) -> None:
        """Move the self version now."""
        with server_errors(self.client):
            self.client.incr(block_keys(self.space)["version"])

    def clock(self) -> tuple[Any, Any]:
        """The active-hours clock's (hours, started) entries as stored (None when unset)."""
        with server_errors(self.client):
            hours, started = self.client.hmget(block_keys(self.space)["clock"], "hours", "started")
        return hours, started

    def store_definition(self, name: str, encoded: str) -> None:
        """Store a custom frame definition (JSON) under ``name``."""
        with server_errors(self.client):
            self.client.hset(block_keys(self.space)["definitions"], name, encoded)

    def definition(self, name: str) -> Any:
        """The stored JSON of custom frame ``name``, None when there is none."""
        with server_errors(self.client):
            return self.client.hget(block_keys(self.space)["definitions"], name)

    def entries(self, block_ids: Sequence[str], entry: str) -> list[Any]:
        """The raw hash entry ``entry`` of each block, None where the block is not stored: one round trip."""
        with server_errors(self.client), self.client.pipeline(transaction=False) as pipe:
            for block_id in block_ids:
                pipe.hget(self.space.record(block_id), entry)
            found: list[Any] = pipe.execute()
        return found


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value
