"""Loading records: stored hashes decoded into model instances, many keys in one pipelined round trip."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..store._connection import server_errors
from ._dbkey import DbKey
from ._field import MISSING, Field
from ._key_values import with_key_values
from ._model_class import ModelClass

__all__ = ["load_records", "decode_stored", "instance_from_stored", "absent_value"]


def decode_stored(model: ModelClass, key: DbKey, raw: dict[bytes, bytes]) -> dict[str, Any]:
    """Field values of the hash stored at ``key``, by field name (absent fields: :func:`absent_value`).

    The key fields the hash leaves out come from ``key`` (:mod:`.key_values`).
    """
    values = {}
    for field in model._meta.stored_fields():
        encoded = raw.get(field.name.encode())
        values[field.name] = absent_value(field) if encoded is None else field.decode(encoded)
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
    fields = model._meta.fields
    for name, value in decode_stored(model, key, raw).items():
        if fields[name].held_on_record:
            setattr(instance, name, value)
    for field in fields.values():
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
