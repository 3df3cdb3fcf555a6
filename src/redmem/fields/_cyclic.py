"""CyclicDecayField: a decaying score plus recurring (daily, weekly...) peaks and growing pressure.

With ``d = max((now - t) / 86400, 0.01)`` days since the record was created or touched::

    score = base * d ** -decay_rate
          + sum(amplitude_i * cos(2 * pi * (now - phase_i) / period_i))
          + pressure_rate * max((now - last_resolved) / 86400, 0)

as in popoto's CyclicDecayField. A
cycle peaks at ``phase`` (epoch seconds) and every ``period`` seconds after. Each record learns
its own amplitude per cycle: it starts at the declared amplitude and is scaled by
:meth:`CyclicDecayField.strengthen_cycle` / :meth:`CyclicDecayField.weaken_cycle`, keeping the
declared sign and a magnitude in ``[0, MAX_AMPLITUDE_RATIO * |declared|]``.

At a given time every cosine is one number shared by all records, so the score is a monotone
function of each per-record value (base, t, learned amplitudes, last_resolved) and the
threshold search is Fagin's threshold algorithm over their sorted sets (``decay_select.lua``).
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import IntEnum
from typing import Any, cast

from ..model._codecs import finite_float
from ..model._field import Field
from ..model._filters import Where
from ..model._hits import HitList
from ..model._query import Query
from ..model.query_methods import QueryMethod
from ..store._aio import async_variant
from ..store._connection import server_errors
from ..store._errors import ModelException, QueryArgumentError, ValidationError
from ..store._keys import KeyKind, KeySpace, escape
from ..store._scripts import ScriptCall
from ..store._validation import finite_number, non_negative_int
from ._decay import SECONDS_PER_DAY, power_decay
from ._scoring import (
    base_score,
    best_first,
    check_base_field,
    declared_float,
    epoch_seconds,
    non_negative,
    run_or_queue,
    select_call,
    select_rows,
    stamp,
    stored_key,
)
from ._search import hydrate, partition_of, pick_field
from .search_protocol import run_search

__all__ = [
    "CyclicDecayField",
    "CyclicSearch",
    "TemporalPeriod",
    "Cycle",
    "above_cyclic_threshold",
    "cycle_weight",
    "pressure",
    "cyclic_score",
    "scale_amplitude",
    "MAX_AMPLITUDE_RATIO",
]

#: A learned amplitude never exceeds this multiple of the declared one (and never changes sign).
MAX_AMPLITUDE_RATIO = 2.0


class TemporalPeriod(IntEnum):
    """Common cycle periods, in seconds."""

    DAILY = 86400
    WEEKLY = 604800
    MONTHLY = 2592000
    QUARTERLY = 7776000
    YEARLY = 31536000


# -- formulas ----------------------------------------------------------------------------------
def cycle_weight(now: float, period: float, phase: float) -> float:
    """``cos(2 * pi * (now - phase) / period)``: 1 at the peaks, -1 half a period later."""
    return math.cos(2 * math.pi * (now - phase) / period)


def pressure(now: float, last_resolved: float, pressure_rate: float) -> float:
    """``pressure_rate * max((now - last_resolved) / 86400, 0)``: grows by the rate per day."""
    return pressure_rate * max((now - last_resolved) / SECONDS_PER_DAY, 0.0)


def cyclic_score(
    decay: float, amplitudes: Sequence[float], weights: Sequence[float], pressure_term: float
) -> float:
    """``decay + sum(amplitude_i * weight_i) + pressure_term`` (weights from :func:`cycle_weight`)."""
    return decay + sum(a * w for a, w in zip(amplitudes, weights)) + pressure_term


def scale_amplitude(learned: float, declared: float, factor: float) -> float:
    """``|learned| * factor`` clamped to ``[0, MAX_AMPLITUDE_RATIO * |declared|]``, signed as ``declared``."""
    magnitude = min(abs(learned) * factor, MAX_AMPLITUDE_RATIO * abs(declared))
    return -magnitude if declared < 0 else magnitude


@dataclass(frozen=True)
class Cycle:
    """A declared cycle: peaks every ``period`` seconds at ``phase`` (epoch s) with ``amplitude``."""

    period: float
    amplitude: float
    phase: float = 0.0

    @classmethod
    def parse(cls, spec: Any) -> Cycle:
        """A cycle from ``(period, amplitude[, phase])``; ModelException when malformed."""
        if isinstance(spec, Cycle):
            return spec
        if not isinstance(spec, (tuple, list)) or len(spec) not in (2, 3):
            raise ModelException(f"a cycle is (period_s, amplitude[, phase]), not {spec!r}")
        period, amplitude = non_negative(spec[0], "cycle period"), declared_float(spec[1], "cycle amplitude")
        phase = declared_float(spec[2], "cycle phase") if len(spec) == 3 else 0.0
        if period == 0:
            raise ModelException("a cycle period must be > 0")
        return cls(period, amplitude, phase)

    @property
    def key(self) -> str:
        """The cycle's name in keys and in the record hash: ``<period>@<phase>``."""
        return f"{self.period!r}@{self.phase!r}"


# -- the field -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class CyclicKeys:
    """The sorted sets of one partition (member = record id)."""

    space: KeySpace
    name: str

    def part(self, *parts: str) -> str:
        return self.space.key(KeyKind.CYCLIC, self.name, *parts)

    @property
    def updated(self) -> str:
        return self.part("t")

    @property
    def base(self) -> str:
        return self.part("b")

    @property
    def resolved(self) -> str:
        return self.part("r")

    def amplitude(self, cycle_key: str) -> str:
        return self.part("a", escape(cycle_key))


class CyclicDecayField(Field[dict[str, Any]]):
    """A decaying score with learned cyclic peaks and unresolved pressure (see the module doc).

    The record hash holds ``{cycle key: declared amplitude}`` as saved, so a re-save keeps the
    learned amplitudes of unchanged cycles and resets those whose declared amplitude changed.
    Everything else lives in per-partition sorted sets of kind ``y``. On a record the field
    reads as its cyclic score now (:meth:`value_of`), not as that bookkeeping.
    """

    python_type = dict
    shown = False
    held_on_record = False

    def __init__(
        self,
        decay_rate: float = 0.1,
        base_score_field: str | None = None,
        cycles: Iterable[Any] = (),
        pressure_rate: float = 0.0,
        *,
        partition_by: str | tuple[str, ...] | None = None,
    ) -> None:
        super().__init__(dict, partition_by=partition_by)
        self.decay_rate = non_negative(decay_rate, "decay_rate")
        self.pressure_rate = non_negative(pressure_rate, "pressure_rate")
        self.base_score_field = base_score_field
        self.cycles = tuple(Cycle.parse(spec) for spec in cycles)
        names = [cycle.key for cycle in self.cycles]
        if len(set(names)) != len(names):
            raise ModelException(f"two cycles share a period and phase: {names}")

    @classmethod
    def query_methods(cls) -> Mapping[str, QueryMethod]:
        """``query.above_cyclic_threshold(threshold)``: the records whose cyclic score reaches a threshold."""
        return {"above_cyclic_threshold": above_cyclic_threshold}

    def bind(self, model: Any, name: str) -> None:
        super().bind(model, name)
        check_base_field(model, self.base_score_field, self.label)

    def keys_in(self, space: KeySpace) -> CyclicKeys:
        return CyclicKeys(space, self.name)

    def declared(self) -> dict[str, float]:
        return {cycle.key: cycle.amplitude for cycle in self.cycles}

    def score(self, base: float, last_updated: float, last_resolved: float | None,
              amplitudes: Sequence[float], now: float) -> float:
        """The score from stored values (``last_resolved`` None: no pressure)."""
        weights = [cycle_weight(now, c.period, c.phase) for c in self.cycles]
        pushed = 0.0 if last_resolved is None else pressure(now, last_resolved, self.pressure_rate)
        decay = power_decay(base, last_updated, now, self.decay_rate)
        return cyclic_score(decay, amplitudes, weights, pushed)

    # -- saves ---------------------------------------------------------------------------------
    def record_value(self, instance: Any) -> dict[str, float]:
        """The hash entry of every save: the declared amplitudes."""
        return self.declared()

    def value_of(self, instance: Any) -> float | None:
        """``record.rhythm``: the cyclic score now, read at each access (one round trip, as
        :meth:`score_of`); None before the record's first save."""
        return None if instance._saved_key is None else self.score_of(instance)

    def before_save(self, instance: Any, creating: bool) -> None:
        base_score(instance, self.base_score_field, self.label)

    def on_save(self, batch: Any, old: dict[str, Any] | None) -> None:
        """Stamp t and last_resolved on the first save; reset the amplitudes of changed cycles."""
        keys, record_id, pipe, now = self.keys_in(batch.keyspace), batch.record_id, batch.pipe, time.time()
        pipe.zadd(keys.updated, {record_id: now}, nx=True)
        pipe.zadd(keys.resolved, {record_id: now}, nx=True)
        if self.base_score_field:
            pipe.zadd(keys.base, {record_id: base_score(batch.instance, self.base_score_field, self.label)})
        before = (old or {}).get(self.name) or {}
        for cycle in self.cycles:
            unchanged = before.get(cycle.key) == cycle.amplitude
            pipe.zadd(keys.amplitude(cycle.key), {record_id: cycle.amplitude}, nx=unchanged)
        for stale in set(before) - set(self.declared()):
            pipe.zrem(keys.amplitude(stale), record_id)

    def queue_amplitudes(self, batch: Any, amplitudes: dict[str, float]) -> None:
        """Queue learned amplitudes of the record of ``batch`` in its save (``{cycle key: amplitude}``)."""
        keys = self.keys_in(batch.keyspace)
        for cycle_key, amplitude in amplitudes.items():
            batch.pipe.zadd(keys.amplitude(cycle_key), {batch.record_id: amplitude})

    def on_delete(self, batch: Any, old: dict[str, Any]) -> None:
        keys, record_id = self.keys_in(batch.keyspace), batch.record_id
        cycle_keys = set(old.get(self.name) or {}) | set(self.declared())
        for key in [keys.updated, keys.resolved, keys.base, *map(keys.amplitude, sorted(cycle_keys))]:
            batch.pipe.zrem(key, record_id)

    # -- instance operations -------------------------------------------------------------------
    def touch(self, instance: Any, pipeline: Any = None, now: datetime | float | None = None) -> bool | None:
        """Set the record's last-updated time (the decay term restarts); None when queued."""
        key = stored_key(instance)
        updated = self.keys_in(key.keyspace).updated
        return stamp(key, [updated], epoch_seconds(now, "now"), pipeline, self.model._meta.client)

    def resolve_pressure(self, instance: Any, pipeline: Any = None, now: datetime | float | None = None) -> bool | None:
        """Set last_resolved to ``now``: the pressure term restarts from 0; None when queued."""
        key = stored_key(instance)
        resolved = self.keys_in(key.keyspace).resolved
        return stamp(key, [resolved], epoch_seconds(now, "now"), pipeline, self.model._meta.client)

    def strengthen_cycle(self, instance: Any, factor: float = 1.2, pipeline: Any = None) -> dict[str, float] | None:
        """Multiply every learned amplitude by ``factor`` >= 1, atomically, up to 2 x the declared one.

        Returns the new amplitudes by cycle key ({} if the record does not exist), None when queued.
        """
        if not finite_float(factor, "factor") >= 1:
            raise ValidationError(f"strengthen_cycle needs a factor >= 1, got {factor!r}")
        return self._scale(instance, factor, pipeline)

    def weaken_cycle(self, instance: Any, factor: float = 0.8, pipeline: Any = None) -> dict[str, float] | None:
        """Multiply every learned amplitude by ``factor`` in (0, 1], atomically.

        Returns the new amplitudes by cycle key ({} if the record does not exist), None when queued.
        """
        if not 0 < finite_float(factor, "factor") <= 1:
            raise ValidationError(f"weaken_cycle needs a factor in (0, 1], got {factor!r}")
        return self._scale(instance, factor, pipeline)

    def _scale(self, instance: Any, factor: float, pipeline: Any) -> dict[str, float] | None:
        key = stored_key(instance)
        keys = self.keys_in(key.keyspace)
        script_keys = [key.redis_key, *(keys.amplitude(c.key) for c in self.cycles)]
        declared = [repr(c.amplitude) for c in self.cycles]
        args = [key.record_id, repr(float(factor)), repr(MAX_AMPLITUDE_RATIO), *declared]
        reply = run_or_queue("cyclic_adjust", script_keys, args, pipeline, self.model._meta.client)
        if pipeline is not None:
            return None
        return {c.key: float(raw) for c, raw in zip(self.cycles, reply)}

    def amplitudes_of(self, instance: Any) -> dict[str, float]:
        """The record's learned amplitude of each declared cycle, by cycle key."""
        key = stored_key(instance)
        keys, client = self.keys_in(key.keyspace), self.model._meta.client
        with server_errors(client), client.pipeline(transaction=False) as pipe:
            for cycle in self.cycles:
                pipe.zscore(keys.amplitude(cycle.key), key.record_id)
            stored = pipe.execute()
        return {c.key: c.amplitude if a is None else a for c, a in zip(self.cycles, stored)}

    def score_of(self, instance: Any, as_of: datetime | float | None = None) -> float | None:
        """The record's cyclic score at ``as_of`` (default now); None if it has no entry."""
        key = stored_key(instance)
        client = self.model._meta.client
        with server_errors(client), client.pipeline(transaction=False) as pipe:
            for zset in self._index_keys(key.keyspace):
                pipe.zscore(zset, key.record_id)
            values = pipe.execute()
        return None if values[0] is None else self._stored_score(values, epoch_seconds(as_of))

    def _index_keys(self, space: KeySpace) -> list[str]:
        """t, base, last_resolved, then each declared cycle's learned amplitude."""
        keys = self.keys_in(space)
        return [keys.updated, keys.base, keys.resolved, *(keys.amplitude(c.key) for c in self.cycles)]

    def _stored_score(self, values: list[float | None], now: float) -> float:
        """The score from the values of :meth:`_index_keys` (defaults for the missing ones)."""
        last_updated, base, resolved, *learned = values
        amplitudes = [c.amplitude if a is None else a for c, a in zip(self.cycles, learned)]
        return self.score(1.0 if base is None else base, cast(float, last_updated), resolved, amplitudes, now)

    # -- search --------------------------------------------------------------------------------
    def ranked(self, space: KeySpace, now: float, threshold: float, limit: int | None) -> list[tuple[str, float]]:
        """(record id, score) of the partition's records scoring >= ``threshold``, best first."""
        return run_search(self.model._meta.client, self.searcher(space, now, threshold, limit))

    def searcher(
        self, space: KeySpace, now: float, threshold: float, limit: int | None, where: Where | None = None,
    ) -> CyclicSearch:
        """The search behind :meth:`ranked`, to share a round trip with other searches; ``where``
        keeps the records that pass it (checked in the script as each is first seen)."""
        return CyclicSearch(self, space, now, threshold, limit, where)

    def _lists(self, weights: list[float]) -> list[list[Any]]:
        """Sorted lists to walk: t and base (complete), each weighted cycle and last_resolved (with defaults)."""
        lists: list[list[Any]] = [[1, True, True]]
        if self.base_score_field:
            lists.append([2, True, True])
        if self.pressure_rate > 0:
            lists.append([3, False, False])
        lists.extend([4 + i, w > 0, False] for i, w in enumerate(weights) if w != 0)
        return lists

    # The asyncio API (docs/asyncio.md): each runs its sync twin over redis.asyncio.
    atouch = async_variant(touch)
    aresolve_pressure = async_variant(resolve_pressure)
    astrengthen_cycle = async_variant(strengthen_cycle)
    aweaken_cycle = async_variant(weaken_cycle)
    aamplitudes_of = async_variant(amplitudes_of)
    ascore_of = async_variant(score_of)
    aranked = async_variant(ranked)


class CyclicSearch:
    """The search of :meth:`CyclicDecayField.ranked`: one ``decay_select.lua`` call (Fagin's
    threshold algorithm over the field's sorted sets), its rows scored here and cut at the threshold."""

    def __init__(self, field: CyclicDecayField, space: KeySpace, now: float, threshold: float,
                 limit: int | None, where: Where | None = None) -> None:
        self.field, self.now, self.threshold, self.limit = field, now, threshold, limit
        self.space, self.where = space, where
        self.keys = field._index_keys(space)

    def calls(self) -> list[ScriptCall]:
        field, now = self.field, self.now
        weights = [cycle_weight(now, c.period, c.phase) for c in field.cycles]
        plan: dict[str, Any] = {
            "now": now, "rate": field.decay_rate, "n": -1 if self.limit is None else self.limit,
            "threshold": self.threshold, "base": 2 if field.base_score_field else 0, "confidence": 0,
            "linear": [[4 + i, w] for i, w in enumerate(weights)],
            "lists": field._lists(weights), "defaults": [False, 1.0, now, *(c.amplitude for c in field.cycles)],
        }
        if field.pressure_rate > 0:
            plan["pressure"] = [3, field.pressure_rate]
        keys = list(self.keys)
        if self.where is not None:
            plan.update(width=len(keys), filter=self.where.plan(self.space, keys))
        return [select_call(keys, plan)]

    def finish(self, replies: list[Any]) -> list[tuple[str, float]]:
        rows = select_rows(replies[0], self.keys)
        scored = [(record_id, self.field._stored_score(values, self.now)) for record_id, values in rows]
        return best_first([pair for pair in scored if pair[1] >= self.threshold], self.limit)


def above_cyclic_threshold(
    query: Query,
    threshold: float,
    as_of: datetime | float | None = None,
    limit: int | None = None,
    field: str | None = None,
) -> HitList[Any]:
    """Records of the query's partition whose cyclic score at ``as_of`` is >= ``threshold``.

    Best first, ties by record id ascending, at most ``limit``, as a
    :class:`~redmem.model._hits.HitList` (signal ``cyclic``); each record also carries its score
    as ``_cyclic_score``. Two round trips: one Lua call selects, one pipeline loads the records.
    """
    cyclic = pick_field(query.model, CyclicDecayField, field, "above_cyclic_threshold")
    space = partition_of(query, "above_cyclic_threshold")
    limit = non_negative_int("above_cyclic_threshold: limit", limit, none=True, error=QueryArgumentError)
    if limit == 0:
        return HitList()
    ranked = cyclic.ranked(space, epoch_seconds(as_of), finite_number("threshold", threshold), limit)
    return hydrate(query, space, ranked, "cyclic")
