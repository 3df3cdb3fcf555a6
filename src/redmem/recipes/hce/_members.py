"""The semantic tree's member index: each topic's interactions, cached in-process from a log in Redis.

Every interaction written appends ``<interaction id> <topic id>`` to the session's membership
log (a list, in the interaction's MULTI/EXEC). A process keeps the log's entries it has read as
lists of members per topic; a search (:class:`MemberRead`, sharing the tree search's round trip)
reads only the entries appended since (``tree_members.lua``), or the whole log again when it is
shorter than what was read, or holds another entry where the last one read was (the session was
cleared or loaded from an export). An interaction's topic never changes, so the index only grows.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any
from weakref import WeakKeyDictionary

import numpy as np

from ...embeddings._matrix import VectorMatrix
from ...store._aio import CooperativeLock
from ...store._scripts import ScriptCall

__all__ = ["MemberIndex", "MemberRead", "member_index", "member_entry", "INDEX_CAPACITY"]

#: Sessions whose member index a process keeps per client (the least recently used dropped past it).
INDEX_CAPACITY = 128
_indexes: WeakKeyDictionary[Any, OrderedDict[str, MemberIndex]] = WeakKeyDictionary()
_indexes_lock = threading.Lock()


def member_entry(interaction_id: str, topic_id: str) -> str:
    """A log entry: the interaction's id, a space, its topic's id."""
    return f"{interaction_id} {topic_id}"


class MemberIndex:
    """One session's members per topic, as read from its log: ``read`` entries, the last ``last``;
    with each topic's rows in the session's vector matrix, found once and kept while the
    matrix's layout holds."""

    def __init__(self) -> None:
        self.read, self.last = 0, ""
        self.by_topic: dict[str, list[str]] = {}
        self.lock = CooperativeLock()
        self._rows: dict[str, np.ndarray] = {}
        self._layout: tuple[VectorMatrix | None, int] = (None, 0)

    def apply(self, reply: list[Any]) -> None:
        """Add the entries of one ``tree_members.lua`` reply (all of them again on ``reload``)."""
        if reply[0] == b"reload":
            self.read, self.last, self.by_topic, self._rows = 0, "", {}, {}
        entries = [e.decode() for e in reply[1:]]
        for entry in entries:
            interaction, topic = entry.split(" ", 1)
            self.by_topic.setdefault(topic, []).append(interaction)
        if entries:
            self.read, self.last = self.read + len(entries), entries[-1]

    def rows(self, topic_ids: list[str], matrix: VectorMatrix) -> tuple[list[list[str]], list[np.ndarray]]:
        """Each topic's members (oldest first) and the rows of ``matrix`` of its leading members
        that have one (those newer than the matrix are left out); call under the matrix's lock."""
        with self.lock:
            return self.rows_held(topic_ids, matrix)

    def rows_held(self, topic_ids: list[str], matrix: VectorMatrix) -> tuple[list[list[str]], list[np.ndarray]]:
        """:meth:`rows` for a caller holding the index's lock (a search between its calls and its finish)."""
        if self._layout[0] is not matrix or self._layout[1] != matrix.layout:
            self._rows, self._layout = {}, (matrix, matrix.layout)
        members, rows = [], []
        for topic in topic_ids:
            group = self.by_topic.get(topic, [])
            found = self._rows.get(topic, np.zeros(0, dtype=np.intp))
            if found.size < len(group):
                more = matrix.rows_of(group[found.size:])
                if more.size:
                    found = self._rows[topic] = np.concatenate([found, more])
            members.append(group)
            rows.append(found)
        return members, rows


def member_index(client: Any, key: str) -> MemberIndex:
    """The index of the log ``key`` as seen through ``client`` (empty when new)."""
    with _indexes_lock:
        indexes = _indexes.setdefault(client, OrderedDict())
        index = indexes.get(key)
        if index is None:
            index = indexes[key] = MemberIndex()
            while len(indexes) > INDEX_CAPACITY:
                indexes.popitem(last=False)
        indexes.move_to_end(key)
        return index


class MemberRead:
    """The search that brings a :class:`MemberIndex` up to date (a
    :class:`~redmem.fields.search_protocol.LocalSearch`: the index stays locked from
    :meth:`calls` to :meth:`finish`, so two threads never apply the same entries)."""

    def __init__(self, client: Any, key: str) -> None:
        self.key, self.index = key, member_index(client, key)
        self._locked = False

    def calls(self) -> list[ScriptCall]:
        self.index.lock.acquire()
        self._locked = True
        return [ScriptCall("tree_members", [self.key], [self.index.read, self.index.last])]

    def work(self) -> None:
        """Nothing to do while the server answers."""

    def finish(self, replies: list[Any]) -> MemberIndex:
        try:
            self.index.apply(replies[0])
            return self.index
        finally:
            self.abandon()

    def abandon(self) -> None:
        if self._locked:
            self._locked = False
            self.index.lock.release()
