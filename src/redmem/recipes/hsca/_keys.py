"""The kinds of key HSCA writes beside its snapshots' records.

``<prefix>:<Model>:{<partition>}:<kind>[:...]``: the core kinds are :class:`~redmem.store._keys.KeyKind`;
these are HSCA's own, distinct from every other owner's (``tests/unit/store/test_keys.py``).
"""

from __future__ import annotations

from enum import StrEnum, unique

__all__ = ["HSCAKeyKind"]


@unique
class HSCAKeyKind(StrEnum):
    """HSCA's kinds of key."""

    #: string (counter): the last conversation position given to a snapshot of the session
    HSCA_POSITION = "hp"
    #: sorted set: a session's domain series, one JSON entry per snapshot, scored by position
    HSCA_SERIES = "hd"
    #: hash: a session's domain sums (domain -> summed weight in 1e-4 units; ``#beats``)
    HSCA_DOMAIN_SUMS = "hw"
    #: sorted set: the sessions of an agent, scored by the time of their first snapshot
    HSCA_SESSIONS = "hx"
