"""composite_score: rank a partition's records by a weighted sum of signals, each mapped into [0, 1].

``Model.query.filter(<partition>).composite_score(indexes={name: weight}, limit=10)`` scores
every record of the partition as ``sum(weight_i * signal_i)`` where each signal is one of the
model's indexes mapped into [0, 1] by a monotone map:

- ``DecayingSortedField``: ``s / (1 + s)`` of the decayed score s >= 0 (power or exponential
  curve, confidence modulation included). s is unbounded (``base * 0.01 ** -rate`` for a fresh
  record, any base >= 0), so the map is a saturation, not a rescale: parameter-free, the same
  for every partition (a record's signal never moves because another record arrived), robust
  to one outlier base, close to s for small s and 0.5 at the reference score 1 (base 1, one day
  old). 0 for a record without a decay entry.
- ``CyclicDecayField``: the logistic ``1 / (1 + exp(-s))`` of the cyclic score s, which may be
  negative (troughs of the cycles) or above 1: 0.5 at s = 0, 0.73 at 1, 0.27 at -1. 0 for a
  record without an entry.
- ``ConfidenceField``: the confidence itself (already in [0, 1]; ``initial_confidence`` for a
  record without evidence).
- ``SortedField``: min-max over the partition's index, ``(v - min) / (max - min)`` with min and
  max read from the sorted set (``ZRANGE 0 0`` / ``-1 -1``) in the same script; 1 when every
  value is equal, 0 for a record without a value.
- ``"priority"`` (models with ``WriteFilterMixin``): the record's filter score in the priority
  index clamped to [0, 1]; 0 for a record that is not a priority record. A field named
  ``priority`` takes the name first.

An access count (``AccessTrackerMixin``) is no signal: it lives in each record's hash, with no
sorted set to walk, so ranking by it would read the whole partition.

Every map is non-decreasing in each per-record value it reads (base, last-updated time,
confidence, learned amplitudes in the direction of their cycle's current weight, last-resolved
time, sorted value, priority), so the composite is a monotone aggregate of sorted lists and
Fagin's threshold algorithm (Fagin, Lotem and Naor, "Optimal aggregation algorithms for
middleware", 2003) finds the exact top k while reading only the heads of the lists
(``composite_select.lua``, one call; the next list read is the one whose latest read lowered
the threshold most per member, as in Güntzer, Balke and Kießling's Quick-Combine, 2000).
Ties go by record id inside the script: when the k-th best ties the threshold (say every
record saved in the same minute with the same importance), it also walks the record ids in
ascending order and stops once past the k-th best's id, so equal scores cost k reads, not the
partition. The script computes each map with the same operations as the Python here, and
returns the k best plus the near ties just below the k-th; Python ranks them by the formulas
here.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from ..model._dbkey import DbKey
from ..model._field import Field
from ..model._filters import Where, compile_where
from ..model._hits import Hit, HitList, hit_list
from ..model._indexed import SortedField
from ..model._loading import load_records
from ..model._model_class import ModelClass
from ..model._persistence import ALL_RECORDS
from ..model._query import Query
from ..model.query_methods import every_model_query
from ..store._errors import QueryArgumentError, QueryException
from ..store._keys import KeyKind, KeySpace
from ..store._scripts import ScriptCall
from ..store._validation import finite_number, non_negative_int
from ._confidence import ConfidenceField
from ._cyclic import CyclicDecayField, cycle_weight
from ._decay import MODULATION_STRENGTH, DecayingSortedField
from ._scoring import SELECTION_EPS, best_first, epoch_seconds
from ._search import partition_of
from .search_protocol import run_search

__all__ = ["composite_score", "composite_search", "CompositeSearch", "Ranked", "composite", "saturate", "logistic",
           "min_max", "clamp01", "signal_names", "signal_weights", "PRIORITY_SIGNAL"]

#: The name of the write filter's priority signal in ``indexes``.
PRIORITY_SIGNAL = "priority"


# -- the maps into [0, 1] ----------------------------------------------------------------------
def saturate(score: float) -> float:
    """``s / (1 + s)`` for a score s >= 0 (1 for +inf): the decay signal."""
    return 1.0 if score == math.inf else score / (1.0 + score)


def logistic(score: float) -> float:
    """``1 / (1 + exp(-s))``, computed without overflow: the cyclic signal."""
    if score >= 0:
        return 1.0 / (1.0 + math.exp(-score))
    e = math.exp(score)
    return e / (1.0 + e)


def min_max(value: float, low: float, high: float) -> float:
    """``(value - low) / (high - low)``, 1 when ``high == low``: the sorted-field signal."""
    return 1.0 if high == low else (value - low) / (high - low)


def clamp01(value: float) -> float:
    """``min(max(value, 0), 1)``: the priority signal."""
    return min(max(value, 0.0), 1.0)


def composite(weights: Mapping[str, float], signals: Mapping[str, float]) -> float:
    """``sum(weights[name] * signals[name])`` over the weighted names, added left to right.

    A plain loop, not ``sum()`` (compensated from Python 3.12): the script adds the same way,
    so both sides get the same float.
    """
    total = 0.0
    for name, weight in weights.items():
        total += weight * signals[name]
    return total


# -- signals -------------------------------------------------------------------------------------
Row = Mapping[str, float | None]


@dataclass(frozen=True)
class Column:
    """A per-record sorted set the selection reads (member = record id).

    ``default`` is the value of a record without an entry (None: the signal is absent, mapped
    to 0); ``walk`` is ``(descending, complete)`` when the threshold algorithm walks the set
    (complete: every record with the signal has an entry), None when it is only read.
    """

    key: str
    default: float | None
    walk: tuple[bool, bool] | None = None


class Signal:
    """One named, weighted input of the composite: its columns, its Lua spec, its Python value.

    ``field`` is the model field it reads (None for the write filter's priority).
    """

    kind = ""

    def __init__(self, field: Any, name: str, weight: float, space: KeySpace, now: float) -> None:
        self.field, self.name, self.weight, self.space, self.now = field, name, weight, space, now

    def columns(self) -> list[Column]:
        raise NotImplementedError

    def spec(self, slot: Callable[[str], int]) -> dict[str, Any]:
        """The signal's entry in the Lua plan, keys named by their KEYS index."""
        raise NotImplementedError

    def value(self, row: Row, ranges: Mapping[str, tuple[float, float]]) -> float:
        """The mapped value in [0, 1] of a record whose column values are ``row``."""
        raise NotImplementedError


class DecaySignal(Signal):
    """``saturate`` of a DecayingSortedField's score (power or exponential curve)."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.keys, self.source = self.field.keys_in(self.space), self.field.confidence_source()
        self.kind = "power" if self.field.half_life is None else "exponential"

    def columns(self) -> list[Column]:
        exponential = self.field.half_life is not None
        walk = None if exponential else (True, True)
        columns = [Column(self.keys.updated, None, walk)]
        if exponential:
            columns.append(Column(self.keys.order, None, (True, True)))
        if self.field.base_score_field:
            columns.append(Column(self.keys.base, 1.0, walk))
        if self.source is not None:
            columns.append(Column(self.source.index_key(self.space), self.source.initial_confidence, (True, False)))
        return columns

    def spec(self, slot: Callable[[str], int]) -> dict[str, Any]:
        if self.field.half_life is not None:
            return {"x": slot(self.keys.order), "k": self.now / self.field.half_life}
        source = self.source
        return {"t": slot(self.keys.updated), "base": slot(self.keys.base) if self.field.base_score_field else 0,
                "confidence": slot(source.index_key(self.space)) if source else 0, "rate": self.field.decay_rate,
                "center": source.initial_confidence if source else 0.5, "spread": 2 * MODULATION_STRENGTH}

    def value(self, row: Row, ranges: Mapping[str, tuple[float, float]]) -> float:
        last_updated = row[self.keys.updated]
        if last_updated is None:
            return 0.0
        if self.field.half_life is not None:  # from the order key, as the script: 2 ** (x - now / half_life)
            order = row[self.keys.order]
            return 0.0 if order is None else saturate(2 ** (order - self.now / self.field.half_life))
        base = row.get(self.keys.base) if self.field.base_score_field else None
        confidence = row[self.source.index_key(self.space)] if self.source is not None else None
        return saturate(self.field.score(1.0 if base is None else base, last_updated, confidence, self.now))


class CyclicSignal(Signal):
    """``logistic`` of a CyclicDecayField's score."""

    kind = "cyclic"

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.keys = self.field._index_keys(self.space)
        self.weights = [cycle_weight(self.now, c.period, c.phase) for c in self.field.cycles]

    def columns(self) -> list[Column]:
        walks = {slot: (desc, complete) for slot, desc, complete in self.field._lists(self.weights)}
        defaults = [None, 1.0, self.now, *(c.amplitude for c in self.field.cycles)]
        return [Column(key, default, walks.get(i + 1)) for i, (key, default) in enumerate(zip(self.keys, defaults))]

    def spec(self, slot: Callable[[str], int]) -> dict[str, Any]:
        t, base, resolved, *amplitudes = map(slot, self.keys)
        return {"t": t, "base": base if self.field.base_score_field else 0, "rate": self.field.decay_rate,
                "resolved": resolved if self.field.pressure_rate > 0 else 0, "pressure": self.field.pressure_rate,
                "linear": [[a, w] for a, w in zip(amplitudes, self.weights)]}

    def value(self, row: Row, ranges: Mapping[str, tuple[float, float]]) -> float:
        values = [row[key] for key in self.keys]
        return 0.0 if values[0] is None else logistic(self.field._stored_score(values, self.now))


class OneSetSignal(Signal):
    """A signal read from one sorted set (``key``) walked from its top; ``default`` without an entry."""

    default: float | None = None
    key = ""

    def columns(self) -> list[Column]:
        return [Column(self.key, self.default, (True, self.default is None))]

    def spec(self, slot: Callable[[str], int]) -> dict[str, Any]:
        return {"slot": slot(self.key)}


class ConfidenceSignal(OneSetSignal):
    """A ConfidenceField's confidence as it is (``initial_confidence`` without evidence)."""

    kind = "confidence"

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.key, self.default = self.field.index_key(self.space), self.field.initial_confidence

    def value(self, row: Row, ranges: Mapping[str, tuple[float, float]]) -> float:
        confidence = row[self.key]
        return cast(float, self.default) if confidence is None else confidence


class SortedSignal(OneSetSignal):
    """A SortedField's value, min-max scaled over the partition's index; 0 without a value."""

    kind = "sorted"

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.key = self.space.key(KeyKind.SORTED, self.field.name)

    def value(self, row: Row, ranges: Mapping[str, tuple[float, float]]) -> float:
        value = row[self.key]
        return 0.0 if value is None else min_max(value, *ranges[self.key])


class PrioritySignal(OneSetSignal):
    """The write filter's priority score, clamped to [0, 1]; 0 for records that are not priority."""

    kind = "priority"

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.key = self.space.key(KeyKind.PRIORITY)

    def value(self, row: Row, ranges: Mapping[str, tuple[float, float]]) -> float:
        value = row[self.key]
        return 0.0 if value is None else clamp01(value)


_FIELD_SIGNALS: list[tuple[type[Field[Any]], type[Signal]]] = [
    (DecayingSortedField, DecaySignal),
    (CyclicDecayField, CyclicSignal),
    (ConfidenceField, ConfidenceSignal),
    (SortedField, SortedSignal),
]


def _has_write_filter(model: ModelClass) -> bool:
    """Whether the model has WriteFilterMixin (recognised by its hook, so fields need not import it)."""
    return callable(getattr(model, "compute_filter_score", None))


def signal_names(model: ModelClass) -> list[str]:
    """The names ``composite_score`` accepts for ``model``, in declaration order."""
    fields = model._meta.fields
    names = [n for n, f in fields.items() if any(isinstance(f, kind) for kind, _ in _FIELD_SIGNALS)]
    if _has_write_filter(model) and PRIORITY_SIGNAL not in fields:
        names.append(PRIORITY_SIGNAL)
    return names


def _signal(model: ModelClass, name: str, weight: float, space: KeySpace, now: float) -> Signal:
    field = model._meta.fields.get(name)
    for kind, signal in _FIELD_SIGNALS:
        if isinstance(field, kind):
            return signal(field, name, weight, space, now)
    return PrioritySignal(None, name, weight, space, now)


# -- checking the call ---------------------------------------------------------------------------
def signal_weights(model: ModelClass, indexes: Any, what: str = "composite_score: indexes") -> dict[str, float]:
    """``indexes`` as {signal name: weight}; QueryException for unknown names, ValidationError for
    weights. ``what`` names the argument in the errors."""
    if not isinstance(indexes, Mapping) or not indexes:
        raise QueryException(f"{what} must be a non-empty dict of signal name -> weight, not {indexes!r}")
    valid = signal_names(model)
    weights: dict[str, float] = {}
    for named, weight in indexes.items():
        name = named.name if isinstance(named, Field) and model._meta.fields.get(named.name) is named else named
        if name not in valid:
            raise QueryException(f"{what}: {model.__name__} has no signal {named!r}; "
                                 f"valid: {', '.join(valid) or 'none'}")
        if name in weights:
            raise QueryException(f"{what}: signal {name!r} is named twice")
        weights[name] = finite_number(f"{what}: weight of {name!r}", weight, low=0)
    return weights


def _limit(limit: Any) -> int:
    return non_negative_int("composite_score: limit", limit, error=QueryArgumentError)


# -- selection -----------------------------------------------------------------------------------
@dataclass
class Plan:
    """The Lua call: KEYS (the partition's ids first, then every column once) and its JSON plan."""

    keys: list[str]
    plan: dict[str, Any]
    ranges: list[str]


def build_plan(signals: list[Signal], space: KeySpace, now: float, n: int, min_score: float | None) -> Plan:
    """KEYS and plan of ``composite_select.lua``; a column shared by signals is read once."""
    keys = [space.key(ALL_RECORDS)]
    defaults: list[bool | float] = [False]
    walks: dict[int, tuple[bool, bool]] = {}

    def slot(key: str) -> int:
        return keys.index(key) + 1

    for signal in signals:
        for column in signal.columns():
            if column.key not in keys:
                keys.append(column.key)
                defaults.append(False if column.default is None else column.default)
            if column.walk is not None and signal.weight > 0:
                walks.setdefault(slot(column.key), column.walk)
    ranges = [s.key for s in signals if isinstance(s, SortedSignal)]
    plan = {
        "now": now, "n": n, "eps": SELECTION_EPS, "defaults": defaults,
        "lists": [[k, desc, complete] for k, (desc, complete) in walks.items()],
        "ranges": [slot(key) for key in ranges],
        "signals": [{"kind": s.kind, "w": s.weight, **s.spec(slot)} for s in signals],
    }
    if min_score is not None:
        plan["threshold"] = min_score
    return Plan(keys, plan, ranges)


def _number(raw: bytes) -> float | None:
    return float(raw) if raw else None


def parse_reply(plan: Plan, reply: list[Any]) -> tuple[dict[str, tuple[float, float]], list[tuple[str, dict[str, Any]]]]:
    """The sorted fields' (min, max) and the candidate rows of a ``composite_select.lua`` reply."""
    ranges: dict[str, tuple[float, float]] = {}
    for i, key in enumerate(plan.ranges):
        low, high = _number(reply[2 * i]), _number(reply[2 * i + 1])
        ranges[key] = (0.0, 0.0) if low is None else (low, cast(float, high))  # a set with a min has a max
    columns, width = plan.keys[1:], len(plan.keys)
    rows: list[tuple[str, dict[str, Any]]] = []
    for i in range(2 * len(plan.ranges), len(reply), width):
        values = [_number(raw) for raw in reply[i + 1 : i + width]]
        rows.append((reply[i].decode(), dict(zip(columns, values))))
    return ranges, rows


@dataclass
class Ranked:
    """One record of a composite ranking: its id, its composite and its mapped signals."""

    record_id: str
    score: float
    signals: dict[str, float]


@dataclass
class CompositeSearch:
    """A checked composite_score search, built before it runs so it can share a round trip.

    Its one call is ``composite_select.lua``; its answer is the top ``n`` (records not loaded),
    best first, ties by record id ascending, none below ``floor``; with ``where``, the top ``n``
    of the records that pass it (checked in the script as each is first seen; a sorted signal
    still maps by the min and max of the whole partition, so a score does not depend on the filter).
    """

    space: KeySpace
    signals: list[Signal]
    weights: dict[str, float]
    plan: Plan
    n: int
    floor: float | None
    where: Where | None = None

    def calls(self) -> list[ScriptCall]:
        keys, plan = list(self.plan.keys), self.plan.plan
        if self.where is not None:
            plan = {**plan, "width": len(keys), "filter": self.where.plan(self.space, keys)}
        return [ScriptCall("composite_select", keys, [json.dumps(plan)])]

    def finish(self, replies: list[Any]) -> list[Ranked]:
        ranges, rows = parse_reply(self.plan, replies[0])
        mapped = {rid: {s.name: s.value(row, ranges) for s in self.signals} for rid, row in rows}
        scored = [(rid, composite(self.weights, values)) for rid, values in mapped.items()]
        ranked = best_first([p for p in scored if self.floor is None or p[1] >= self.floor], self.n)
        return [Ranked(rid, score, mapped[rid]) for rid, score in ranked]


def composite_search(
    query: Query, indexes: Mapping[Any, float], limit: int = 10, min_score: float | None = None,
    as_of: datetime | float | None = None, where: Where | None = None,
) -> CompositeSearch | None:
    """The checked search behind :func:`composite_score` (None for ``limit`` 0: nothing to run);
    ``where`` keeps the records that pass it."""
    model = query.model
    space = partition_of(query, "composite_score")
    weights, n = signal_weights(model, indexes), _limit(limit)
    floor = finite_number("min_score", min_score, none=True)
    now = epoch_seconds(as_of)
    if n == 0:
        return None
    signals = [_signal(model, name, weight, space, now) for name, weight in weights.items()]
    return CompositeSearch(space, signals, weights, build_plan(signals, space, now, n, floor), n, floor, where)


@every_model_query  # any model: a plain SortedField is a signal
def composite_score(
    query: Query,
    indexes: Mapping[Any, float],
    limit: int = 10,
    min_score: float | None = None,
    as_of: datetime | float | None = None,
    where: Mapping[str, Any] | None = None,
) -> HitList[Any]:
    """The ``limit`` records of the query's partition with the highest composite score at ``as_of``.

    ``indexes`` maps signal names (see :func:`signal_names`; a field object works too) to
    weights, finite numbers >= 0. Score = ``sum(weight * signal)``, each signal mapped into
    [0, 1] (module docstring). Records scoring below ``min_score`` are left out. Best first,
    ties by record id ascending, as a :class:`~redmem.model._hits.HitList` whose hits' signals
    are the mapped signals ({name: value}); each record also carries ``_composite_score`` and
    ``_signals``. Two round trips: one Lua call selects, one pipeline loads.

    ``where`` (the conditions of :meth:`Query.filter <redmem.model._query.Query.filter>`, see
    :mod:`~redmem.model._filters`) keeps the top ``limit`` of the records that match.

    Raises QueryException for an unknown signal name, a missing partition, a bad limit or a bad
    filter, ValidationError for a bad weight or min_score.
    """
    search = composite_search(query, indexes, limit, min_score, as_of, compile_where(query.model, where))
    if search is None:
        return HitList()
    ranked = run_search(query.model._meta.client, search)
    records = load_records(query.model, [DbKey(search.space, r.record_id) for r in ranked], track=query.tracking)
    by_id = {r.record_id: r for r in ranked}
    hits = []
    for record in records:
        scored = by_id[record._saved_key.record_id]
        record._signals = scored.signals
        hits.append(Hit(record, scored.score, scored.signals))
    return hit_list(hits, "_composite_score")
