"""ConfidenceField: how far a record is believed, as an evidence-capped running mean of signals.

Each record starts at ``initial_confidence`` (c0 = 0.5). A signal s in [0, 1] (1: the record
was borne out, 0: it was contradicted) moves the confidence c toward s:

    n  = min(evidence_count + 1, evidence_cap)
    c' = clamp01(c + (s - c) / (n + 1))

so the first update gives (c0 + s) / 2 and, once ``evidence_cap`` updates are in, each new signal
weighs 1 / (evidence_cap + 1): an exponential moving average that never freezes. s >= 0.5 counts
as a corroboration, s < 0.5 as a contradiction; ``evidence_count`` counts every update (the cap
limits only n). Formula and defaults as in popoto's
ConfidenceField.

Where it lives in Redis (``<base>`` = ``<prefix>:<Model>:{<partition>}``):

- the record hash holds ``<field>`` (confidence), ``<field>.evidence_count``,
  ``<field>.corroborations`` and ``<field>.contradictions``: saves never write these entries
  (the field is not ``stored``), so re-saving a stale instance loses no evidence, and deleting
  the record deletes them with its hash;
- ``<base>:cf:<field>`` is a sorted set of confidence by record id (:meth:`ConfidenceField.index_key`),
  so scoring and decay modulation read one record's confidence with ZSCORE, never a scan.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from ..model._dbkey import DbKey
from ..model._field import Field
from ..store._aio import async_variant
from ..store._connection import server_errors
from ..store._errors import ModelException, RecordNotFound, ValidationError
from ..store._keys import KeyKind, KeySpace
from ..store._scripts import queue_script, run_script
from ..store._validation import is_real, positive_int

if TYPE_CHECKING:
    from ..model._base import Model
    from ..model._batch import SaveBatch

__all__ = ["ConfidenceField", "validate_signal", "updated_confidence", "CONFIDENCE_KIND"]

#: Key kind of the per-partition confidence index: ``<base>:cf:<field>``.
CONFIDENCE_KIND = KeyKind.CONFIDENCE
#: A signal at or above this counts as a corroboration, below it as a contradiction.
CORROBORATION_THRESHOLD = 0.5
_COUNTS = ("evidence_count", "corroborations", "contradictions")


def validate_signal(signal: Any) -> float:
    """``signal`` as a float in [0, 1]; ValidationError for None, bools, non-numbers, NaN or out of range."""
    if not is_real(signal):
        raise ValidationError(f"a confidence signal is a number in [0, 1], not {signal!r}")
    value = float(signal)
    if math.isnan(value) or not 0.0 <= value <= 1.0:
        raise ValidationError(f"a confidence signal must lie in [0, 1], got {signal!r}")
    return value


def updated_confidence(confidence: float, evidence_count: int, signal: float, evidence_cap: int) -> float:
    """``clamp01(c + (s - c) / (n + 1))`` with ``n = min(evidence_count + 1, evidence_cap)``.

    ``evidence_count`` is the number of updates before this one. The Lua of
    ``confidence_update.lua`` computes the same expression in the same order.
    """
    n = min(evidence_count + 1, evidence_cap)
    return min(1.0, max(0.0, confidence + (signal - confidence) / (n + 1)))


class ConfidenceField(Field[Any]):
    """A per-record confidence in [0, 1], moved by evidence signals, indexed per partition.

    Args:
        initial_confidence: c0, the confidence of a record without evidence (and of new records).
        evidence_cap: the most updates the running mean weighs before it turns into a moving
            average with weight ``1 / (evidence_cap + 1)`` per signal.
        partition_by: the model's partition field (may come from the model's other fields).
    """

    stored = False
    python_type = float

    def __init__(
        self,
        initial_confidence: float = 0.5,
        evidence_cap: int = 20,
        partition_by: str | tuple[str, ...] = (),
    ) -> None:
        super().__init__(partition_by=partition_by or None)
        if not is_real(initial_confidence) or not 0.0 <= initial_confidence <= 1.0:
            raise ModelException(f"initial_confidence must be a number in [0, 1], not {initial_confidence!r}")
        positive_int("evidence_cap", evidence_cap, error=ModelException)
        self.initial_confidence: float = float(initial_confidence)
        self.evidence_cap: int = evidence_cap
        self._initial: str = repr(self.initial_confidence)

    # -- keys ----------------------------------------------------------------------------------
    def index_key(self, keyspace: KeySpace) -> str:
        """The partition's sorted set of confidence by record id: ``<base>:cf:<field>``."""
        return keyspace.key(CONFIDENCE_KIND, self.name)

    def bind(self, model: Any, name: str) -> None:
        super().bind(model, name)
        #: Record-hash entries: confidence, evidence_count, corroborations, contradictions.
        self.hash_fields: tuple[str, ...] = (name, *(f"{name}.{count}" for count in _COUNTS))

    # -- the record's value ---------------------------------------------------------------------
    def loaded_value(self, raw: dict[bytes, bytes]) -> float:
        """``record.confidence`` of a loaded record: its hash entry (read by the same HGETALL)."""
        entry = raw.get(self.name.encode())
        return self.initial_confidence if entry is None else float(entry)

    def value_of(self, instance: Any) -> float:
        """``record.confidence`` of a record not loaded: ``initial_confidence`` before its first save,
        else read from Redis (one round trip)."""
        if instance._saved_key is None:
            return self.initial_confidence
        return self.get_confidence(instance, self.name)

    # -- taking part in saves ------------------------------------------------------------------
    def prepare(self, reader: Any, batch: SaveBatch) -> Any:
        """When a record moves to a new key, read its evidence at the old key (watched by the save)."""
        source = batch.instance._saved_key
        if batch.old is not None or source is None or source == DbKey(batch.keyspace, batch.record_id):
            return None
        return reader.hmget(source.redis_key, *self.hash_fields)

    def on_save(self, batch: SaveBatch, old: dict[str, Any] | None) -> None:
        """Index the record's confidence: its own entry, else ``initial_confidence``; evidence
        carried over a key change is copied first where the record has none."""
        if batch.fresh:
            self.on_save_many([batch])
            return
        keys = [batch.record_key, self.index_key(batch.keyspace)]
        carried = [x for pair in self._carried(batch).items() for x in pair]
        batch.script("confidence_init", keys, [batch.record_id, self._initial, self.name, *carried])

    def on_save_many(self, batches: list[SaveBatch]) -> None:
        """Records under freshly generated keys have no evidence (no entry reads as none): one ZADD
        indexes them all at ``initial_confidence``; the others go through :meth:`on_save`."""
        scores = {}
        for batch in batches:
            if batch.fresh:
                scores[batch.record_id] = self._initial
            else:
                self.on_save(batch, batch.old)
        if scores:
            batches[0].pipe.zadd(self.index_key(batches[0].keyspace), scores)

    def _carried(self, batch: SaveBatch) -> dict[str, Any]:
        """The evidence entries read at the record's old key (``prepare``) that it had, by entry name."""
        carried = batch.prepared.get(self.name) or ()
        return {name: value for name, value in zip(self.hash_fields, carried) if value is not None}

    def on_delete(self, batch: SaveBatch, old: dict[str, Any]) -> None:
        batch.pipe.zrem(self.index_key(batch.keyspace), batch.record_id)

    # -- evidence ------------------------------------------------------------------------------
    @staticmethod
    def update_confidence(instance: Any, field_name: str, signal: Any, pipeline: Any = None) -> float | None:
        """Apply one signal atomically (Lua) and return the new confidence.

        With ``pipeline`` the update is queued there instead (returns None); its reply is
        ``[confidence, evidence_count, corroborations, contradictions]`` as text, or None if the
        record no longer exists. Raises ValidationError for a bad signal (nothing is written)
        and RecordNotFound when the record is not stored (a deleted record is never recreated).
        """
        field = _field_of(instance, field_name)
        value = validate_signal(signal)
        key = _stored_key(instance)
        keys = [key.redis_key, field.index_key(key.keyspace)]
        args = [key.record_id, repr(value), repr(field.initial_confidence), field.evidence_cap,
                *field.hash_fields]
        vars(instance).pop(field_name, None)  # ``record.confidence`` reads the new value
        if pipeline is not None:
            queue_script(pipeline, "confidence_update", keys, args)
            return None
        client = instance._meta.client
        with server_errors(client):
            reply = run_script("confidence_update", keys, args, client)
        if reply is None:
            raise RecordNotFound(f"{key.redis_key} is not stored: cannot update its confidence")
        confidence = vars(instance)[field_name] = float(reply[0])
        return confidence

    @staticmethod
    def get_confidence(instance: Any, field_name: str) -> float:
        """The record's confidence (``initial_confidence`` before any evidence)."""
        confidence: float = ConfidenceField.get_confidence_data(instance, field_name)["confidence"]
        return confidence

    @staticmethod
    def get_confidence_data(instance: Any, field_name: str) -> dict[str, Any]:
        """``{"confidence": float, "evidence_count": int, "corroborations": int, "contradictions": int}``.

        One round trip; RecordNotFound when the record is not stored.
        """
        field = _field_of(instance, field_name)
        key = _stored_key(instance)
        client = instance._meta.client
        with server_errors(client), client.pipeline(transaction=False) as pipe:
            pipe.exists(key.redis_key)
            pipe.hmget(key.redis_key, *field.hash_fields)
            exists, raw = pipe.execute()
        if not exists:
            raise RecordNotFound(f"{key.redis_key} is not stored: it has no confidence")
        confidence = field.initial_confidence if raw[0] is None else float(raw[0])
        counts = {name: int(v) if v is not None else 0 for name, v in zip(_COUNTS, raw[1:])}
        return {"confidence": confidence, **counts}

    # The asyncio API (docs/asyncio.md): each runs its sync twin over redis.asyncio.
    aupdate_confidence = async_variant(update_confidence)
    aget_confidence = async_variant(get_confidence)
    aget_confidence_data = async_variant(get_confidence_data)


def _field_of(instance: Any, field_name: str) -> ConfidenceField:
    field = instance._meta.fields.get(field_name)
    if not isinstance(field, ConfidenceField):
        raise ValidationError(f"{type(instance).__name__}.{field_name} is not a ConfidenceField")
    return field


def _stored_key(instance: Model) -> DbKey:
    """Where the instance was loaded from or last saved (else where its key fields point)."""
    return instance._saved_key or instance.db_key
