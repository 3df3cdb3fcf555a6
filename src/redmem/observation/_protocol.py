"""ObservationProtocol: what showing a record to the model, and the model's use of it, change.

- ``on_read(records)``: stage a read of each AccessTracker record (to be confirmed or discarded);
- ``on_surfaced(records, reason, partition)``: open a RecallProposal per pushed record;
- ``queue_read`` / ``queue_surfaced``: the same two, queued on a caller's pipeline (the
  assembler sends them with its other post-effects in one round trip);
- ``on_context_used(records, outcome_map)``: apply each record's outcome following
  :data:`OUTCOME_EFFECTS`, the matrix of popoto's ObservationProtocol. ``outcome_map`` is one
  outcome for every record (``"acted"``) or a mapping naming records by the record itself, its ``db_key.redis_key`` or its record id
  (see :mod:`redmem.observation._outcome_map`); a record it does not name is ``deferred``:

| outcome | effects | prediction error |
|---|---|---|
| acted | touch decay fields, confirm access, cycles x1.2, resolve pressure, confidence 0.9 | 0.1 |
| dismissed | discard staged reads, cycles x0.8 | 0.5 |
| deferred | discard staged reads (the proposal stays pending) | - |
| contradicted | discard staged reads, cycles x0.5, confidence 0.1 | 0.9 |
| used | confirm access only | 0.3 |

  Every outcome but ``deferred`` also closes the record's pending RecallProposal (its status
  becomes the outcome) in the partition it was surfaced in. An effect applies when the record
  has what it acts on (a field with ``touch``, an AccessTrackerMixin, a CyclicDecayField, a
  ConfidenceField, a PredictionLedgerMixin with an open prediction); models with an
  EventStreamMixin get a custom event per confidence update, cycle change, pressure
  resolution and resolved prediction.

The whole report is checked before anything is written (OutcomeError, a ValueError, for an
unknown outcome, a key naming no record of the call, or a map of the wrong type), then all
effects of one call go out in one pipeline: one round trip. Each effect is atomic on its own
(the primitives are Lua scripts); the pipeline as a whole is not a transaction, since a call may
touch several partitions (cluster slots).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..fields._confidence import ConfidenceField
from ..fields._cyclic import CyclicDecayField
from ..model._options import shared_client
from ..store._aio import async_variant
from ..store._connection import server_errors
from ..store._outcome import write_pipeline
from ._access import AccessTrackerMixin
from ._events import (
    CONFIDENCE_UPDATE,
    CYCLE_STRENGTHEN,
    CYCLE_WEAKEN,
    PREDICTION_RESOLVED,
    PRESSURE_RESOLVED,
    EventStreamMixin,
)
from ._outcome_map import DEFAULT_OUTCOME, OutcomeError, check_records
from ._outcome_map import outcomes_for as outcomes_of
from ._predictions import OUTCOME_ERRORS, PredictionLedgerMixin
from ._proposals import DEFAULT_TTL, RecallProposal

if TYPE_CHECKING:
    from ..model._base import Model
    from ..model._dbkey import DbKey

__all__ = ["ObservationProtocol", "OutcomeEffects", "OUTCOME_EFFECTS", "DEFAULT_OUTCOME", "OutcomeError"]


@dataclass(frozen=True)
class OutcomeEffects:
    """What one outcome does to a record that was in the context."""

    touch: bool = False
    confirm_access: bool = False
    discard_staged: bool = False
    #: Factor applied to every learned cycle amplitude (> 1 strengthens, < 1 weakens).
    cycle_factor: float | None = None
    resolve_pressure: bool = False
    confidence_signal: float | None = None
    prediction_error: float | None = None
    closes_proposal: bool = True


OUTCOME_EFFECTS: dict[str, OutcomeEffects] = {
    "acted": OutcomeEffects(touch=True, confirm_access=True, cycle_factor=1.2, resolve_pressure=True,
                            confidence_signal=0.9, prediction_error=OUTCOME_ERRORS["acted"]),
    "dismissed": OutcomeEffects(discard_staged=True, cycle_factor=0.8,
                                prediction_error=OUTCOME_ERRORS["dismissed"]),
    "deferred": OutcomeEffects(discard_staged=True, closes_proposal=False),
    "contradicted": OutcomeEffects(discard_staged=True, cycle_factor=0.5, confidence_signal=0.1,
                                   prediction_error=OUTCOME_ERRORS["contradicted"]),
    "used": OutcomeEffects(confirm_access=True, prediction_error=OUTCOME_ERRORS["used"]),
}


def _key(record: Model) -> str:
    return (record._saved_key or record.db_key).redis_key


def _distinct(records: Iterable[Any]) -> list[Any]:
    """The records, each key once, in first-seen order."""
    seen: dict[str, Any] = {}
    for record in records:
        seen.setdefault(_key(record), record)
    return list(seen.values())


def outcomes_for(records: list[Any], outcome_map: Any) -> list[str]:
    """Each of the distinct ``records``' outcome (default ``deferred``); OutcomeError for a bad report."""
    return outcomes_of(records, outcome_map, OUTCOME_EFFECTS)


@dataclass
class _Call:
    """One on_context_used call being queued: its pipeline, time, and events to write after it."""

    pipe: Any
    now: float
    partition: str | None
    #: (reply index, record, error, outcome) of resolutions whose event the script cannot write.
    late_events: list[tuple[int, Any, float, str]]

    def emit(self, record: Any, op: str, data: dict[str, Any]) -> None:
        if isinstance(record, EventStreamMixin):
            record.emit_event(op, data, pipeline=self.pipe)

    def queue(self, record: Any, outcome: str) -> None:
        """Queue every effect of ``outcome`` on ``record``."""
        effects = OUTCOME_EFFECTS[outcome]
        if effects.touch:
            for field in record._meta.fields.values():
                if callable(getattr(field, "touch", None)):
                    field.touch(record, pipeline=self.pipe, now=self.now)
        if isinstance(record, AccessTrackerMixin):
            if effects.confirm_access:
                record.confirm_access(pipeline=self.pipe, now=self.now)
            if effects.discard_staged:
                record.discard_staged_access(pipeline=self.pipe)
        for field in record._meta.fields_of(CyclicDecayField):
            self.queue_cycles(record, field, effects)
        if effects.confidence_signal is not None:
            for field in record._meta.fields_of(ConfidenceField):
                ConfidenceField.update_confidence(record, field.name, effects.confidence_signal, pipeline=self.pipe)
                self.emit(record, CONFIDENCE_UPDATE, {"field": field.name, "signal": effects.confidence_signal})
        if effects.prediction_error is not None and isinstance(record, PredictionLedgerMixin):
            self.queue_prediction(record, effects.prediction_error, outcome)
        if effects.closes_proposal:
            RecallProposal.queue_resolve(self.pipe, record, outcome, self.partition, self.now)

    def queue_cycles(self, record: Any, field: CyclicDecayField, effects: OutcomeEffects) -> None:
        factor = effects.cycle_factor
        if factor is not None and factor >= 1:
            field.strengthen_cycle(record, factor, pipeline=self.pipe)
            self.emit(record, CYCLE_STRENGTHEN, {"field": field.name, "factor": factor})
        elif factor is not None:
            field.weaken_cycle(record, factor, pipeline=self.pipe)
            self.emit(record, CYCLE_WEAKEN, {"field": field.name, "factor": factor})
        if effects.resolve_pressure:
            field.resolve_pressure(record, pipeline=self.pipe, now=self.now)
            self.emit(record, PRESSURE_RESOLVED, {"field": field.name})

    def queue_prediction(self, record: PredictionLedgerMixin, error: float, outcome: str) -> None:
        record.queue_resolution(self.pipe, error, outcome, now=self.now)
        if isinstance(record, EventStreamMixin) and not record.stream_in_resolution():
            self.late_events.append((len(self.pipe) - 1, record, error, outcome))

    def write_late_events(self, replies: list[Any], client: Any) -> None:
        """Events of resolutions that happened, for streams the resolution script could not reach."""
        resolved = [(r, e, o) for i, r, e, o in self.late_events if replies[i] == 1]
        if not resolved:
            return
        with server_errors(client), write_pipeline(client) as pipe:
            for record, error, outcome in resolved:
                record.emit_event(PREDICTION_RESOLVED, {"error": error, "outcome": outcome}, pipeline=pipe)
            pipe.execute()


class ObservationProtocol:
    """Feed what happened to records in a context back into their primitives (see the module docs)."""

    @staticmethod
    def on_read(records: Iterable[Any], now: float | None = None) -> int:
        """Stage one read of each AccessTracker record (others are ignored); one round trip.

        Returns how many records had a read staged. Records loaded by a tracking query were
        staged by that query already: load them with ``no_track()`` when you call this.
        """
        records = _distinct(records)
        readers = [record for record in records if isinstance(record, AccessTrackerMixin)]
        if not readers:
            return 0
        client = shared_client(type(record)._meta for record in readers)
        with server_errors(client), write_pipeline(client) as pipe:
            ObservationProtocol.queue_read(pipe, records, now)
            return sum(pipe.execute())

    @staticmethod
    def queue_read(pipe: Any, records: Iterable[Any], now: float | None = None) -> None:
        """Queue :meth:`on_read` on ``pipe``, to send with other writes in one round trip."""
        by_model: dict[type[AccessTrackerMixin], list[DbKey]] = {}
        for record in _distinct(records):
            if isinstance(record, AccessTrackerMixin):
                by_model.setdefault(type(record), []).append(record._saved_key or record.db_key)
        for model, keys in by_model.items():
            model.queue_stage_reads(pipe, keys, now)

    @staticmethod
    def on_surfaced(
        records: Iterable[Any], reason: str, partition: str | None = None,
        ttl: float = DEFAULT_TTL, now: float | None = None,
    ) -> list[RecallProposal]:
        """Open a pending RecallProposal per record (expiring after ``ttl`` s); one round trip.

        ``partition`` defaults to each record's own; if you give one, give the same to
        :meth:`on_context_used`.
        """
        return RecallProposal.surface(_distinct(records), reason, partition, ttl, now)

    @staticmethod
    def queue_surfaced(
        pipe: Any, records: Iterable[Any], reason: str, partition: str | None = None,
        ttl: float = DEFAULT_TTL, now: float | None = None,
    ) -> list[RecallProposal]:
        """Queue :meth:`on_surfaced` on ``pipe``; the proposals are written when ``pipe`` is executed."""
        return [RecallProposal.queue_surface(pipe, record, reason, partition, ttl, now) for record in _distinct(records)]

    @staticmethod
    def on_context_used(
        records: Iterable[Any], outcome_map: str | Mapping[Any, str],
        partition: str | None = None, now: float | None = None,
    ) -> dict[str, str]:
        """Apply each record's outcome (see :data:`OUTCOME_EFFECTS`); returns ``{redis key: outcome}``.

        ``outcome_map``: one outcome for every record, or ``{record, redis key or record id:
        outcome}`` (unnamed records are ``deferred``). Raises OutcomeError (a ValueError) for an
        unknown outcome, a key naming no record of ``records`` or a wrong type, before anything
        is written. One round trip (plus one to write ``prediction_resolved`` events to
        per-model streams on a cluster).
        """
        records = _distinct(check_records(records))
        outcomes = outcomes_for(records, outcome_map)
        if not records:
            return {}
        closing = any(OUTCOME_EFFECTS[outcome].closes_proposal for outcome in outcomes)
        client = shared_client([record._meta for record in records] + ([RecallProposal._meta] if closing else []))
        with server_errors(client), write_pipeline(client) as pipe:
            call = _Call(pipe, time.time() if now is None else now, partition, [])
            for record, outcome in zip(records, outcomes):
                call.queue(record, outcome)
            replies = pipe.execute()
        call.write_late_events(replies, client)
        return {_key(r): o for r, o in zip(records, outcomes)}

    # The asyncio API (docs/asyncio.md): each runs its sync twin over redis.asyncio.
    aon_read = async_variant(on_read)
    aon_surfaced = async_variant(on_surfaced)
    aon_context_used = async_variant(on_context_used)
