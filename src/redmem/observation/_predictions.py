"""PredictionLedgerMixin: a record predicts, the outcome resolves it once, errors are summarised.

Error of a prediction (a dict) against the actual values (a dict), as in popoto's
PredictionLedgerMixin, the mean over the predicted keys of:

- 1 when the key is missing from the actual values;
- ``|p - a| / max(|p|, |a|, 1)`` when both values are numbers (bools are not numbers);
- 0 when the values are equal, else 1, for any other values.

An error above ``prediction_error_threshold`` (0.7) sends the confidence signal
``low_confidence_signal`` (0.2) to each ConfidenceField of the model. ``auto_resolve(outcome)``
resolves with the outcome's fixed error (:data:`OUTCOME_ERRORS`).

A prediction is resolved exactly once, whatever the number of concurrent resolvers: the
resolution is a compare-and-set in Lua on the prediction's state and sequence number.

Where it lives in Redis (``<base>`` = ``<prefix>:<Model>:{<partition>}``, the records' slot):

- ``<base>:pr:<record id>``: hash of the record's latest prediction (``seq``, ``state`` open /
  resolved, ``prediction``, ``predicted_at``, then ``actual``, ``error``, ``outcome``,
  ``resolved_at``); deleted with the record;
- the partition's ledger of resolutions, each named ``<record id>#<seq>``: ``<base>:pe`` (zset
  of errors), ``<base>:pt`` (zset of resolution times) and ``<base>:ph`` (hash of JSON
  details), trimmed to the newest ``prediction_history_size`` (10000). The ledger outlives
  deleted records.
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, ClassVar

from ..fields._confidence import ConfidenceField
from ..model._base import RecordMixin
from ..model._batch import SaveBatch
from ..model._dbkey import DbKey
from ..store._aio import async_variant
from ..store._connection import server_errors
from ..store._errors import RecordNotFound, ValidationError
from ..store._keys import KeyKind, KeySpace
from ..store._outcome import write_pipeline
from ..store._scripts import queue_script, run_script
from ..store._validation import is_real, timestamp
from ._events import CONFIDENCE_UPDATE, PREDICTION_RESOLVED, EventStreamMixin

__all__ = [
    "PredictionLedgerMixin",
    "ResolvedPrediction",
    "prediction_error",
    "value_error",
    "summarize_errors",
    "percentile",
    "group_errors",
    "OUTCOME_ERRORS",
]

#: Prediction error of each outcome that resolves a prediction ("deferred" resolves nothing).
OUTCOME_ERRORS = {"acted": 0.1, "used": 0.3, "dismissed": 0.5, "contradicted": 0.9}
GROUPINGS = ("hour", "weekday", "day")


# -- formulas ----------------------------------------------------------------------------------
def value_error(predicted: Any, actual: Any) -> float:
    """``|p - a| / max(|p|, |a|, 1)`` for two numbers, else 0.0 when equal and 1.0 when not
    (a bool equals only a bool: ``True`` vs ``1`` is an error of 1)."""
    if is_real(predicted) and is_real(actual):
        error: float = abs(predicted - actual) / max(abs(predicted), abs(actual), 1)
        return error
    same_kind = isinstance(predicted, bool) == isinstance(actual, bool)
    return 0.0 if same_kind and predicted == actual else 1.0


def prediction_error(predicted: dict[str, Any], actual: dict[str, Any]) -> float:
    """Mean of :func:`value_error` over the predicted keys, a key missing from ``actual`` counting 1."""
    if not predicted:
        raise ValidationError("a prediction needs at least one key")
    errors = [value_error(p, actual[k]) if k in actual else 1.0 for k, p in predicted.items()]
    return sum(errors) / len(errors)


def percentile(ordered: list[float], q: float) -> float:
    """Linear interpolation between closest ranks: ``x[i] + (h - i) * (x[i+1] - x[i])``, ``h = (n-1) q``."""
    h = (len(ordered) - 1) * q
    i = math.floor(h)
    upper = ordered[min(i + 1, len(ordered) - 1)]
    return ordered[i] + (h - i) * (upper - ordered[i])


def summarize_errors(errors: list[float]) -> dict[str, Any]:
    """``count, mean, stddev`` (population), ``p50, p90, p99, max``; None values for no errors."""
    if not errors:
        return {"count": 0, "mean": None, "stddev": None, "p50": None, "p90": None, "p99": None, "max": None}
    ordered = sorted(errors)
    return {
        "count": len(ordered),
        "mean": statistics.fmean(ordered),
        "stddev": statistics.pstdev(ordered),
        "p50": percentile(ordered, 0.5),
        "p90": percentile(ordered, 0.9),
        "p99": percentile(ordered, 0.99),
        "max": ordered[-1],
    }


@dataclass(frozen=True)
class ResolvedPrediction:
    """One entry of a partition's ledger."""

    id: str
    key: str
    error: float
    prediction: dict[str, Any]
    actual: dict[str, Any] | None
    outcome: str | None
    predicted_at: float
    resolved_at: float

    @classmethod
    def from_json(cls, raw: bytes | str) -> ResolvedPrediction:
        return cls(**json.loads(raw))


def group_key(entry: ResolvedPrediction, group_by: str | Callable[[ResolvedPrediction], Any]) -> Any:
    """The group of an entry: ``hour`` (0-23), ``weekday`` (0 = Monday), ``day`` (ISO date), all
    of its resolution time in UTC, or what a callable returns for it."""
    if callable(group_by):
        return group_by(entry)
    moment = datetime.fromtimestamp(entry.resolved_at, tz=UTC)
    if group_by == "hour":
        return moment.hour
    if group_by == "weekday":
        return moment.weekday()
    return moment.date().isoformat()


def group_errors(
    entries: list[ResolvedPrediction], group_by: str | Callable[[ResolvedPrediction], Any] | None = None
) -> dict[str, Any]:
    """:func:`summarize_errors` of all entries (``group_by`` None) or ``{group: summary}`` by group."""
    if group_by is None:
        return summarize_errors([e.error for e in entries])
    if not callable(group_by) and group_by not in GROUPINGS:
        raise ValidationError(f"group_by is None, a callable or one of {GROUPINGS}, not {group_by!r}")
    groups: dict[Any, list[float]] = {}
    for entry in entries:
        groups.setdefault(group_key(entry, group_by), []).append(entry.error)
    try:
        order = sorted(groups)
    except TypeError:  # a callable returned keys of mixed types
        order = sorted(groups, key=repr)
    return {group: summarize_errors(groups[group]) for group in order}


def _json_object(value: Any, what: str) -> str:
    if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
        raise ValidationError(f"{what} must be a dict with str keys, not {value!r}")
    try:
        return json.dumps(value, allow_nan=False, sort_keys=True)
    except (TypeError, ValueError) as exc:
        raise ValidationError(f"{what} must be JSON-serialisable: {exc}") from exc


# -- the mixin -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class LedgerKeys:
    """Keys of one partition's ledger."""

    errors: str
    times: str
    details: str

    @classmethod
    def of(cls, space: KeySpace) -> LedgerKeys:
        return cls(space.key(KeyKind.PREDICTION_ERRORS), space.key(KeyKind.PREDICTION_TIMES),
                   space.key(KeyKind.PREDICTION_DETAILS))


def prediction_key(key: DbKey) -> str:
    return key.keyspace.key(KeyKind.PREDICTION, key.record_id)


class PredictionLedgerMixin(RecordMixin):
    """Let records make predictions that outcomes resolve once; keep a ledger of the errors.

    Put it before ``Model`` in the bases: ``class Memory(PredictionLedgerMixin, Model)``.
    """

    #: Errors above this send ``low_confidence_signal`` to the model's ConfidenceFields.
    prediction_error_threshold: ClassVar[float] = 0.7
    low_confidence_signal: ClassVar[float] = 0.2
    #: Resolutions kept per partition (the oldest go first).
    prediction_history_size: ClassVar[int] = 10000

    def _stored_key(self) -> DbKey:
        return self._saved_key or self.db_key

    # -- recording -------------------------------------------------------------------------------
    def record_prediction(self, prediction: dict[str, Any], pipeline: Any = None, now: float | None = None) -> int | None:
        """Open a prediction (replacing an unresolved one); returns its sequence number, None when queued.

        Raises ValidationError for an empty or non-JSON prediction, RecordNotFound when the record
        is not stored (nothing is written).
        """
        if not prediction:
            raise ValidationError("a prediction needs at least one key")
        key = self._stored_key()
        keys = [key.redis_key, prediction_key(key)]
        args = [_json_object(prediction, "a prediction"), repr(timestamp("now", now))]
        if pipeline is not None:
            queue_script(pipeline, "prediction_record", keys, args)
            return None
        client = self._meta.client
        with server_errors(client):
            seq = int(run_script("prediction_record", keys, args, client))
        if not seq:
            raise RecordNotFound(f"{key.redis_key} is not stored: it cannot record a prediction")
        return seq

    @property
    def prediction_state(self) -> dict[str, Any]:
        """The record's latest prediction: ``state`` (None, "open", "resolved"), ``seq``,
        ``prediction``, ``predicted_at`` and, once resolved, ``actual``, ``error``, ``outcome``,
        ``resolved_at``. One round trip."""
        client = self._meta.client
        with server_errors(client):
            raw = {k.decode(): v.decode() for k, v in client.hgetall(prediction_key(self._stored_key())).items()}
        state: dict[str, Any] = {"state": raw.get("state")}
        for name, parse in (("seq", int), ("prediction", json.loads), ("predicted_at", float),
                            ("actual", json.loads), ("error", float), ("outcome", str), ("resolved_at", float)):
            if name in raw:
                state[name] = parse(raw[name])
        return state

    # -- resolving ---------------------------------------------------------------------------------
    def resolve_prediction(self, actual: dict[str, Any], now: float | None = None) -> float | None:
        """Resolve the open prediction against ``actual``; returns its error, or None when there
        was no open prediction or a concurrent resolver won. Two round trips (read, compare-and-set)."""
        actual_json = _json_object(actual, "the actual values")
        state = self.prediction_state
        if state["state"] != "open":
            return None
        error = prediction_error(state["prediction"], actual)
        if not self._resolve(error, now, actual_json, "", str(state["seq"])):
            return None
        self._low_confidence_feedback(error)
        return error

    def auto_resolve(self, outcome: str, now: float | None = None) -> float | None:
        """Resolve the open prediction with the outcome's error (:data:`OUTCOME_ERRORS`).

        Returns the error, or None when nothing was resolved ("deferred", no open prediction, or
        a concurrent resolver won). ValueError for an unknown outcome.
        """
        error = self._outcome_error(outcome)
        if error is None or not self._resolve(error, now, "null", outcome, ""):
            return None
        self._low_confidence_feedback(error)
        return error

    def queue_resolution(self, pipeline: Any, error: float, outcome: str = "", now: float | None = None) -> None:
        """Queue the compare-and-set resolving the open prediction with ``error`` on ``pipeline``.

        No confidence feedback (the caller's outcome carries its own signal). The reply is 1 when
        it resolved; unless :meth:`stream_in_resolution`, the caller writes the
        ``prediction_resolved`` event on a reply of 1 (a per-model stream on a cluster).
        """
        keys, args = self._resolution(error, now, "null", outcome, "")
        queue_script(pipeline, "prediction_resolve", keys, args)

    @staticmethod
    def _outcome_error(outcome: str) -> float | None:
        if outcome == "deferred":
            return None
        if outcome not in OUTCOME_ERRORS:
            raise ValidationError(f"unknown outcome {outcome!r}: expected one of {sorted([*OUTCOME_ERRORS, 'deferred'])}")
        return OUTCOME_ERRORS[outcome]

    def stream_in_resolution(self) -> bool:
        """True when the resolution script itself writes the ``prediction_resolved`` event."""
        if not isinstance(self, EventStreamMixin):
            return False
        return self.stream_shares_slot(self._meta.client, self._stored_key().keyspace)

    def _resolution(self, error: float, now: float | None, actual: str, outcome: str, seq: str) -> tuple[list[Any], list[Any]]:
        key = self._stored_key()
        ledger = LedgerKeys.of(key.keyspace)
        keys = [prediction_key(key), ledger.errors, ledger.times, ledger.details]
        maxlen = 0
        if self.stream_in_resolution() and isinstance(self, EventStreamMixin):
            keys.append(self.stream_key)
            maxlen = self.event_stream_maxlen
        at = repr(timestamp("now", now))
        args = [seq, repr(float(error)), at, actual, outcome, key.record_id, key.redis_key,
                self.prediction_history_size, self._meta.name, maxlen]
        return keys, args

    def _resolve(self, error: float, now: float | None, actual: str, outcome: str, seq: str) -> bool:
        keys, args = self._resolution(error, now, actual, outcome, seq)
        client = self._meta.client
        with server_errors(client):
            won = bool(run_script("prediction_resolve", keys, args, client))
        if won and isinstance(self, EventStreamMixin) and not self.stream_in_resolution():
            self.emit_event(PREDICTION_RESOLVED, {"error": error, "outcome": outcome or None})
        return won

    def _low_confidence_feedback(self, error: float) -> None:
        """Send ``low_confidence_signal`` to each ConfidenceField when ``error`` is above the
        threshold: one pipeline after the resolution (a crash between the two loses the signal)."""
        fields = self._meta.fields_of(ConfidenceField)
        if error <= self.prediction_error_threshold or not fields:
            return
        signal = self.low_confidence_signal
        client = self._meta.client
        with server_errors(client), write_pipeline(client) as pipe:
            for field in fields:
                ConfidenceField.update_confidence(self, field.name, signal, pipeline=pipe)
                if isinstance(self, EventStreamMixin):
                    self.emit_event(CONFIDENCE_UPDATE, {"field": field.name, "signal": signal}, pipeline=pipe)
            pipe.execute()

    # -- the ledger ----------------------------------------------------------------------------------
    @classmethod
    def get_highest_errors(cls, n: int = 10, **partition: Any) -> list[ResolvedPrediction]:
        """The ``n`` resolutions of a partition with the highest errors, highest first (one round trip)."""
        if n <= 0:
            return []
        ledger = LedgerKeys.of(cls.query.filter(**partition).partition())
        client = cls._meta.client
        with server_errors(client):
            rows = run_script("prediction_top", [ledger.errors, ledger.details], [n], client)
        return [ResolvedPrediction.from_json(row) for row in rows if row is not None]

    @classmethod
    def resolved_predictions(cls, **partition: Any) -> list[ResolvedPrediction]:
        """Every resolution kept in a partition's ledger, oldest first (one round trip)."""
        ledger = LedgerKeys.of(cls.query.filter(**partition).partition())
        client = cls._meta.client
        with server_errors(client):
            raw = client.hvals(ledger.details)
        return sorted((ResolvedPrediction.from_json(r) for r in raw), key=lambda e: (e.resolved_at, e.id))

    @classmethod
    def error_summary(
        cls, group_by: str | Callable[[ResolvedPrediction], Any] | None = None, **partition: Any
    ) -> dict[str, Any]:
        """Error statistics of a partition's ledger (:func:`group_errors`): ``count, mean,
        stddev, p50, p90, p99, max``, overall or by ``"hour"`` / ``"weekday"`` / ``"day"`` / a callable."""
        return group_errors(cls.resolved_predictions(**partition), group_by)

    # -- the record's lifecycle ----------------------------------------------------------------------
    def queue_delete(self, batch: SaveBatch) -> None:
        """Delete the record's prediction with it (its ledger entries stay)."""
        super().queue_delete(batch)
        batch.pipe.delete(prediction_key(DbKey(batch.keyspace, batch.record_id)))

    # The asyncio API (docs/asyncio.md): each runs its sync twin over redis.asyncio.
    arecord_prediction = async_variant(record_prediction)
    aprediction_state = async_variant(prediction_state)
    aresolve_prediction = async_variant(resolve_prediction)
    aauto_resolve = async_variant(auto_resolve)
    aget_highest_errors = async_variant(get_highest_errors)
    aresolved_predictions = async_variant(resolved_predictions)
    aerror_summary = async_variant(error_summary)
