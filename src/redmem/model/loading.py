"""Loading records: stored hashes decoded into model instances, many keys in one pipelined round trip."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ..store.connection import server_errors
from .dbkey import DbKey
from .key_values import with_key_values

if TYPE_CHECKING:
    from .base import Model

__all__ = ["load_records", "decode_stored", "instance_from_stored"]


def decode_stored(model: type[Model], key: DbKey, raw: dict[bytes, bytes]) -> dict[str, Any]:
    """Field values of the hash stored at ``key``, by field name (absent fields are None).

    The key fields the hash leaves out come from ``key`` (:mod:`.key_values`).
    """
    values = {}
    for field in model._meta.stored_fields():
        encoded = raw.get(field.name.encode())
        values[field.name] = None if encoded is None else field.decode(encoded)
    return with_key_values(model._meta, key, values)


def instance_from_stored(model: type[Model], key: DbKey, raw: dict[bytes, bytes]) -> Any:
    """A model instance holding the values of the hash stored at ``key``."""
    instance = model.__new__(model)
    for name, value in decode_stored(model, key, raw).items():
        setattr(instance, name, value)
    instance._saved_key = key
    instance._was_stored = True
    return instance


def load_records(model: type[Model], keys: Iterable[DbKey], *, track: bool = True) -> list[Any]:
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
