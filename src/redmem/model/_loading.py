"""Loading records: stored hashes decoded into model instances, many keys in one pipelined round trip."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ..store._connection import server_errors
from ._dbkey import DbKey
from ._field import MISSING, Field
from ._key_values import with_key_values
from ._model_class import ModelClass

__all__ = ["load_records", "decode_stored", "instance_from_stored", "absent_value"]


@dataclass(frozen=True)
class _Plan:
    """How one model's hashes are read, worked out once per model (its fields are fixed when the
    class is made): each stored field with its hash entry, the names held on the record, and the
    fields with a :meth:`~Field.loaded_value` of their own (every other field's is MISSING)."""

    stored: tuple[tuple[str, bytes, Field[Any]], ...]
    held: frozenset[str]
    loaded: tuple[Field[Any], ...]


def _plan(model: ModelClass) -> _Plan:
    """The :class:`_Plan` of ``model``, kept on its ``_meta``."""
    meta = model._meta
    plan: _Plan | None = meta._load_plan
    if plan is None:
        fields = meta.fields.values()
        plan = meta._load_plan = _Plan(
            tuple((f.name, f.name.encode(), f) for f in meta.stored_fields()),
            frozenset(f.name for f in fields if f.held_on_record),
            tuple(f for f in fields if type(f).loaded_value is not Field.loaded_value),
        )
    return plan


def decode_stored(model: ModelClass, key: DbKey, raw: dict[bytes, bytes]) -> dict[str, Any]:
    """Field values of the hash stored at ``key``, by field name (absent fields: :func:`absent_value`).

    The key fields the hash leaves out come from ``key`` (:mod:`.key_values`).
    """
    values = {}
    for name, entry, field in _plan(model).stored:
        encoded = raw.get(entry)
        values[name] = absent_value(field) if encoded is None else field.decode(encoded)
    return with_key_values(model._meta, key, values)


def absent_value(field: Field[Any]) -> Any:
    """What a record whose hash has no entry for ``field`` holds: the field's default when it is a
    constant or a type (``default=list``), so a field added after records were stored reads its
    default on them; None when there is no default or it is computed by a function (``time.time``
    would give another value at each read)."""
    default = field._default
    if default is MISSING or (callable(default) and not isinstance(default, type)):
        return None
    return field.default()


def instance_from_stored(model: ModelClass, key: DbKey, raw: dict[bytes, bytes]) -> Any:
    """A model instance holding the values of the hash stored at ``key``."""
    instance = model.__new__(model)
    plan = _plan(model)
    for name, value in decode_stored(model, key, raw).items():
        if name in plan.held:
            setattr(instance, name, value)
    for field in plan.loaded:
        loaded = field.loaded_value(raw)
        if loaded is not MISSING:
            setattr(instance, field.name, loaded)
    instance._saved_key = key
    instance._was_stored = True
    return instance


def load_records(model: ModelClass, keys: Iterable[DbKey], *, track: bool = True) -> list[Any]:
    """Hydrate records in one pipelined round trip; keys with no stored hash are skipped.

    With ``track`` the model's read effects (``Model.queue_read_effects``, e.g. staging an
    access) ride in the same round trip.
    """
    keys = list(keys)
    if not keys:
        return []
    client = model._meta.client
    with server_errors(client), client.pipeline(transaction=False) as pipe:
        for key in keys:
            pipe.hgetall(key.redis_key)
        if track:
            model.queue_read_effects(pipe, keys)
        raws = pipe.execute()[: len(keys)]
    return [instance_from_stored(model, key, raw) for key, raw in zip(keys, raws) if raw]
