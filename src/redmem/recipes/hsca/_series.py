"""A session's macro aggregates, written in each snapshot's own transaction, and the beats read so far.

Two per-session keys, queued by :class:`~.store.SnapshotRecord`'s save and delete hooks, so they
change in the same MULTI/EXEC as the snapshot record (whose WATCH and operation key make the
write exactly-once, :mod:`redmem.store._outcome`):

- the **domain series** (``HSCAKeyKind.HSCA_SERIES``), a sorted set scored by position whose member
  is one snapshot's JSON entry ``[position, snapshot_id, created_at, domain_summary]`` (the
  summary as stored, rounded to 4 places): the domain evolution, a region's snapshot ids and the
  last ``n`` beats are one range read of these entries, not a read of the snapshots;
- the **domain sums** (``HSCAKeyKind.HSCA_DOMAIN_SUMS``), a hash ``domain -> sum over the session's
  snapshots of round(weight * 10^4)`` and ``#beats -> count``: integers, so the sums do not
  depend on the order the writes arrived in and equal the sum a full read computes.

A snapshot record is written once and never changed, so a process keeps the beats it has read
(:class:`BeatCache`, per client and session, least recently used sessions dropped past
:data:`CACHED_SESSIONS`) and loads only the records it has not seen: ``get_macro_context`` on a
session of ``n`` snapshots reads the ``n`` series entries and the records new since its last call.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from weakref import WeakKeyDictionary

from ...store._keys import KeySpace
from ._keys import HSCAKeyKind

__all__ = ["SeriesEntry", "BeatCache", "beat_cache", "forget_cached_beats", "series_entry", "parse_entry", "queue_added", "queue_removed",
           "sum_units", "SUM_SCALE", "BEATS_FIELD", "CACHED_SESSIONS"]

#: Domain sums are kept in units of 1 / SUM_SCALE (the domain summary's 4 rounded places).
SUM_SCALE = 10_000
#: The field of the domain sums hash counting the session's snapshots.
BEATS_FIELD = "#beats"
#: Sessions whose beats a process keeps per client.
CACHED_SESSIONS = 16


@dataclass(frozen=True)
class SeriesEntry:
    """One snapshot in the domain series."""

    position: int
    snapshot_id: str
    created_at: float
    domain_summary: dict[str, float]


def series_entry(position: int, snapshot_id: str, created_at: float, domain_summary: Mapping[str, float]) -> str:
    """The series member of one snapshot (compact JSON; unique, as positions are)."""
    return json.dumps([position, snapshot_id, created_at, dict(domain_summary)], separators=(",", ":"))


def parse_entry(member: bytes | str) -> SeriesEntry:
    position, snapshot_id, created_at, summary = json.loads(member)
    return SeriesEntry(int(position), str(snapshot_id), float(created_at), dict(summary))


def sum_units(weight: float) -> int:
    """A domain weight in the sums' integer units."""
    return round(weight * SUM_SCALE)


def queue_added(pipe: Any, space: KeySpace, position: int, snapshot_id: str, created_at: float,
                domain_summary: Mapping[str, float]) -> None:
    """Queue one new snapshot's series entry and its share of the domain sums."""
    pipe.zadd(space.key(HSCAKeyKind.HSCA_SERIES), {series_entry(position, snapshot_id, created_at, domain_summary): position})
    _queue_sums(pipe, space, domain_summary, 1)


def queue_removed(pipe: Any, space: KeySpace, position: int, domain_summary: Mapping[str, float]) -> None:
    """Queue the removal of one deleted snapshot's series entry and its share of the domain sums."""
    pipe.zremrangebyscore(space.key(HSCAKeyKind.HSCA_SERIES), position, position)
    _queue_sums(pipe, space, domain_summary, -1)


def _queue_sums(pipe: Any, space: KeySpace, domain_summary: Mapping[str, float], sign: int) -> None:
    key = space.key(HSCAKeyKind.HSCA_DOMAIN_SUMS)
    for domain, weight in domain_summary.items():
        pipe.hincrby(key, domain, sign * sum_units(weight))
    pipe.hincrby(key, BEATS_FIELD, sign)


class BeatCache:
    """One session's snapshot records as read, by snapshot id: the values a Beat is built from."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self._records: dict[str, tuple[dict[str, Any], dict[str, float]]] = {}

    def missing(self, snapshot_ids: Iterable[str]) -> list[str]:
        with self.lock:
            return [i for i in snapshot_ids if i not in self._records]

    def add(self, snapshot: dict[str, Any], term_weights: dict[str, float]) -> None:
        with self.lock:
            self._records[snapshot["snapshot_id"]] = (snapshot, term_weights)

    def found(self, snapshot_ids: Iterable[str]) -> list[tuple[dict[str, Any], dict[str, float]]]:
        """The cached values of ``snapshot_ids``, in order (ids not cached left out)."""
        with self.lock:
            records = self._records
            return [records[i] for i in snapshot_ids if i in records]

    def forget_except(self, snapshot_ids: Iterable[str]) -> None:
        """Drop the records not among ``snapshot_ids`` (deleted ones, after a read of the whole session)."""
        kept = set(snapshot_ids)
        with self.lock:
            self._records = {k: v for k, v in self._records.items() if k in kept}


_caches: WeakKeyDictionary[Any, OrderedDict[str, BeatCache]] = WeakKeyDictionary()
_caches_lock = threading.Lock()


def beat_cache(client: Any, space: KeySpace) -> BeatCache:
    """The process's cache of the session at ``space`` read through ``client``."""
    with _caches_lock:
        sessions = _caches.setdefault(client, OrderedDict())
        cache = sessions.get(space.base)
        if cache is None:
            cache = sessions[space.base] = BeatCache()
            while len(sessions) > CACHED_SESSIONS:
                sessions.popitem(last=False)
        sessions.move_to_end(space.base)
        return cache


def forget_cached_beats() -> None:
    """Drop every session's cached beats in this process (the next reads load the records again)."""
    with _caches_lock:
        _caches.clear()
