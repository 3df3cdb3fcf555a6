"""A DecayingSortedField's exact order at one time, paged from Redis without loading the records.

The power curve has no static order: which of two records decays below the other depends on
the time. :meth:`DecayingSortedField.ranked` finds a top ``n`` by the threshold algorithm, which
reads most of a large partition whose scores lie close together (deep pages of old memories).
:func:`exact_decay_page` instead scores every record at one time ``now``, in Redis
(``decay_snapshot.lua``, slices of :data:`SLICE` records, so no call holds the server long), into
a sorted set of the partition (:attr:`KeyKind.DECAY_SNAPSHOT`), then pages it with ``ZREVRANGE``.
The order is exact at the time it was built; it is reused for :data:`SNAPSHOT_TTL` seconds while
the partition holds the same number of records (the caller shows the time it is exact at). The
power curve only: an exponential curve's order is a static range already (``ranked``).
"""

from __future__ import annotations

import uuid

from ..model.persistence import ALL_RECORDS
from ..store.connection import server_errors
from ..store.keys import KeyKind, KeySpace
from ..store.scripts import run_script
from .decay import MODULATION_STRENGTH, DecayingSortedField

__all__ = ["exact_decay_page", "SNAPSHOT_TTL", "SLICE"]

#: Seconds an exact order is reused before it is built again.
SNAPSHOT_TTL = 300
#: Records scored per script call while an order is built.
SLICE = 5_000


def exact_decay_page(field: DecayingSortedField, space: KeySpace, offset: int, limit: int,
                     now: float) -> tuple[list[str], int, float]:
    """A page of record ids by ``field``'s decayed score, best first (ties by id, descending), the
    partition's size, and the time the order is exact at (``now`` when it was built by this call)."""
    client = field.model._meta.client
    order, at = _keys(field, space)
    with server_errors(client), client.pipeline(transaction=False) as pipe:
        pipe.zcard(space.key(ALL_RECORDS))
        pipe.zcard(order)
        pipe.get(at)
        total, held, stamp = pipe.execute()
    built = float(stamp) if stamp is not None else None
    if built is None or held != total or not 0 <= now - built < SNAPSHOT_TTL:
        built = _build(field, space, now)
    with server_errors(client):
        ids = client.zrevrange(order, offset, offset + limit - 1)
    return [raw.decode() for raw in ids], total, built


def _keys(field: DecayingSortedField, space: KeySpace) -> tuple[str, str]:
    order = space.key(KeyKind.DECAY_SNAPSHOT, field.name)
    return order, f"{order}:at"


def _build(field: DecayingSortedField, space: KeySpace, now: float) -> float:
    """Score every record at ``now`` into a fresh key, slice by slice, then swap it in."""
    client = field.model._meta.client
    keys = field.keys_in(space)
    order, at = _keys(field, space)
    building = f"{order}:{uuid.uuid4().hex}"
    source = field.confidence_source()
    script_keys = [keys.updated, keys.base, source.index_key(space) if source is not None else keys.base, building]
    center = source.initial_confidence if source is not None else 0.5
    with server_errors(client):
        size = client.zcard(keys.updated)
        for start in range(0, size, SLICE):
            run_script("decay_snapshot", script_keys,
                       [repr(now), repr(field.decay_rate), start, start + SLICE - 1, int(bool(field.base_score_field)),
                        int(source is not None), repr(center), repr(2 * MODULATION_STRENGTH), SNAPSHOT_TTL], client)
        with client.pipeline(transaction=False) as pipe:
            if size:
                pipe.unlink(order)  # the old order is freed in the background, not by the RENAME
                pipe.rename(building, order)  # with the TTL the slices set
            else:
                pipe.delete(order)
            pipe.set(at, repr(now), ex=SNAPSHOT_TTL)
            pipe.execute()
    return now
