"""RecallProposal: a record surfaced on its own (push path), waiting for what the agent did with it.

A proposal names the proposed record by its Redis key and lives in a partition: by default the
record's own partition (its partition field values joined by ``:``, ``"default"`` for an
unpartitioned model), so it shares the record's slot and is resolved where it was surfaced.
There is one proposal per (partition, record): surfacing a record again re-opens its proposal.

A proposal is ``pending`` until an outcome closes it (its status becomes the outcome) or it
expires ``ttl`` seconds (default 3600, as in popoto's RecallProposal) after surfacing:
:meth:`RecallProposal.expire_stale` marks pending proposals past their expiry ``expired``;
:meth:`RecallProposal.list_pending` never lists them. Closing is a compare-and-set in Lua, so
a proposal is closed once.

Where it lives in Redis: a RecallProposal model (``<prefix>:RecallProposal:{<partition>}:...``):
the record hash per proposal and the sorted set ``z:expires_at`` of pending proposals' expiry
times (a resolved or expired proposal leaves it).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..model._base import Model
from ..model._dbkey import DbKey
from ..model._fields import FloatField, StringField
from ..model._indexed import KeyField, SortedField
from ..model._persistence import queue_new_record
from ..store._aio import async_variant
from ..store._connection import server_errors
from ..store._keys import KeyKind
from ..store._outcome import write_pipeline
from ..store._scripts import queue_script
from ..store._validation import finite_number, timestamp

__all__ = ["RecallProposal", "PENDING", "EXPIRED", "DEFAULT_TTL", "proposal_partition"]

PENDING = "pending"
EXPIRED = "expired"
#: Seconds a proposal stays pending.
DEFAULT_TTL = 3600.0
#: Partition of proposals about records of unpartitioned models.
UNPARTITIONED = "default"


def proposal_partition(record: Any) -> str:
    """The partition a record's proposals live in: its partition values joined by ``:``."""
    key = record._saved_key or record.db_key
    return ":".join(key.partition) or UNPARTITIONED


def record_key_of(record: Model) -> str:
    return (record._saved_key or record.db_key).redis_key


class RecallProposal(Model):
    """A surfaced record awaiting an outcome (see the module docs)."""

    partition = KeyField()
    record_key = KeyField()
    record_model = StringField()
    reason = StringField()
    status = StringField(default=PENDING)
    surfaced_at = FloatField()
    expires_at = SortedField(partition_by="partition")
    resolved_at = FloatField()

    # -- creating ---------------------------------------------------------------------------------
    @classmethod
    def surface(
        cls, records: Iterable[Any], reason: str, partition: str | None = None,
        ttl: float = DEFAULT_TTL, now: float | None = None,
    ) -> list[RecallProposal]:
        """Open (or re-open) a proposal per record, all in one pipeline; returns the proposals."""
        records = list(records)
        if not records:
            return []
        client = cls._meta.client
        with server_errors(client), write_pipeline(client) as pipe:
            proposals = [cls.queue_surface(pipe, r, reason, partition, ttl, now) for r in records]
            pipe.execute()
        for proposal in proposals:
            proposal._saved_key = proposal.db_key
        return proposals

    @classmethod
    def queue_surface(
        cls, pipe: Any, record: Any, reason: str, partition: str | None = None,
        ttl: float = DEFAULT_TTL, now: float | None = None,
    ) -> RecallProposal:
        """Queue the write of a pending proposal for ``record`` (hash and indexes) on ``pipe``."""
        at, ttl = timestamp("now", now), finite_number("ttl", ttl, low=0)
        proposal = cls(
            partition=partition if partition is not None else proposal_partition(record),
            record_key=record_key_of(record), record_model=record._meta.name, reason=reason,
            surfaced_at=at, expires_at=at + ttl,
        )
        queue_new_record(pipe, cls._meta.client, proposal)
        return proposal

    # -- closing ------------------------------------------------------------------------------------
    @classmethod
    def queue_resolve(
        cls, pipe: Any, record: Any, status: str, partition: str | None = None, now: float | None = None
    ) -> None:
        """Queue closing ``record``'s pending proposal with ``status``; the reply is 1 if it was pending."""
        chosen = partition if partition is not None else proposal_partition(record)
        key = cls(partition=chosen, record_key=record_key_of(record)).db_key
        cls._queue_close(pipe, key, status, now)

    @classmethod
    def _queue_close(cls, pipe: Any, key: DbKey, status: str, now: float | None) -> None:
        at = cls._meta.fields["resolved_at"].encode(timestamp("now", now))
        pending = key.keyspace.key(KeyKind.SORTED, "expires_at")  # the SortedField index of expires_at
        queue_script(pipe, "proposal_resolve", [key.redis_key, pending],
                     [key.record_id, status, at, "status", "resolved_at", "expires_at"])

    @classmethod
    def expire_stale(cls, partition: str, now: float | None = None) -> int:
        """Mark the partition's pending proposals past their expiry ``expired``; returns how many.

        Two round trips: one to find them, one to close them.
        """
        at = timestamp("now", now)
        stale = cls.query.filter(partition=partition, expires_at__lte=at).keys()
        if not stale:
            return 0
        client = cls._meta.client
        with server_errors(client), write_pipeline(client) as pipe:
            for key in stale:
                cls._queue_close(pipe, key, EXPIRED, at)
            return sum(pipe.execute())

    # -- reading ------------------------------------------------------------------------------------
    @classmethod
    def list_pending(cls, partition: str, now: float | None = None) -> list[RecallProposal]:
        """The partition's pending, unexpired proposals, soonest expiry first."""
        at = timestamp("now", now)
        query = cls.query.filter(partition=partition, expires_at__gt=at).order_by("expires_at")
        return query.no_track().all()

    @classmethod
    def for_record(cls, record: Any, partition: str | None = None) -> RecallProposal | None:
        """The proposal of ``record`` in ``partition`` (default: the record's own), or None."""
        chosen = partition if partition is not None else proposal_partition(record)
        proposal: RecallProposal | None = cls.query.no_track().get(partition=chosen, record_key=record_key_of(record))
        return proposal

    # The asyncio API (docs/asyncio.md): each runs its sync twin over redis.asyncio.
    asurface = async_variant(surface)
    aexpire_stale = async_variant(expire_stale)
    alist_pending = async_variant(list_pending)
    afor_record = async_variant(for_record)
