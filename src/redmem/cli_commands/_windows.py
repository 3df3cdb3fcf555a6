"""The reads of an agent's ChatMemory, and the validity windows they need.

Reads of a lifecycle model show the records whose window is open (:mod:`redmem.lifecycle`).
:func:`read_memories` is every read of an agent's memories (``ask``, ``chat``, MCP ``recall``,
the inspector's playground):

- memories stored by an older version have no window, so they would drop out of every read:
  when the agent's records outnumber its windows, those memories are saved again with one
  (valid from when they were said, still current);
- when none of the agent's memories is superseded (ChatMemory supersedes only by hand), the
  current read and ``as_of="all"`` read the same records, and the second checks no window per
  candidate and ranks the keywords in-process (an ``assemble()`` of 10,000 memories: about half
  the server time), so the read asks for it.

Both facts are counted in the read's first round trip (:class:`WindowCounts`), so a read with
nothing superseded and every window in place costs the assembler's round trips alone. Which
read to send is decided before the counts are known, from what the last read of the agent in
this process counted (:data:`SUPERSEDED_SEEN`): an agent seen with superseded memories is sent
the current read at once (three round trips; its counts only say whether that still holds), any
other the ``as_of="all"`` read. When the counts contradict the read sent (something superseded
or restored meanwhile, or a memory without a window), the read stops before loading or writing anything and
is asked again as it needs to be: four round trips, once. Either way the answer is the read the
counts call for: ``as_of="all"`` with nothing superseded, else the current one.
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


#: Per agent (and server), whether the last read of it in this process found superseded memories,
#: at most :data:`SEEN_MOST` agents (then forgotten together: a forgotten agent is read as one with
#: nothing superseded, the usual case).
SUPERSEDED_SEEN: dict[tuple[int, str], bool] = {}
SEEN_MOST = 4096


class _Recount(Exception):
    """A read found counts that call for another read: a memory without a window, or a
    superseded-or-not state other than the read sent assumed."""

    def __init__(self, records: int, windows: int, superseded: int) -> None:
        super().__init__(records, windows, superseded)
        self.windowless, self.superseded = records != windows, superseded > 0


@dataclass(frozen=True)
class WindowCounts:
    """A search riding a read's first round trip: (records, windows, superseded) of ``agent``;
    with ``strict``, :class:`_Recount` raised unless every record has a window and whether
    something is superseded is what the read sent assumed (``current``: the current read, the
    answer when something is; else ``as_of="all"``, the answer when nothing is). What it counted
    is kept in :data:`SUPERSEDED_SEEN` for the next read of the agent."""

    agent: str
    strict: bool = True
    current: bool = False

    def calls(self) -> list[ScriptCall]:
        space = ChatMemory._meta.keyspace((self.agent,))
        keys = [space.key(KeyKind.ALL_RECORDS), space.key(KeyKind.SORTED, "valid_to")]
        return [ScriptCall("window_counts", keys, [f"({OPEN_END!r}"])]

    def finish(self, replies: list[Any]) -> tuple[int, int, int]:
        records, windows, superseded = (int(n) for n in replies[0])
        _seen(self.agent, superseded > 0)
        if self.strict and (records != windows or (superseded > 0) != self.current):
            raise _Recount(records, windows, superseded)
        return records, windows, superseded


def _seen(agent: str, superseded: bool) -> None:
    if len(SUPERSEDED_SEEN) >= SEEN_MOST:
        SUPERSEDED_SEEN.clear()
    SUPERSEDED_SEEN[_client_key(), agent] = superseded


def _client_key() -> int:
    """The client the agent's memories are read with (a new connection: another server, maybe)."""
    return id(ChatMemory._meta.client)


def read_memories(assembler: ContextAssembler, text: str, agent: str, where: dict[str, Any] | None,
                  **options: Any) -> AssemblyResult:
    """``assembler.assemble(text)`` over ``agent``'s memories with ``where`` (None: the current
    ones), read ``as_of="all"`` when that reads the same records; windowless memories get one first."""
    if where is None:
        current = SUPERSEDED_SEEN.get((_client_key(), agent), False)
        try:
            return assembler.assemble(text, where=None if current else {AS_OF: ALL_TIMES},
                                      riders=[WindowCounts(agent, current=current)], agent_id=agent, **options)
        except _Recount as recount:
            if recount.windowless:
                open_windows(agent)
            every = not recount.windowless and not recount.superseded  # the current read assumed wrongly
            return assembler.assemble(text, where={AS_OF: ALL_TIMES} if every else None, agent_id=agent, **options)
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
