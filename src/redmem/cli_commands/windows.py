"""Memories written before ChatMemory had the fact lifecycle get their validity window when read.

Reads of a lifecycle model show the records whose window is open (:mod:`redmem.lifecycle`);
a memory stored by an older version has no window, so without one it would drop out of every
read. :func:`open_windows` runs before each read of an agent's memories (``ask``, ``chat``,
MCP ``recall``, the inspector's playground): one round trip that compares the agent's records
with the window index, and only when they differ a save of the memories without a window
(valid from when they were said, still current).
"""

from __future__ import annotations

from ..store.keys import KeyKind
from .memory import ChatMemory

__all__ = ["open_windows"]


def open_windows(agent: str) -> int:
    """Give ``agent``'s memories stored without a validity window one; returns how many."""
    space = ChatMemory._meta.keyspace((agent,))
    pipe = ChatMemory._meta.client.pipeline(transaction=False)
    pipe.zcard(space.key(KeyKind.ALL_RECORDS))
    pipe.zcard(space.key(KeyKind.SORTED, "valid_to"))
    records, windows = pipe.execute()
    if records == windows:
        return 0
    older = [m for m in ChatMemory.query.filter(agent_id=agent).no_track().all() if m.valid_from is None]
    ChatMemory.save_many(older)
    return len(older)
