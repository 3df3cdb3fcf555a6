"""Every key of one tenant, found by its hash tag rather than field by field: listed, erased, dumped
and restored.

All keys of a partition share its hash tag, ``<prefix>:<Model>:{<tag>}:...`` (:mod:`.keys`), and
the models a tenant's data spans (its memories, and e.g. the recall proposals about them) use the
same tag. Neither a prefix, a model name nor an escaped value can hold a glob character or a
brace, so ``SCAN MATCH <prefix>:*:{<tag>}:*`` on the node owning the tag's slot lists exactly the
tenant's keys under that prefix, whatever model or primitive wrote them: a field or key kind
added later is erased and exported with no change here. A key's dump is plain JSON (one dict per key, values as text, or
base64 when they are not UTF-8), so an export reads in any editor and restores on any server
version, unlike ``DUMP``'s RDB payload.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from ._aio import is_cluster
from ._connection import server_errors
from ._errors import ValidationError
from ._keys import KeySpace

__all__ = ["TenantKeys", "list_tenant_keys", "erase_tenant_keys", "dump_keys", "restore_keys", "KeyDump", "encode_bytes", "decode_bytes"]

#: One key's dump: ``key`` (the part after the prefix, ``<Model>:{<tag>}:...``), ``type``, ``ttl_ms`` (None: no
#: expiry) and ``value`` (its type's content, see :func:`dump_keys`).
KeyDump = dict[str, Any]
#: Keys read or written per pipeline.
BATCH = 500
#: Members per command when a large hash, set, sorted set or list is restored.
CHUNK = 1000
#: Erase passes before keys still appearing (a concurrent writer) are reported as left.
ERASE_PASSES = 3


def encode_bytes(raw: bytes) -> str | dict[str, str]:
    """``raw`` as text when it is UTF-8, else ``{"b64": <base64>}`` (vectors, bitmaps)."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return {"b64": base64.b64encode(raw).decode("ascii")}


def decode_bytes(value: str | dict[str, str]) -> bytes:
    """Invert :func:`encode_bytes`."""
    return base64.b64decode(value["b64"]) if isinstance(value, dict) else value.encode("utf-8")


@dataclass(frozen=True)
class TenantKeys:
    """The keys of one tenant (hash tag ``tag``, escaped) under one key prefix, of every model."""

    prefix: str
    tag: str

    @classmethod
    def of(cls, space: KeySpace) -> TenantKeys:
        """The tenant of a model's partition key space (under the same prefix)."""
        return cls(space.prefix, space.tag)

    @property
    def pattern(self) -> str:
        return f"{self.prefix}:*:{{{self.tag}}}:*"

    def key(self, relative: str) -> str:
        """The full key of ``relative`` (``<Model>:{<tag>}:...``); ValidationError for one of another
        tenant, so an export cannot write outside the tenant it names."""
        model, _, rest = relative.partition(":")
        if not model or "{" in model or not rest.startswith(f"{{{self.tag}}}:"):
            raise ValidationError(f"{relative!r} is not a key of the tenant {{{self.tag}}}")
        return f"{self.prefix}:{relative}"

    def relative(self, key: bytes) -> str:
        return key.decode()[len(self.prefix) + 1 :]

    def scan_options(self, client: Any) -> dict[str, Any]:
        options: dict[str, Any] = {"match": self.pattern, "count": 1000}
        if is_cluster(client):
            options["target_nodes"] = client.get_node_from_key(f"{{{self.tag}}}")
        return options


def list_tenant_keys(client: Any, tenant: TenantKeys) -> list[bytes]:
    """Every key of ``tenant``, sorted (one ``SCAN`` of the node owning its slot)."""
    with server_errors(client):
        return sorted(set(client.scan_iter(**tenant.scan_options(client))))


def erase_tenant_keys(client: Any, tenant: TenantKeys) -> tuple[int, int, set[str]]:
    """Unlink every key of ``tenant``, then list them again; returns (keys erased, keys left, the
    names of the models the erased keys belonged to).

    Keys written meanwhile by another client are erased by the next pass, up to
    :data:`ERASE_PASSES`; a partition still written to after that reports what is left.
    """
    erased, models = 0, set[str]()
    for _ in range(ERASE_PASSES):
        keys = list_tenant_keys(client, tenant)
        if not keys:
            return erased, 0, models
        models |= {tenant.relative(key).partition(":")[0] for key in keys}
        with server_errors(client):
            for start in range(0, len(keys), BATCH):
                erased += client.unlink(*keys[start : start + BATCH])
    return erased, len(list_tenant_keys(client, tenant)), models


def dump_keys(client: Any, tenant: TenantKeys) -> Iterator[KeyDump]:
    """The dump of every key of the partition, in key order.

    Values: a string's bytes; a hash's ``[field, value]`` pairs; a set's members, a list's
    items; a sorted set's ``[member, score]`` pairs, the score as the server prints it (exact,
    ``inf`` included); a stream's ``entries`` (``[id, [field, value, ...]]``), ``last_id`` and
    ``groups`` (name and last delivered id; pending entries are not kept).
    """
    keys = list_tenant_keys(client, tenant)
    for start in range(0, len(keys), BATCH):
        batch = keys[start : start + BATCH]
        with server_errors(client):
            with client.pipeline(transaction=False) as pipe:
                for key in batch:
                    pipe.type(key)
                    pipe.pttl(key)
                replies = pipe.execute()
            types = [kind.decode() for kind in replies[0::2]]
            values = _read_values(client, batch, types)
        for key, kind, ttl, value in zip(batch, types, replies[1::2], values):
            if kind != "none":  # expired or erased since the scan
                yield {"key": tenant.relative(key), "type": kind,
                       "ttl_ms": ttl if ttl >= 0 else None, "value": value}


def _read_values(client: Any, keys: list[bytes], types: list[str]) -> list[Any]:
    """Each key's content by its type, read in one pipeline."""
    readers: dict[str, Callable[[Any, bytes], object]] = {
        "string": lambda pipe, key: pipe.get(key),
        "hash": lambda pipe, key: pipe.hgetall(key),
        "set": lambda pipe, key: pipe.smembers(key),
        "list": lambda pipe, key: pipe.lrange(key, 0, -1),
        "zset": lambda pipe, key: pipe.zrange(key, 0, -1, withscores=True, score_cast_func=_score_text),
        "stream": lambda pipe, key: (pipe.xrange(key), pipe.xinfo_stream(key), pipe.xinfo_groups(key)),
        "none": lambda pipe, key: None,
    }
    width = {"stream": 3, "none": 0}
    with client.pipeline(transaction=False) as pipe:
        for key, kind in zip(keys, types):
            readers[kind](pipe, key)
        replies = iter(pipe.execute())
    read = [[next(replies) for _ in range(width.get(kind, 1))] for kind in types]
    return [_encoded(kind, parts) for kind, parts in zip(types, read)]


def _encoded(kind: str, parts: list[Any]) -> Any:
    """A key's content as JSON values (see :func:`dump_keys`)."""
    if kind == "none":
        return None
    raw = parts[0]
    if kind == "string":
        return encode_bytes(raw)
    if kind == "hash":
        return [[encode_bytes(field), encode_bytes(value)] for field, value in sorted(raw.items())]
    if kind == "set":
        return [encode_bytes(member) for member in sorted(raw)]
    if kind == "list":
        return [encode_bytes(item) for item in raw]
    if kind == "zset":
        return [[encode_bytes(member), score] for member, score in raw]
    info, groups = parts[1], parts[2]
    return {
        "entries": [[entry_id.decode(), [encode_bytes(part) for pair in fields.items() for part in pair]]
                    for entry_id, fields in raw],
        "last_id": _text(info["last-generated-id"]),
        "groups": [[_text(group["name"]), _text(group["last-delivered-id"])] for group in groups],
    }


def _score_text(score: bytes | float) -> str:
    """A sorted-set score as text that reads back as the same double (``inf`` included)."""
    return score.decode() if isinstance(score, bytes) else repr(float(score))


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


def restore_keys(client: Any, tenant: TenantKeys, dumps: Iterable[KeyDump]) -> tuple[int, set[str]]:
    """Write each dumped key of ``tenant`` (with its TTL); returns how many keys were written and
    the names of their models.

    Writes are pipelined, not one transaction: restore into an empty tenant (a key that already
    exists gets the dumped content added to it). A dump naming a key of another tenant is refused
    with ValidationError when its batch is reached.
    """
    written, models = 0, set[str]()
    pending: list[KeyDump] = []
    for dump in dumps:
        pending.append(dump)
        models.add(str(dump["key"]).partition(":")[0])
        if len(pending) == BATCH:
            written += _restore_batch(client, tenant, pending)
            pending = []
    return written + (_restore_batch(client, tenant, pending) if pending else 0), models


def _restore_batch(client: Any, tenant: TenantKeys, dumps: list[KeyDump]) -> int:
    keys = [tenant.key(dump["key"]) for dump in dumps]
    with server_errors(client), client.pipeline(transaction=False) as pipe:
        for key, dump in zip(keys, dumps):
            _queue_value(pipe, key, dump["type"], dump["value"])
            if dump.get("ttl_ms") is not None:
                pipe.pexpire(key, dump["ttl_ms"])
        pipe.execute()
    return len(dumps)


def _chunks(items: list[Any]) -> Iterator[list[Any]]:
    for start in range(0, len(items), CHUNK):
        yield items[start : start + CHUNK]


def _queue_value(pipe: Any, key: str, kind: str, value: Any) -> None:
    """Queue the commands that write one dumped value."""
    if kind == "string":
        pipe.set(key, decode_bytes(value))
    elif kind == "hash":
        for chunk in _chunks(value):
            pipe.hset(key, mapping={decode_bytes(field): decode_bytes(item) for field, item in chunk})
    elif kind == "set":
        for chunk in _chunks(value):
            pipe.sadd(key, *[decode_bytes(member) for member in chunk])
    elif kind == "list":
        for chunk in _chunks(value):
            pipe.rpush(key, *[decode_bytes(item) for item in chunk])
    elif kind == "zset":
        for chunk in _chunks(value):
            pipe.zadd(key, {decode_bytes(member): score for member, score in chunk})
    elif kind == "stream":
        _queue_stream(pipe, key, value)
    else:
        raise ValidationError(f"cannot restore a key of type {kind!r}")


def _queue_stream(pipe: Any, key: str, value: dict[str, Any]) -> None:
    for entry_id, parts in value["entries"]:
        raw = [decode_bytes(part) for part in parts]
        pipe.xadd(key, dict(zip(raw[0::2], raw[1::2])), id=entry_id)
    if not value["entries"]:
        pipe.xgroup_create(key, "redmem-restore", id="0", mkstream=True)
        pipe.xgroup_destroy(key, "redmem-restore")
    pipe.execute_command("XSETID", key, value["last_id"])
    for name, last_delivered in value["groups"]:
        pipe.xgroup_create(key, name, id=last_delivered)
