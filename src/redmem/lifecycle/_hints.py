"""Which index entries (``d:<digest>``, ``s:<slot>``) this process last saw naming a current record.

A hint, never a fact: the one-call write (:mod:`._one_trip`) ranks the nearest records only when
the index may hold neither its text nor its slot (the rule that uses them applies only then), so
it asks here first. A wrong hint costs one round trip (the script answers "rank" and the write
is sent again, ranked), never a wrong decision: the script decides from the index itself.
"""

from __future__ import annotations

from ..store._client_cache import ClientCache

__all__ = ["HeldEntries", "held", "HINTS_PER_PARTITION"]

#: Entries remembered per partition; past it the oldest half is forgotten (a forgotten entry only
#: makes a write rank the nearest records it may not need).
HINTS_PER_PARTITION = 65536


class HeldEntries:
    """The entries of one partition's lifecycle index last seen naming a current record (in order of use)."""

    def __init__(self) -> None:
        self._entries: dict[str, None] = {}

    def any_held(self, entries: list[str]) -> bool:
        """Whether one of ``entries`` was last seen held."""
        return any(entry in self._entries for entry in entries)

    def seen(self, held: list[str], gone: list[str]) -> None:
        """``held`` now name a current record, ``gone`` no longer do."""
        for entry in gone:
            self._entries.pop(entry, None)
        for entry in held:
            self._entries.pop(entry, None)
            self._entries[entry] = None
        if len(self._entries) > HINTS_PER_PARTITION:
            for entry in list(self._entries)[: HINTS_PER_PARTITION // 2]:
                del self._entries[entry]


#: The hints per (client, lifecycle index key).
held: ClientCache[HeldEntries] = ClientCache(HeldEntries)
