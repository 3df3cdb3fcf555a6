"""The HCE session's keys read and written by Redis type, for its export and load.

An export copies every key of a session as it is stored (``hash``, ``zset``, ``list`` or
``string``); a load writes them back in one MULTI/EXEC after deleting what the session held.
Every raw Redis call of :mod:`.export` goes through here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ...store._keys import KeyKind, KeySpace

__all__ = ["record_ids", "read_typed", "queue_replace", "delete_keys"]

_READ = {"hash": "hgetall", "zset": "zrange", "list": "lrange", "string": "get"}


def record_ids(client: Any, spaces: Mapping[str, KeySpace], references: str) -> tuple[dict[str, list[str]], list[str]]:
    """Each model's record ids, and the terms of the keyword index whose references hash is
    ``references`` (one posting list each): one MULTI/EXEC."""
    with client.pipeline(transaction=True) as pipe:
        for space in spaces.values():
            pipe.zrange(space.key(KeyKind.ALL_RECORDS), 0, -1)
        pipe.hkeys(references)
        *replies, terms = pipe.execute()
    return {name: [m.decode() for m in ids] for name, ids in zip(spaces, replies)}, sorted(t.decode() for t in terms)


def read_typed(client: Any, keys: Sequence[tuple[str, str]]) -> list[Any]:
    """The content of each (key, Redis type), in one MULTI/EXEC: a hash's mapping, a sorted set's
    (member, score) pairs, a list's items, a string's value."""
    with client.pipeline(transaction=True) as pipe:
        for key, kind in keys:
            _queue_read(pipe, key, kind)
        replies: list[Any] = pipe.execute()
    return replies


def _queue_read(pipe: Any, key: str, kind: str) -> None:
    if kind == "zset":
        pipe.zrange(key, 0, -1, withscores=True)
    elif kind == "list":
        pipe.lrange(key, 0, -1)
    else:
        getattr(pipe, _READ[kind])(key)


def queue_replace(pipe: Any, old: Sequence[str], writes: Sequence[tuple[str, str, Any]]) -> None:
    """Queue the deletion of the ``old`` keys, then each (key, Redis type, content) written anew."""
    for key in old:
        pipe.delete(key)
    for key, kind, value in writes:
        pipe.delete(key)  # a key of another type that is not the session's would fail the EXEC
        _queue_write(pipe, key, kind, value)


def _queue_write(pipe: Any, key: str, kind: str, value: Any) -> None:
    if kind == "hash":
        pipe.hset(key, mapping=value)
    elif kind == "zset":
        pipe.zadd(key, value)
    elif kind == "list":
        pipe.rpush(key, *value)
    else:
        pipe.set(key, value)


def delete_keys(client: Any, keys: Sequence[str]) -> int:
    """Delete ``keys`` in one MULTI/EXEC; how many existed."""
    with client.pipeline(transaction=True) as pipe:
        pipe.delete(*keys)
        return int(pipe.execute()[0])
