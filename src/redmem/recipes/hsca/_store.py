"""HSCA snapshots in Redis: one record per snapshot, partitioned by (agent, session).

A :class:`SnapshotRecord` holds the snapshot's fields, its chunks (``to_dict()`` form, the text
emptied when the engine drops it), its term weights (the weight map by concept, which outlives
the text) and its terms as tags, so "the first snapshot that mentions X" is one indexed query.
Its save also writes, in the same MULTI/EXEC (exactly-once with it), the snapshot's
:class:`~.source.SnapshotPassage` (the view a ContextAssembler pulls from) and its share of the
session's macro aggregates (:mod:`.series`: the domain series and the domain sums).
Positions come from one counter per session (``HSCAKeyKind.HSCA_POSITION``, INCR), so two processes
appending to one session never take the same position; a save that fails after its INCR leaves a
gap in the positions, never a duplicate.

Reads of snapshots go through the process's :class:`~.series.BeatCache`: the ids come from the
series (a region, the last ``n``) or from an index query (the snapshots mentioning a concept),
and only the records not read before are loaded, in one round trip.

The session is listed, before its first snapshot is written, in its agent's sessions
(``HSCAKeyKind.HSCA_SESSIONS``, under the agent's own hash tag, so outside the snapshot's slot: a
``ZADD NX`` scored by the first snapshot's time, which may be repeated without effect), the list
:class:`~.agent.AgentMacro` reads across sessions.
"""

from __future__ import annotations

from collections.abc import Sequence

from ...model._dbkey import DbKey
from ...model._loading import load_records
from ...model._query import Query
from ...store._connection import server_errors
from ...store._keys import KeySpace, unescape
from ._beats import Beat
from ._interface import ContextSnapshot
from ._keys import HSCAKeyKind
from ._macro import DomainStep, domain_steps
from ._models import ServedRecord, SnapshotRecord
from ._series import SeriesEntry, beat_cache, parse_entry, queue_added
from ._source import session_passages

__all__ = ["SnapshotRecord", "SessionStore", "agent_sessions_key"]


def agent_sessions_key(agent_id: str) -> str:
    """The sorted set of ``agent_id``'s HSCA sessions (under the agent's own hash tag)."""
    return ServedRecord._meta.keyspace((agent_id,)).key(HSCAKeyKind.HSCA_SESSIONS)


class SessionStore:
    """The beats of one (agent, session) in Redis: append, read back by position, find by concept."""

    def __init__(self, agent_id: str, session_id: str) -> None:
        self.agent_id, self.session_id = agent_id, session_id
        self._space = SnapshotRecord._meta.keyspace((agent_id, session_id))
        self._listed = False

    @property
    def space(self) -> KeySpace:
        """The session's key space (its snapshots' partition)."""
        return self._space

    def next_position(self) -> int:
        """A new position for this session (0 first), atomic across processes."""
        client = SnapshotRecord._meta.client
        return int(client.incr(self._space.key(HSCAKeyKind.HSCA_POSITION))) - 1

    def append(self, beat: Beat) -> None:
        """Store one snapshot with its term weights (listing the session in its agent's first)."""
        snapshot, data = beat.snapshot, beat.snapshot.to_dict()
        if not self._listed:
            client = SnapshotRecord._meta.client
            with server_errors(client):
                client.zadd(agent_sessions_key(self.agent_id), {self.session_id: snapshot.created_at}, nx=True)
            self._listed = True
        SnapshotRecord.create(
            agent_id=self.agent_id, session_id=self.session_id, snapshot_id=snapshot.snapshot_id,
            position=snapshot.conversation_position, macro_weight=data["macro_weight"],
            domain_summary=data["domain_summary"], forced=snapshot.forced, created_at=snapshot.created_at,
            chunks=data["chunks"], term_weights=dict(beat.term_weights), concepts=sorted(beat.term_weights),
        )
        beat_cache(SnapshotRecord._meta.client, self._space).add(data, dict(beat.term_weights))

    def count(self) -> int:
        return self._query().count()

    def clear(self) -> int:
        """Delete the session's snapshots (with their aggregates), its position counter and its
        place in the agent's sessions; how many snapshots went."""
        removed = sum(1 for record in self._query() if record.delete())
        for passage in session_passages(self.agent_id, self.session_id):
            passage.delete()
        client = SnapshotRecord._meta.client
        with server_errors(client):
            client.delete(*(self._space.key(kind) for kind in
                            (HSCAKeyKind.HSCA_POSITION, HSCAKeyKind.HSCA_SERIES, HSCAKeyKind.HSCA_DOMAIN_SUMS)))
            client.zrem(agent_sessions_key(self.agent_id), self.session_id)
        self._listed = False
        return removed

    def series(self, start: int = 0, stop: int | None = None) -> list[SeriesEntry]:
        """The domain series entries with ``start <= position <= stop`` (no ``stop``: to the end)."""
        client = SnapshotRecord._meta.client
        with server_errors(client):
            members = client.zrangebyscore(self._space.key(HSCAKeyKind.HSCA_SERIES), start, "+inf" if stop is None else stop)
        return [parse_entry(m) for m in members]

    def domain_evolution(self, start: int = 0, stop: int | None = None) -> list[DomainStep]:
        """The domain evolution of the positions ``start..stop``, from the series (the entry just
        before ``start`` read too, for the first step's ``shifted``)."""
        client = SnapshotRecord._meta.client
        with server_errors(client):
            before = client.zrevrangebyscore(self._space.key(HSCAKeyKind.HSCA_SERIES), f"({start}", "-inf", start=0, num=1)
        entries = [parse_entry(m) for m in before] + self.series(start, stop)
        steps = domain_steps([(e.position, e.domain_summary) for e in entries])
        return steps[len(before):]

    def between(self, start: int = 0, stop: int | None = None) -> list[Beat]:
        """The beats with ``start <= position <= stop`` (no ``stop``: to the end), in order."""
        ids = [e.snapshot_id for e in self.series(start, stop)]
        if start <= 0 and stop is None:
            beat_cache(SnapshotRecord._meta.client, self._space).forget_except(ids)
        return self._beats(ids)

    def last(self, n: int) -> list[Beat]:
        """The last ``n`` beats, in order (the series' last ``n`` entries)."""
        if n <= 0:
            return []
        client = SnapshotRecord._meta.client
        with server_errors(client):
            members = client.zrange(self._space.key(HSCAKeyKind.HSCA_SERIES), -n, -1)
        return self._beats([parse_entry(m).snapshot_id for m in members])

    def first_mention(self, terms: Sequence[str]) -> int | None:
        """The position of the first beat holding every term of ``terms``; None if none does."""
        first = self._query().filter(concepts__all=list(terms)).order_by("position").first()
        return None if first is None else int(first.position)

    def mentioning(self, terms: Sequence[str], start: int = 0, stop: int | None = None) -> list[Beat]:
        """The beats in the region holding any term of ``terms``, in order."""
        query = self._query().filter(concepts__any=list(terms), position__gte=start)
        if stop is not None:
            query = query.filter(position__lte=stop)
        return self._beats([unescape(k.record_id) for k in query.order_by("position").keys()])

    def rebuild_aggregates(self) -> int:
        """Write the session's domain series and sums again from its snapshot records (one
        MULTI/EXEC; for sessions stored before the aggregates existed); how many snapshots."""
        records = self._query().order_by("position").all()
        client = SnapshotRecord._meta.client
        with server_errors(client), client.pipeline(transaction=True) as pipe:
            pipe.delete(self._space.key(HSCAKeyKind.HSCA_SERIES), self._space.key(HSCAKeyKind.HSCA_DOMAIN_SUMS))
            for r in records:
                queue_added(pipe, self._space, r.position, r.snapshot_id, r.created_at, r.domain_summary)
            pipe.execute()
        return len(records)

    def _beats(self, snapshot_ids: list[str]) -> list[Beat]:
        """The beats of ``snapshot_ids``, in that order: the records not read before loaded in one
        round trip, the rest from the process's cache (records are written once); ids whose
        record is gone are left out."""
        cache = beat_cache(SnapshotRecord._meta.client, self._space)
        record_id = SnapshotRecord._meta.record_id
        keys = [DbKey(self._space, record_id({"snapshot_id": i})) for i in cache.missing(snapshot_ids)]
        for record in load_records(SnapshotRecord, keys, track=False):
            cache.add(record.snapshot_dict(), dict(record.term_weights))
        return [Beat(ContextSnapshot.from_dict(s), dict(w)) for s, w in cache.found(snapshot_ids)]

    def _query(self) -> Query:
        return SnapshotRecord.query.filter(agent_id=self.agent_id, session_id=self.session_id)
