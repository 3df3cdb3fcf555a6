"""A DecayingSortedField's exact order at one time, paged from Redis without loading the records.

The power curve has no static order: which of two records decays below the other depends on
the time. :meth:`DecayingSortedField.ranked` finds a top ``n`` by the threshold algorithm, which
reads most of a large partition whose scores lie close together (deep pages of old memories).
:func:`build_order` instead scores every record at one time ``now``, in Redis
(``decay_snapshot.lua``, slices of :data:`SLICE` records, so no call holds the server long), into
a sorted set of the partition (:attr:`KeyKind.DECAY_SNAPSHOT`), which :func:`saved_order_page`
pages with ``ZREVRANGE``. The order is exact at the time it was built; it is *fresh* for
:data:`SNAPSHOT_TTL` seconds while the partition holds the same number of records, and kept
:data:`ORDER_KEPT` seconds so a caller can serve it, stating its time, while a newer one is
built. One build at a time per partition (a lock key beside the order). :func:`exact_decay_page`
is the synchronous composition: a fresh order, built by the call when there is none. The power
curve only: an exponential curve's order is a static range already (``ranked``).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from ..model._persistence import ALL_RECORDS
from ..store._connection import server_errors
from ..store._keys import KeyKind, KeySpace
from ..store._scripts import run_script
from ._decay import MODULATION_STRENGTH, DecayingSortedField

__all__ = ["exact_decay_page", "saved_order_page", "build_order", "SavedPage", "SNAPSHOT_TTL", "ORDER_KEPT",
           "BUILD_LOCK_TTL", "SLICE"]

#: Seconds an exact order is fresh (after that a caller builds it again).
SNAPSHOT_TTL = 300
#: Seconds a built order is kept in Redis, fresh or not (a derived cache: it expires on its own).
ORDER_KEPT = 86_400
#: Seconds the build lock of a partition lives if its builder dies before releasing it.
BUILD_LOCK_TTL = 120
#: Records scored per script call while an order is built: small, so a page read while an order
#: is built in the background waits little behind one call (5,000: p50 226 ms at 100k, 1,000: 23 ms).
SLICE = 1_000


@dataclass(frozen=True)
class SavedPage:
    """A page of the saved order: its ids, the partition's size, the time the order is exact at
    (None when there is no saved order) and how many records it holds."""

    ids: list[str]
    total: int
    built: float | None
    held: int

    def fresh(self, now: float) -> bool:
        """Whether the order is younger than :data:`SNAPSHOT_TTL` and holds every record of the partition."""
        return self.built is not None and self.held == self.total and 0 <= now - self.built < SNAPSHOT_TTL


def saved_order_page(field: DecayingSortedField, space: KeySpace, offset: int, limit: int) -> SavedPage:
    """A page of the saved order, best first (ties by id, descending), in one round trip."""
    client = field.model._meta.client
    order, at, _ = _keys(field, space)
    with server_errors(client), client.pipeline(transaction=False) as pipe:
        pipe.zcard(space.key(ALL_RECORDS))
        pipe.zcard(order)
        pipe.get(at)
        pipe.zrevrange(order, offset, offset + limit - 1)
        total, held, stamp, ids = pipe.execute()
    return SavedPage([raw.decode() for raw in ids], total, None if stamp is None else float(stamp), held)


def exact_decay_page(field: DecayingSortedField, space: KeySpace, offset: int, limit: int,
                     now: float) -> tuple[list[str], int, float]:
    """A page of record ids by ``field``'s decayed score, best first (ties by id, descending), the
    partition's size, and the time the order is exact at (``now`` when it was built by this call;
    a build running elsewhere is waited for by building here too once its lock is free)."""
    page = saved_order_page(field, space, offset, limit)
    if page.fresh(now) and page.built is not None:
        return page.ids, page.total, page.built
    built = build_order(field, space, now, wait=True)
    page = saved_order_page(field, space, offset, limit)
    return page.ids, page.total, built if built is not None else now


def _keys(field: DecayingSortedField, space: KeySpace) -> tuple[str, str, str]:
    order = space.key(KeyKind.DECAY_SNAPSHOT, field.name)
    return order, f"{order}:at", f"{order}:building"


def build_order(field: DecayingSortedField, space: KeySpace, now: float, wait: bool = False) -> float | None:
    """Score every record at ``now`` into a fresh key, slice by slice, then swap it in; returns
    ``now``, or None without building when another build of the partition holds the lock (and
    ``wait`` is false; with ``wait`` the call waits for the lock, then builds)."""
    client = field.model._meta.client
    keys = field.keys_in(space)
    order, at, lock_key = _keys(field, space)
    building = f"{order}:{uuid.uuid4().hex}"
    source = field.confidence_source()
    script_keys = [keys.updated, keys.base, source.index_key(space) if source is not None else keys.base, building]
    center = source.initial_confidence if source is not None else 0.5
    lock = client.lock(lock_key, timeout=BUILD_LOCK_TTL, blocking_timeout=BUILD_LOCK_TTL if wait else None)
    with server_errors(client):
        if not lock.acquire(blocking=wait):
            return None
        try:
            size = client.zcard(keys.updated)
            for start in range(0, size, SLICE):
                run_script("decay_snapshot", script_keys,
                           [repr(now), repr(field.decay_rate), start, start + SLICE - 1,
                            int(bool(field.base_score_field)), int(source is not None), repr(center),
                            repr(2 * MODULATION_STRENGTH), SNAPSHOT_TTL], client)
            with client.pipeline(transaction=False) as pipe:
                if size:
                    pipe.unlink(order)  # the old order is freed in the background, not by the RENAME
                    pipe.rename(building, order)
                    pipe.expire(order, ORDER_KEPT)
                else:
                    pipe.delete(order)
                pipe.set(at, repr(now), ex=ORDER_KEPT)
                pipe.execute()
        finally:
            lock.release()
    return now
