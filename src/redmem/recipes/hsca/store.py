"""HSCA snapshots in Redis: one record per snapshot, partitioned by (agent, session).

Each snapshot is also stored as a :class:`~.source.SnapshotPassage`, the view a
ContextAssembler pulls from. A :class:`SnapshotRecord` holds the snapshot's fields, its chunks (``to_dict()`` form, the text
emptied when the engine drops it), its term weights (the weight map by concept, which outlives
the text) and its terms as tags, so "the first snapshot that mentions X" is one indexed query.
Positions come from one counter per session (``KeyKind.HSCA_POSITION``, INCR), so two processes
appending to one session never take the same position; a save that fails after its INCR leaves a
gap in the positions, never a duplicate.
"""

from __future__ import annotations

from collections.abc import Sequence

from ...model.base import Model
from ...model.fields import BooleanField, DictField, FloatField, ListField
from ...model.indexed import KeyField, SortedField, TagField
from ...model.query import Query
from ...store.keys import KeyKind
from .beats import Beat
from .interface import ContextSnapshot
from .source import save_passage, session_passages

__all__ = ["SnapshotRecord", "SessionStore"]


class SnapshotRecord(Model):
    """One ContextSnapshot of one session of one agent."""

    agent_id = KeyField(partition_by=("agent_id", "session_id"))
    session_id = KeyField()
    snapshot_id = KeyField()
    position = SortedField(int, null=False)
    macro_weight = FloatField(default=0.0)
    domain_summary = DictField(default={})
    forced = BooleanField(default=False)
    created_at = FloatField(default=0.0)
    chunks = ListField(default=[])
    term_weights = DictField(default={})
    concepts = TagField(default=[])

    def snapshot(self) -> ContextSnapshot:
        """The ContextSnapshot this record stores."""
        return ContextSnapshot.from_dict({
            "snapshot_id": self.snapshot_id, "chunks": self.chunks, "macro_weight": self.macro_weight,
            "domain_summary": self.domain_summary, "conversation_position": self.position,
            "forced": self.forced, "created_at": self.created_at,
        })


class SessionStore:
    """The beats of one (agent, session) in Redis: append, read back by position, find by concept."""

    def __init__(self, agent_id: str, session_id: str) -> None:
        self.agent_id, self.session_id = agent_id, session_id
        self._space = SnapshotRecord._meta.keyspace((agent_id, session_id))

    def next_position(self) -> int:
        """A new position for this session (0 first), atomic across processes."""
        client = SnapshotRecord._meta.client
        return int(client.incr(self._space.key(KeyKind.HSCA_POSITION))) - 1

    def append(self, beat: Beat) -> None:
        """Store one snapshot with its term weights."""
        snapshot, data = beat.snapshot, beat.snapshot.to_dict()
        SnapshotRecord.create(
            agent_id=self.agent_id, session_id=self.session_id, snapshot_id=snapshot.snapshot_id,
            position=snapshot.conversation_position, macro_weight=data["macro_weight"],
            domain_summary=data["domain_summary"], forced=snapshot.forced, created_at=snapshot.created_at,
            chunks=data["chunks"], term_weights=dict(beat.term_weights), concepts=sorted(beat.term_weights),
        )
        save_passage(self.agent_id, self.session_id, beat)

    def count(self) -> int:
        return self._query().count()

    def clear(self) -> int:
        """Delete the session's snapshots and its position counter; how many snapshots went."""
        removed = sum(1 for record in self._query() if record.delete())
        for passage in session_passages(self.agent_id, self.session_id):
            passage.delete()
        SnapshotRecord._meta.client.delete(self._space.key(KeyKind.HSCA_POSITION))
        return removed

    def between(self, start: int = 0, stop: int | None = None) -> list[Beat]:
        """The beats with ``start <= position <= stop`` (no ``stop``: to the end), in order."""
        query = self._query().filter(position__gte=start)
        if stop is not None:
            query = query.filter(position__lte=stop)
        return [_beat(r) for r in query.order_by("position")]

    def last(self, n: int) -> list[Beat]:
        """The last ``n`` beats, in order: a range query below the position counter (a descending
        scan of the whole session only when gaps left that range short)."""
        top = int(SnapshotRecord._meta.client.get(self._space.key(KeyKind.HSCA_POSITION)) or 0)
        start = max(0, top - n)
        beats = self.between(start)
        if len(beats) >= n or start == 0:
            return beats[-n:] if n > 0 else []
        return [_beat(r) for r in reversed(self._query().order_by("-position").limit(n).all())]

    def first_mention(self, terms: Sequence[str]) -> int | None:
        """The position of the first beat holding every term of ``terms``; None if none does."""
        first = self._query().filter(concepts__all=list(terms)).order_by("position").first()
        return None if first is None else int(first.position)

    def mentioning(self, terms: Sequence[str], start: int = 0, stop: int | None = None) -> list[Beat]:
        """The beats in the region holding any term of ``terms``, in order."""
        query = self._query().filter(concepts__any=list(terms), position__gte=start)
        if stop is not None:
            query = query.filter(position__lte=stop)
        return [_beat(r) for r in query.order_by("position")]

    def _query(self) -> Query:
        return SnapshotRecord.query.filter(agent_id=self.agent_id, session_id=self.session_id)


def _beat(record: SnapshotRecord) -> Beat:
    return Beat(record.snapshot(), dict(record.term_weights))
