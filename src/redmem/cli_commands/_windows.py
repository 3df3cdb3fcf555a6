"""The reads of an agent's ChatMemory, and the validity windows they need.

Reads of a lifecycle model show the records whose window is open (:mod:`redmem.lifecycle`).
:func:`read_memories` is every read of an agent's memories (``ask``, ``chat``, MCP ``recall``,
the inspector's playground):

- memories stored by an older version have no window, so they would drop out of every read:
  when the agent's records outnumber its windows, those memories are saved again with one
  (valid from when they were said, still current);
- when none of the agent's memories is superseded (ChatMemory supersedes only by hand), the
  current read and ``as_of="all"`` read the same records, and the second checks no window per
  candidate (an ``assemble()`` of 10,000 memories: about half the server time), so the read asks
  for it.

Both facts are counted in the read's first round trip (:class:`WindowCounts`), so a read with
nothing superseded and every window in place costs the assembler's round trips alone; otherwise
the read stops before loading or writing anything and is asked again as it needs to be.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..fields.search_protocol import run_search
from ..lifecycle import ALL_TIMES, AS_OF, OPEN_END
from ..recipes.assembler._context_assembler import AssemblyResult, ContextAssembler
from ..store._keys import KeyKind
from ..store._scripts import ScriptCall
from ._memory import ChatMemory

__all__ = ["read_memories", "open_windows", "WindowCounts"]


class _Recount(Exception):
    """A read asked ``as_of="all"`` found something superseded or a memory without a window."""

    def __init__(self, records: int, windows: int) -> None:
        super().__init__(records, windows)
        self.windowless = records != windows


@dataclass(frozen=True)
class WindowCounts:
    """A search riding a read's first round trip: (records, windows, superseded) of ``agent``;
    with ``strict``, :class:`_Recount` raised unless every record has a window and none is superseded."""

    agent: str
    strict: bool = True

    def calls(self) -> list[ScriptCall]:
        space = ChatMemory._meta.keyspace((self.agent,))
        keys = [space.key(KeyKind.ALL_RECORDS), space.key(KeyKind.SORTED, "valid_to")]
        return [ScriptCall("window_counts", keys, [f"({OPEN_END!r}"])]

    def finish(self, replies: list[Any]) -> tuple[int, int, int]:
        records, windows, superseded = (int(n) for n in replies[0])
        if self.strict and (records != windows or superseded):
            raise _Recount(records, windows)
        return records, windows, superseded


def read_memories(assembler: ContextAssembler, text: str, agent: str, where: dict[str, Any] | None,
                  **options: Any) -> AssemblyResult:
    """``assembler.assemble(text)`` over ``agent``'s memories with ``where`` (None: the current
    ones), read ``as_of="all"`` when that reads the same records; windowless memories get one first."""
    if where is None:
        try:
            return assembler.assemble(text, where={AS_OF: ALL_TIMES}, riders=[WindowCounts(agent)], agent_id=agent,
                                      **options)
        except _Recount as recount:
            if recount.windowless:
                open_windows(agent)
            return assembler.assemble(text, where=where, agent_id=agent, **options)
    open_windows(agent)
    return assembler.assemble(text, where=where, agent_id=agent, **options)


def open_windows(agent: str) -> int:
    """Give ``agent``'s memories stored without a validity window one; returns how many of its
    memories are superseded."""
    records, windows, superseded = run_search(ChatMemory._meta.client, WindowCounts(agent, strict=False))
    if records != windows:
        older = [m for m in ChatMemory.query.filter(agent_id=agent).no_track().all() if m.valid_from is None]
        ChatMemory.save_many(older)
    return superseded
