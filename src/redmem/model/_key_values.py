"""Key-derived fields: the key field values a record hash leaves out because its key name holds them.

A record lives at ``<prefix>:<Model>:{<partition>}:r:<record id>``: the tag is the partition
fields' key texts, the record id the other key fields' (``KeyField.key_text``), each escaped
(:func:`~redmem.store._keys.escape`, injective, never yielding ``:``) and joined by ``:``. So
unescaping the key's parts gives every key field's text back. A key field whose hash entry is
exactly that text, ``field.encode(value) == field.key_text(value)`` (an AutoKeyField, a str or
int KeyField: both are ``str(value)``), decodes from the key to the value its entry would give,
and the hash does not repeat it. Measured on 100k LoCoMo memories (hashtable-encoded hashes),
leaving out ``memory_id`` and ``agent_id`` takes MEMORY USAGE of a record hash from 584 to 440 B.

Reads fill a field the hash lacks from the key (:func:`with_key_values`); a hash written by an
older version, which holds the entries, reads as before: its own entry wins.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..store._keys import unescape
from ._dbkey import DbKey

if TYPE_CHECKING:
    from ._options import Options

__all__ = ["key_derived_fields", "key_values", "with_key_values"]


def key_derived_fields(meta: Options, values: dict[str, Any]) -> set[str]:
    """Names of the key fields whose hash entry for ``values`` would equal their text in the key."""
    derived = set()
    for name in meta.key_fields:
        value = values.get(name)
        if value is not None:
            field = meta.key_field(name)
            if field.encode(value) == field.key_text(value):
                derived.add(name)
    return derived


def key_values(meta: Options, key: DbKey) -> dict[str, Any]:
    """Every key field's value as decoded from ``key`` (its unescaped text through the field's codec)."""
    texts = dict(zip(meta.partition_fields, key.partition))
    if meta.id_fields:
        texts.update(zip(meta.id_fields, (unescape(part) for part in key.record_id.split(":"))))
    return {name: meta.key_field(name).decode(text.encode("utf-8")) for name, text in texts.items()}


def with_key_values(meta: Options, key: DbKey, values: dict[str, Any]) -> dict[str, Any]:
    """``values`` (a stored hash's, decoded) with the key fields it lacks filled from ``key``."""
    if all(values.get(name) is not None for name in meta.key_fields):
        return values
    from_key = key_values(meta, key)
    return {name: from_key.get(name) if value is None else value for name, value in values.items()}
