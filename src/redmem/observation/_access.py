"""AccessTrackerMixin: reads are staged, then confirmed as accesses or discarded.

A read (any tracking query or ``get``, or :meth:`ObservationProtocol.on_read`) stages one
entry per record: a tentative access that expires ``access_staging_ttl`` seconds (24 h) after
the record's latest read. When the reader reports that the record was used,
:meth:`confirm_access` adds the number of staged reads to the record's access count and moves
their times into its access log (newest first, capped at ``access_log_size`` = 100); otherwise
:meth:`discard_staged_access` drops them. Exactly the staged reads are counted, as in Popoto's
AccessTrackerMixin: confirming with nothing staged counts nothing, and discarded reads never count.

Where it lives in Redis (``<base>`` = ``<prefix>:<Model>:{<partition>}``, same slot as the record):

- ``<base>:as:<record id>``: list of staged read times (s), the newest ``access_log_size``, with a TTL;
- ``<base>:asc:<record id>``: how many reads are staged (every one, also those whose time the list
  no longer keeps), with the same TTL;
- ``<base>:al:<record id>``: list of confirmed access times, newest first, capped;
- the record hash entries ``access.count`` and ``access.last``: the access count and the time
  of the last confirmation that counted a read. The model's save never writes them (they are
  no fields), so re-saving a stale instance loses no access; deleting the record deletes them
  with its hash.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, ClassVar

from ..model._base import Model, RecordMixin
from ..model._batch import SaveBatch
from ..model._dbkey import DbKey
from ..store._aio import async_variant
from ..store._connection import server_errors
from ..store._keys import KeyKind, KeySpace
from ..store._scripts import queue_script, run_script
from ..store._validation import timestamp

__all__ = ["AccessTrackerMixin", "STAGED_KIND", "STAGED_COUNT_KIND", "LOG_KIND", "COUNT_ENTRY", "LAST_ENTRY"]

#: Key kind of a record's staged read times: ``<base>:as:<record id>``.
STAGED_KIND = KeyKind.STAGED_READS
#: Key kind of a record's staged read count: ``<base>:asc:<record id>``.
STAGED_COUNT_KIND = KeyKind.STAGED_COUNT
#: Key kind of a record's access log: ``<base>:al:<record id>``.
LOG_KIND = KeyKind.ACCESS_LOG
#: Record-hash entries kept by the tracker (dotted, so no field name can collide with them).
COUNT_ENTRY = "access.count"
LAST_ENTRY = "access.last"


def staged_key(key: DbKey) -> str:
    return key.keyspace.key(STAGED_KIND, key.record_id)


def staged_count_key(key: DbKey) -> str:
    return key.keyspace.key(STAGED_COUNT_KIND, key.record_id)


def log_key(key: DbKey) -> str:
    return key.keyspace.key(LOG_KIND, key.record_id)


def stored_key(instance: Model) -> DbKey:
    """Where the instance was loaded from or last saved (else where its key fields point)."""
    return instance._saved_key or instance.db_key


class AccessTrackerMixin(RecordMixin):
    """Stage reads of a model's records and count the ones confirmed as used.

    Put it before ``Model`` in the bases: ``class Memory(AccessTrackerMixin, Model)``.
    Reads through ``Model.query.no_track()`` stage nothing.
    """

    #: Seconds a staged read waits for confirmation before it expires (refreshed by each read).
    access_staging_ttl: ClassVar[int] = 86400
    #: Confirmed accesses kept in a record's log; also the most staged reads kept per record.
    access_log_size: ClassVar[int] = 100

    # -- staging (the model's read hook) ---------------------------------------------------------
    @classmethod
    def queue_read_effects(cls, pipe: Any, keys: list[DbKey]) -> None:
        """Stage one read of each distinct stored record among ``keys``, one script per partition."""
        super().queue_read_effects(pipe, keys)
        cls.queue_stage_reads(pipe, keys)

    @classmethod
    def queue_stage_reads(cls, pipe: Any, keys: list[DbKey], now: float | None = None) -> None:
        """Queue the staging of one read per distinct key (records that do not exist are skipped)."""
        by_partition: dict[KeySpace, list[str]] = defaultdict(list)
        for key in dict.fromkeys(keys):
            by_partition[key.keyspace] += [key.redis_key, staged_key(key), staged_count_key(key)]
        at = repr(timestamp("now", now))
        for script_keys in by_partition.values():
            args = [at, cls.access_staging_ttl, cls.access_log_size]
            queue_script(pipe, "access_stage", script_keys, args)

    # -- confirming and discarding ---------------------------------------------------------------
    def confirm_access(self, pipeline: Any = None, now: float | None = None) -> int | None:
        """Count the staged reads as accesses and move their times into the access log.

        Atomic (Lua). Returns the number of accesses recorded: the staged reads, 0 when none are
        staged (nothing is counted, logged or stamped) or when the record is not stored (its
        staged reads are dropped and nothing is recreated); None when queued on ``pipeline``.
        ``now`` is the time stamped as ``last_accessed`` when something is counted.
        """
        key = stored_key(self)
        keys = [key.redis_key, staged_key(key), log_key(key), staged_count_key(key)]
        args = [repr(timestamp("now", now)), self.access_log_size, COUNT_ENTRY, LAST_ENTRY]
        if pipeline is not None:
            queue_script(pipeline, "access_confirm", keys, args)
            return None
        client = self._meta.client
        with server_errors(client):
            return int(run_script("access_confirm", keys, args, client))

    def discard_staged_access(self, pipeline: Any = None) -> None:
        """Drop the staged reads (the record was read but not used): they will never count."""
        key = stored_key(self)
        keys = (staged_key(key), staged_count_key(key))
        if pipeline is not None:
            for name in keys:  # one DEL each: a cluster pipeline refuses a multi-key DEL
                pipeline.delete(name)
            return
        client = self._meta.client
        with server_errors(client):
            client.delete(*keys)

    # -- what is known (one round trip each) -------------------------------------------------------
    @property
    def access_count(self) -> int:
        """Confirmed accesses of the record, ever."""
        raw = self._read(lambda client, key: client.hget(key.redis_key, COUNT_ENTRY))
        return int(raw) if raw is not None else 0

    @property
    def last_accessed(self) -> float | None:
        """Time (s since the epoch) of the last confirmed access, None before the first."""
        raw = self._read(lambda client, key: client.hget(key.redis_key, LAST_ENTRY))
        return float(raw) if raw is not None else None

    @property
    def access_log(self) -> list[float]:
        """Times of the last ``access_log_size`` confirmed accesses, newest first."""
        raw = self._read(lambda client, key: client.lrange(log_key(key), 0, -1))
        return [float(at) for at in raw]

    @property
    def staged_accesses(self) -> list[float]:
        """Times of the reads waiting for confirmation (the newest ``access_log_size``), oldest first."""
        raw = self._read(lambda client, key: client.lrange(staged_key(key), 0, -1))
        return [float(at) for at in raw]

    @property
    def staged_access_count(self) -> int:
        """How many reads wait for confirmation: what :meth:`confirm_access` would count now."""
        def both(client: Any, key: DbKey) -> list[Any]:
            replies: list[Any] = client.pipeline(transaction=False).get(staged_count_key(key)).llen(staged_key(key)).execute()
            return replies

        counted, kept = self._read(both)
        return max(int(counted or 0), int(kept))

    def _read(self, command: Any) -> Any:
        client = self._meta.client
        with server_errors(client):
            return command(client, stored_key(self))

    # -- the record's lifecycle ------------------------------------------------------------------
    def queue_delete(self, batch: SaveBatch) -> None:
        """Delete the record's staged reads and access log with it."""
        super().queue_delete(batch)
        key = DbKey(batch.keyspace, batch.record_id)
        batch.pipe.delete(staged_key(key), staged_count_key(key), log_key(key))

    # The asyncio API (docs/asyncio.md): each runs its sync twin over redis.asyncio.
    aconfirm_access = async_variant(confirm_access)
    adiscard_staged_access = async_variant(discard_staged_access)
    aaccess_count = async_variant(access_count)
    alast_accessed = async_variant(last_accessed)
    aaccess_log = async_variant(access_log)
    astaged_accesses = async_variant(staged_accesses)
    astaged_access_count = async_variant(staged_access_count)
