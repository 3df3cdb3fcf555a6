"""DecayingSortedField: a record's relevance that fades with the time since it was last touched.

Power curve (the default), with ``d = max((now - t) / 86400, 0.01)`` days since the last touch::

    score = base * d ** -decay_rate

optionally modulated by the record's confidence ``c`` (``center`` = the confidence field's
initial confidence, strength ``s = 0.5``)::

    eff = decay_rate * 2 ** (s * 2 * (center - c));  score *= max(d, 1) ** -(eff - decay_rate)

Exponential curve (``half_life`` seconds)::

    score = base * 2 ** (-(now - t) / half_life)

The power curve, its confidence modulation and their defaults are those of popoto's
DecayingSortedField; the exponential curve is redmem's addition.

Top-k never reads the whole partition. The exponential curve ranks records at any time as the
static key ``log2(base) + t / half_life`` does, so it is a sorted-set range. The power curve has
no static order, but its score is non-decreasing in each of base, t and c, so Fagin's threshold
algorithm over the per-partition sorted lists of those values finds the exact top-k while
reading only the heads of the lists (``decay_select.lua``).
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol, cast, runtime_checkable

from ..model._field import MISSING, Field
from ..model._hits import HitList
from ..model._query import Query
from ..model.query_methods import QueryMethod
from ..store._aio import async_variant
from ..store._connection import server_errors
from ..store._errors import ModelException, QueryArgumentError
from ..store._keys import KeyKind, KeySpace
from ..store._scripts import run_script
from ..store._validation import integer
from ._scoring import (
    SELECTION_EPS,
    base_score,
    best_first,
    check_base_field,
    epoch_seconds,
    non_negative,
    rows_of,
    run_or_queue,
    select_candidates,
    stamp,
    stored_key,
)
from ._search import hydrate, partition_of, pick_field

__all__ = [
    "DecayingSortedField",
    "ConfidenceSource",
    "top_by_decay",
    "power_decay",
    "confidence_modulation",
    "exponential_decay",
    "exponential_order_key",
]

SECONDS_PER_DAY = 86400.0
MIN_ELAPSED_DAYS = 0.01
MODULATION_STRENGTH = 0.5


# -- formulas ----------------------------------------------------------------------------------
def elapsed_days(last_updated: float, now: float) -> float:
    """``max((now - last_updated) / 86400, 0.01)``: a touch counts as at least 0.01 days old."""
    return max((now - last_updated) / SECONDS_PER_DAY, MIN_ELAPSED_DAYS)


def power_decay(base: float, last_updated: float, now: float, decay_rate: float) -> float:
    """``base * elapsed_days ** -decay_rate``; at rate 0.1: 1.0 at 1 day, 0.87 at 4, 0.63 at 100."""
    decayed: float = base * elapsed_days(last_updated, now) ** (-decay_rate)
    return decayed


def confidence_modulation(
    days: float, decay_rate: float, confidence: float, center: float, strength: float = MODULATION_STRENGTH
) -> float:
    """Factor ``max(days, 1) ** -(eff - rate)``, ``eff = rate * 2 ** (strength * 2 * (center - c))``.

    Confidence above ``center`` slows the decay, below it speeds it up; inert during the first day.
    """
    effective = decay_rate * 2 ** (strength * 2 * (center - confidence))
    factor: float = max(days, 1.0) ** (-(effective - decay_rate))
    return factor


def exponential_decay(base: float, last_updated: float, now: float, half_life: float) -> float:
    """``base * 2 ** (-(now - t) / half_life)``: halves every ``half_life`` seconds."""
    return base * 2 ** (-(now - last_updated) / half_life)


def exponential_order_key(base: float, last_updated: float, half_life: float) -> float:
    """``log2(base) + t / half_life`` (-inf for base 0): score = 2 ** (key - now / half_life)."""
    return math.log(base) / math.log(2) + last_updated / half_life if base > 0 else -math.inf


# -- the confidence that modulates the power curve --------------------------------------------
@runtime_checkable
class ConfidenceSource(Protocol):
    """What modulation needs of a confidence field: the zset of confidences (member = record id)
    of a partition, and the confidence of a record that has no entry in it."""

    initial_confidence: float

    def index_key(self, keyspace: KeySpace) -> str: ...


# -- the field -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class DecayKeys:
    """The sorted sets of one partition: last-updated time, base score, static order key."""

    updated: str
    base: str
    order: str


class DecayingSortedField(Field[Any]):
    """A score that decays from a base with the time since the record was created or touched.

    Nothing is stored in the record hash: the field keeps per-partition sorted sets (member =
    record id) of last-updated times, base scores (with ``base_score_field``) and, with
    ``half_life``, static order keys. Confidence modulation applies to the power curve when
    ``confidence_modulation_field`` names a field, or when the model has exactly one field that
    is a :class:`ConfidenceSource`.
    """

    stored = False
    python_type = float

    def __init__(
        self,
        decay_rate: float = 0.1,
        base_score_field: str | None = None,
        confidence_modulation_field: str | None = None,
        *,
        partition_by: str | tuple[str, ...] | None = None,
        half_life: float | None = None,
    ) -> None:
        super().__init__(float, partition_by=partition_by)
        self.decay_rate = non_negative(decay_rate, "decay_rate")
        self.half_life = None if half_life is None else non_negative(half_life, "half_life")
        if self.half_life == 0:
            raise ModelException("half_life must be > 0")
        if half_life is not None and confidence_modulation_field is not None:
            raise ModelException("confidence modulation applies to the power curve, not to half_life")
        self.base_score_field = base_score_field
        self.confidence_modulation_field = confidence_modulation_field

    @classmethod
    def query_methods(cls) -> Mapping[str, QueryMethod]:
        """``query.top_by_decay(n)``: the records with the highest decayed score."""
        return {"top_by_decay": top_by_decay}

    def bind(self, model: Any, name: str) -> None:
        super().bind(model, name)
        self._source: Any = MISSING
        check_base_field(model, self.base_score_field, self.label)
        named = self.confidence_modulation_field
        if named is not None and not isinstance(getattr(model, named, None), ConfidenceSource):
            raise ModelException(f"{self.label}: confidence_modulation_field {named!r} is not a confidence field")

    def confidence_source(self) -> ConfidenceSource | None:
        """The field whose confidence modulates the power curve, if any (found once per model)."""
        if self._source is MISSING:
            self._source = self._find_confidence_source()
        source: ConfidenceSource | None = self._source
        return source

    def _find_confidence_source(self) -> ConfidenceSource | None:
        if self.half_life is not None:
            return None
        fields = self.model._meta.fields
        if self.confidence_modulation_field is not None:
            return cast(ConfidenceSource, fields[self.confidence_modulation_field])  # bind() checked it
        found = [f for f in fields.values() if isinstance(f, ConfidenceSource)]
        return found[0] if len(found) == 1 else None

    def keys_in(self, space: KeySpace) -> DecayKeys:
        return DecayKeys(*(space.key(KeyKind.DECAY, self.name, part) for part in ("t", "b", "x")))

    def score(self, base: float, last_updated: float, confidence: float | None, now: float) -> float:
        """The decayed score from stored values (``confidence`` None: the initial confidence)."""
        if self.half_life is not None:
            return exponential_decay(base, last_updated, now, self.half_life)
        value = power_decay(base, last_updated, now, self.decay_rate)
        source = self.confidence_source()
        if source is None:
            return value
        c = source.initial_confidence if confidence is None else confidence
        days = elapsed_days(last_updated, now)
        return value * confidence_modulation(days, self.decay_rate, c, source.initial_confidence)

    def value_of(self, instance: Any) -> float | None:
        """``record.relevance``: the decayed score now, read at each access (one round trip, as
        :meth:`score_of`); None before the record's first save."""
        return None if instance._saved_key is None else self.score_of(instance)

    # -- saves ---------------------------------------------------------------------------------
    def before_save(self, instance: Any, creating: bool) -> None:
        base_score(instance, self.base_score_field, self.label)

    def on_save(self, batch: Any, old: dict[str, Any] | None) -> None:
        """Stamp the creation time (kept on later saves) and the current base score."""
        keys, record_id, now = self.keys_in(batch.keyspace), batch.record_id, time.time()
        base = base_score(batch.instance, self.base_score_field, self.label)
        if self.half_life is None:
            batch.pipe.zadd(keys.updated, {record_id: now}, nx=True)
            if self.base_score_field:
                batch.pipe.zadd(keys.base, {record_id: base})
            return
        batch.script("decay_order_key", self._order_keys(batch.record_key, keys),
                     [record_id, repr(self.half_life), repr(now), "nx", repr(base)])

    def on_save_many(self, batches: list[Any]) -> None:
        """The power curve's stamps and base scores of a chunk: one ZADD per sorted set."""
        if self.half_life is not None:
            super().on_save_many(batches)
            return
        keys, now, pipe = self.keys_in(batches[0].keyspace), time.time(), batches[0].pipe
        pipe.zadd(keys.updated, dict.fromkeys((batch.record_id for batch in batches), now), nx=True)
        if self.base_score_field:
            pipe.zadd(keys.base, {batch.record_id: base_score(batch.instance, self.base_score_field, self.label)
                                  for batch in batches})

    def on_delete(self, batch: Any, old: dict[str, Any]) -> None:
        keys = self.keys_in(batch.keyspace)
        for key in (keys.updated, keys.base, keys.order):
            batch.pipe.zrem(key, batch.record_id)

    def _order_keys(self, record_key: str, keys: DecayKeys) -> list[str]:
        return [record_key, keys.updated, keys.order] + ([keys.base] if self.base_score_field else [])

    # -- instance operations -------------------------------------------------------------------
    def touch(self, instance: Any, pipeline: Any = None, now: datetime | float | None = None) -> bool | None:
        """Set the record's last-updated time to ``now``, atomically and only if it exists.

        Returns whether it was touched, or None when queued on ``pipeline``.
        """
        key, at = stored_key(instance), epoch_seconds(now, "now")
        keys, client = self.keys_in(key.keyspace), self.model._meta.client
        if self.half_life is None:
            return stamp(key, [keys.updated], at, pipeline, client)
        args = [key.record_id, repr(self.half_life), repr(at), "set", ""]
        reply = run_or_queue("decay_order_key", self._order_keys(key.redis_key, keys), args, pipeline, client)
        return None if pipeline is not None else bool(reply)

    def score_of(self, instance: Any, as_of: datetime | float | None = None) -> float | None:
        """The record's decayed score at ``as_of`` (default now); None if it has no entry."""
        key, now = stored_key(instance), epoch_seconds(as_of)
        keys, client = self.keys_in(key.keyspace), self.model._meta.client
        source = self.confidence_source()
        with server_errors(client), client.pipeline(transaction=False) as pipe:
            pipe.zscore(keys.updated, key.record_id)
            pipe.zscore(keys.base, key.record_id)
            if source is not None:
                pipe.zscore(source.index_key(key.keyspace), key.record_id)
            last_updated, base, *confidence = pipe.execute()
        if last_updated is None:
            return None
        base = 1.0 if base is None else base
        return self.score(base, last_updated, confidence[0] if confidence else None, now)

    def ranked(self, space: KeySpace, now: float, n: int) -> list[tuple[str, float]]:
        """The top ``n`` (record id, score) pairs of a partition: one Lua call, then exact ranking."""
        keys = self.keys_in(space)
        client = self.model._meta.client
        if self.half_life is not None:
            script_keys = [keys.order, keys.updated] + ([keys.base] if self.base_score_field else [])
            with server_errors(client):
                args = [n, repr(SELECTION_EPS), repr(now / self.half_life)]
                reply = run_script("decay_order", script_keys, args, client)
            rows = rows_of(reply, len(script_keys) - 1)
        else:
            script_keys, plan = self._selection(space, keys, now, n)
            rows = select_candidates(client, script_keys, plan)
        return best_first([(rid, self._row_score(values, now)) for rid, values in rows], n)

    def _selection(self, space: KeySpace, keys: DecayKeys, now: float, n: int) -> tuple[list[str], dict[str, Any]]:
        """Keys and plan of ``decay_select.lua``: lists t, then base and confidence when present."""
        script_keys, lists = [keys.updated], [[1, True, True]]
        defaults: list[bool | float] = [False]
        plan = {"now": now, "rate": self.decay_rate, "n": n, "base": 0, "confidence": 0,
                "center": 0.5, "spread": 2 * MODULATION_STRENGTH, "linear": []}
        if self.base_score_field:
            script_keys.append(keys.base)
            lists.append([len(script_keys), True, True])
            defaults.append(1.0)
            plan["base"] = len(script_keys)
        source = self.confidence_source()
        if source is not None:
            script_keys.append(source.index_key(space))
            lists.append([len(script_keys), True, False])
            defaults.append(source.initial_confidence)
            plan.update(confidence=len(script_keys), center=source.initial_confidence)
        plan.update(lists=lists, defaults=defaults)
        return script_keys, plan

    def _row_score(self, values: list[float | None], now: float) -> float:
        """Score of a selected row: values are t, then base (with a base field), then confidence."""
        base = values[1] if self.base_score_field and values[1] is not None else 1.0
        confidence = values[-1] if self.confidence_source() is not None else None
        return self.score(base, cast(float, values[0]), confidence, now)  # every selected row has its time

    # The asyncio API (docs/asyncio.md): each runs its sync twin over redis.asyncio.
    atouch = async_variant(touch)
    ascore_of = async_variant(score_of)
    aranked = async_variant(ranked)


def top_by_decay(
    query: Query, n: int = 10, as_of: datetime | float | None = None, field: str | None = None
) -> HitList[Any]:
    """The ``n`` records of the query's partition with the highest decayed score at ``as_of``.

    Best first, ties by record id ascending, as a :class:`~redmem.model._hits.HitList` (signal
    ``decay``); each record also carries its score as ``_decay_score``.
    Two round trips: one Lua call selects, one pipeline loads the records.
    """
    decay = pick_field(query.model, DecayingSortedField, field, "top_by_decay")
    space = partition_of(query, "top_by_decay")
    n = integer("top_by_decay: n", n, error=QueryArgumentError)
    if n <= 0:
        return HitList()
    return hydrate(query, space, decay.ranked(space, epoch_seconds(as_of), n), "decay")
