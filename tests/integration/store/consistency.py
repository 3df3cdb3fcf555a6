"""An independent check that every record and every index entry of a model agree."""

from __future__ import annotations

from redmem.model._dbkey import DbKey
from redmem.model._indexed import KeyField, SortedField, TagField
from redmem.model._loading import decode_stored
from redmem.store._keys import GLOBAL_TAG, KeySpace, escape


def partitions(model, client) -> list[KeySpace]:
    meta = model._meta
    if not meta.partition_fields:
        return [meta.keyspace()]
    tags = client.smembers(meta.global_keyspace().key("partitions"))
    base = meta.global_keyspace()
    return [KeySpace(base.prefix, base.model, t.decode()) for t in tags]


def assert_consistent(model, client, all_keys: set[str]) -> int:
    """Check records against indexes both ways; returns how many records were checked."""
    meta = model._meta
    seen_keys: set[str] = set()
    checked = 0
    for space in partitions(model, client):
        ids = {m.decode() for m in client.zrange(space.key("all"), 0, -1)}
        seen_keys.add(space.key("all"))
        expected: dict[str, set[str]] = {}
        scores: dict[str, dict[str, float]] = {}
        for record_id in ids:
            raw = client.hgetall(space.record(record_id))
            assert raw, f"{space.record(record_id)} is listed but has no hash"
            seen_keys.add(space.record(record_id))
            checked += 1
            values = decode_stored(model, DbKey(space, record_id), raw)  # key fields from the key name
            for name, field in meta.fields.items():
                value = values.get(name)
                if isinstance(field, SortedField) and value is not None:
                    scores.setdefault(space.key("z", name), {})[record_id] = field.score(value)
                elif isinstance(field, TagField):
                    for tag in value or ():
                        expected.setdefault(space.value_key("t", name, tag), set()).add(record_id)
                elif isinstance(field, KeyField) and field.value_indexed:
                    expected.setdefault(space.value_key("k", name, field.key_text(value)), set()).add(record_id)
        for key, members in expected.items():
            assert {m.decode() for m in client.smembers(key)} == members, key
            seen_keys.add(key)
        for name, field in meta.fields.items():
            if isinstance(field, SortedField):
                key = space.key("z", name)
                stored = {m.decode(): s for m, s in client.zrange(key, 0, -1, withscores=True)}
                assert stored == scores.get(key, {}), key
                if stored:
                    seen_keys.add(key)
    registry = meta.global_keyspace().key("partitions") if meta.partition_fields else None
    prefix = f"{meta.keyspace().prefix}:{meta.name}:"
    leftovers = {k for k in all_keys if k.startswith(prefix)} - seen_keys - {registry}
    assert not leftovers, f"keys no record accounts for: {sorted(leftovers)[:5]}"
    return checked


__all__ = ["assert_consistent", "partitions", "escape", "GLOBAL_TAG"]
