"""The ``where`` of a read of an agent's ChatMemory, and the validity windows it needs.

Reads of a lifecycle model show the records whose window is open (:mod:`redmem.lifecycle`).
:func:`read_where` runs before each read of an agent's memories (``ask``, ``chat``, MCP
``recall``, the inspector's playground), in one round trip:

- memories stored by an older version have no window, so they would drop out of every read:
  when the agent's records outnumber its windows, those memories are saved again with one
  (valid from when they were said, still current);
- when none of the agent's memories is superseded (ChatMemory supersedes only by hand), the
  current read and ``as_of="all"`` read the same records, and the second checks no window per
  candidate (an ``assemble()`` of 10,000 memories: 1.9 ms p50 instead of 3.3, see
  docs/lifecycle.md), so the read asks for it.
"""

from __future__ import annotations

from typing import Any

from ..lifecycle import ALL_TIMES, AS_OF, OPEN_END
from ..store._keys import KeyKind
from ._memory import ChatMemory

__all__ = ["read_where", "open_windows"]


def read_where(agent: str, where: dict[str, Any] | None) -> dict[str, Any] | None:
    """``where`` when it names a time; else ``{"as_of": "all"}`` when nothing of ``agent`` is
    superseded, None (the current memories) otherwise. Gives windowless memories one first."""
    superseded = open_windows(agent)
    if where is not None or superseded:
        return where
    return {AS_OF: ALL_TIMES}


def open_windows(agent: str) -> int:
    """Give ``agent``'s memories stored without a validity window one; returns how many of its
    memories are superseded."""
    space = ChatMemory._meta.keyspace((agent,))
    ends = space.key(KeyKind.SORTED, "valid_to")
    pipe = ChatMemory._meta.client.pipeline(transaction=False)
    pipe.zcard(space.key(KeyKind.ALL_RECORDS))
    pipe.zcard(ends)
    pipe.zcount(ends, "-inf", f"({OPEN_END!r}")
    records, windows, superseded = pipe.execute()
    if records != windows:
        older = [m for m in ChatMemory.query.filter(agent_id=agent).no_track().all() if m.valid_from is None]
        ChatMemory.save_many(older)
    return int(superseded)
