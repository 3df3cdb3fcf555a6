"""EventStreamMixin: every create, update and delete of a record, and custom events, in a stream.

Each event is one stream entry with the fields ``model`` (model name), ``pk`` and ``key`` (both
the record's Redis key, as in ``record.db_key.redis_key``: ``pk`` is the name Popoto's stream
consumers read, ``key`` the name earlier redmem entries carry), ``op`` (``create`` / ``update`` /
``delete`` or a custom name), ``ts`` (seconds since the epoch), ``changed_fields`` (JSON list of
field names: the non-None fields of a created or deleted record, the fields whose value changed
in an update) and, for custom events, ``data`` (JSON object). Streams are capped with
``MAXLEN ~ event_stream_maxlen`` (10000). Entry shape and cap as in popoto's
EventStreamMixin.

Where the stream lives:

- by default one stream per partition, ``<prefix>:<Model>:{<partition>}:ev``, in the records'
  slot: a save's XADD is queued in the save's own MULTI/EXEC, so the record and its event are
  written together or not at all, on a single server and on a cluster;
- with ``event_stream_per_model = True`` one stream for the model, ``<prefix>:<Model>:{%g}:ev``.
  On a single server (or for an unpartitioned model) it is still written inside the save's
  batch. On a cluster a partitioned record lives in another slot than that stream, and a
  MULTI/EXEC cannot span slots: the XADD is sent right after the save's EXEC succeeds, so a
  crash between the two loses that event (never the record), and another client may see the
  record before its event.

Custom events (:meth:`EventStreamMixin.emit_event`) are what the observation layer writes for
confidence updates, cycle strengthening and weakening, pressure resolution and resolved
predictions; a direct call of a field's primitive writes no event.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any, ClassVar

from ..model._base import RecordMixin
from ..model._batch import SaveBatch
from ..model._dbkey import DbKey
from ..store._aio import async_variant, is_cluster
from ..store._connection import server_errors
from ..store._errors import ValidationError
from ..store._keys import KeyKind, KeySpace
from ..store._scripts import ScriptCall, queue_script, run_calls, run_script

__all__ = [
    "EventStreamMixin",
    "StreamEvent",
    "event_fields",
    "EVENT_KIND",
    "CREATE",
    "UPDATE",
    "DELETE",
    "CONFIDENCE_UPDATE",
    "CYCLE_STRENGTHEN",
    "CYCLE_WEAKEN",
    "PRESSURE_RESOLVED",
    "PREDICTION_RESOLVED",
]

#: Key kind of an event stream: ``<base>:ev``.
EVENT_KIND = KeyKind.EVENTS
CREATE, UPDATE, DELETE = "create", "update", "delete"
#: Custom events written by the observation layer.
CONFIDENCE_UPDATE = "confidence_update"
CYCLE_STRENGTHEN = "cycle_strengthen"
CYCLE_WEAKEN = "cycle_weaken"
PRESSURE_RESOLVED = "pressure_resolved"
PREDICTION_RESOLVED = "prediction_resolved"


@dataclass(frozen=True)
class StreamEvent:
    """One stream entry: its id and its fields, decoded, with the event fields as attributes."""

    id: str
    fields: dict[str, str]

    @classmethod
    def from_entry(cls, entry_id: bytes | str, raw: dict[str, Any]) -> StreamEvent:
        def text(value: bytes | str) -> str:
            return value.decode() if isinstance(value, bytes) else value

        return cls(text(entry_id), {text(k): text(v) for k, v in raw.items()})

    @property
    def model(self) -> str:
        return self.fields.get("model", "")

    @property
    def pk(self) -> str:
        """The record's Redis key (``pk``, or ``key`` in an entry written without ``pk``)."""
        return self.fields.get("pk") or self.fields.get("key", "")

    @property
    def key(self) -> str:
        """The record's Redis key: the same as :attr:`pk`."""
        return self.fields.get("key") or self.fields.get("pk", "")

    @property
    def op(self) -> str:
        return self.fields.get("op", "")

    @property
    def ts(self) -> float:
        return float(self.fields.get("ts", "nan"))

    @property
    def changed_fields(self) -> list[str]:
        changed: list[str] = json.loads(self.fields.get("changed_fields", "[]"))
        return changed

    @property
    def data(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(self.fields.get("data", "{}"))
        return data


def event_fields(
    model: str, key: str, op: str, ts: float, changed: list[str] | None = None, data: dict[str, Any] | None = None
) -> dict[str, str]:
    """The stream entry of one event (``data`` only for custom events); ``key`` goes in as ``pk`` and ``key``."""
    fields = {"model": model, "pk": key, "key": key, "op": op, "ts": repr(ts),
              "changed_fields": json.dumps(changed or [])}
    if data is not None:
        fields["data"] = json.dumps(data, sort_keys=True)
    return fields


def changed_field_names(instance: Any, old: dict[str, Any] | None, new: dict[str, Any] | None) -> list[str]:
    """Declaration-ordered names of the stored fields that differ between ``old`` and ``new``."""
    names = [f.name for f in instance._meta.stored_fields()]
    old, new = old or {}, new or {}
    return [n for n in names if old.get(n) != new.get(n)]


class EventStreamMixin(RecordMixin):
    """Write a stream entry for each create, update and delete of the model's records.

    Put it before ``Model`` in the bases: ``class Memory(EventStreamMixin, Model)``.
    """

    #: Approximate cap of each stream (``XADD ... MAXLEN ~ n``).
    event_stream_maxlen: ClassVar[int] = 10000
    #: One stream for the whole model instead of one per partition (see the module docs).
    event_stream_per_model: ClassVar[bool] = False

    # -- where events go -------------------------------------------------------------------------
    @classmethod
    def stream_key_for(cls, keyspace: KeySpace) -> str:
        """The stream receiving the events of records in ``keyspace``."""
        space = cls._meta.global_keyspace() if cls.event_stream_per_model else keyspace
        return space.key(EVENT_KIND)

    @classmethod
    def event_stream_key(cls, **partition: Any) -> str:
        """The stream of the partition named by ``partition`` (e.g. ``agent_id="a"``; none needed
        with ``event_stream_per_model``)."""
        if cls.event_stream_per_model and not partition:
            return cls._meta.global_keyspace().key(EVENT_KIND)
        return cls.stream_key_for(cls.query.filter(**partition).partition())

    @classmethod
    def stream_shares_slot(cls, client: Any, keyspace: KeySpace) -> bool:
        """True when the stream of ``keyspace`` can be written in the same MULTI or script as its records."""
        if not is_cluster(client):
            return True
        return not cls.event_stream_per_model or keyspace.tag == cls._meta.global_keyspace().tag

    @property
    def stream_key(self) -> str:
        """The stream this record's events go to."""
        return self.stream_key_for(self._stored_key().keyspace)

    def _stored_key(self) -> DbKey:
        return self._saved_key or self.db_key

    # -- events of saves and deletes ------------------------------------------------------------
    def save(self, **options: Any) -> bool:
        """Save (``options`` go to the next ``save`` in the bases) and write the save's event."""
        self._events_after_write: dict[str, dict[str, str]] = {}
        written = super().save(**options)
        self._write_deferred_events()
        return written

    def delete(self) -> bool:
        """Delete the record and write its ``delete`` event."""
        self._events_after_write = {}
        deleted = super().delete()
        self._write_deferred_events()
        return deleted

    def queue_save(self, batch: SaveBatch) -> None:
        super().queue_save(batch)
        new = self.to_dict()
        op = CREATE if batch.old is None else UPDATE
        self._queue_event(batch, op, changed_field_names(self, batch.old, new))

    def queue_delete(self, batch: SaveBatch) -> None:
        super().queue_delete(batch)
        self._queue_event(batch, DELETE, changed_field_names(self, batch.old, None))

    def _queue_event(self, batch: SaveBatch, op: str, changed: list[str]) -> None:
        """XADD in the batch when the stream shares the record's slot, else after the EXEC."""
        fields = event_fields(self._meta.name, batch.record_key, op, time.time(), changed)
        stream = self.stream_key_for(batch.keyspace)
        if self.stream_shares_slot(batch.client, batch.keyspace):
            batch.script("stream_add", [stream], self._stream_args(fields))
        else:  # keyed by record: a save rebuilt after a lost WATCH race replaces its entry
            self._events_after_write[batch.record_key] = fields

    def _write_deferred_events(self) -> None:
        events = getattr(self, "_events_after_write", None)
        if not events:
            return
        client = self._meta.client
        calls = [ScriptCall("stream_add", [self.stream_key], self._stream_args(f)) for f in events.values()]
        with server_errors(client):
            run_calls(client, calls)
        events.clear()

    def _stream_args(self, fields: dict[str, Any]) -> list[Any]:
        """ARGV of ``stream_add.lua``: the length cap (0: none), then the entry's field/value pairs."""
        return [self.event_stream_maxlen or 0, *(item for pair in fields.items() for item in pair)]

    # -- custom events --------------------------------------------------------------------------
    def emit_event(self, op: str, data: dict[str, Any] | None = None, pipeline: Any = None) -> str | None:
        """Write a custom event about this record; returns its entry id, or None when queued.

        ``op`` is the event's name (not ``create``/``update``/``delete``); ``data`` a JSON-ready
        dict. Raises ValueError for a reserved or empty name.
        """
        if not isinstance(op, str) or not op or op in (CREATE, UPDATE, DELETE):
            raise ValidationError(f"a custom event needs a name other than create/update/delete, not {op!r}")
        key = self._stored_key()
        fields = event_fields(self._meta.name, key.redis_key, op, time.time(), data=data or {})
        if pipeline is not None:
            queue_script(pipeline, "stream_add", [self.stream_key], self._stream_args(fields))
            return None
        client = self._meta.client
        with server_errors(client):
            entry: bytes = run_script("stream_add", [self.stream_key], self._stream_args(fields), client)
        return entry.decode()

    # -- reading ---------------------------------------------------------------------------------
    @classmethod
    def read_events(cls, count: int | None = None, **partition: Any) -> list[StreamEvent]:
        """The oldest ``count`` (all when None) events of a partition's stream, oldest first."""
        client = cls._meta.client
        with server_errors(client):
            entries = client.xrange(cls.event_stream_key(**partition), count=count)
        return [StreamEvent.from_entry(entry_id, raw) for entry_id, raw in entries]

    # The asyncio API (docs/asyncio.md): each runs its sync twin over redis.asyncio.
    aemit_event = async_variant(emit_event)
    aread_events = async_variant(read_events)
