"""The partition registry: an optional, best-effort list of a partitioned model's partitions.

``<prefix>:<Model>:{%g}:partitions`` (a set of partition hash tags) lets a query that names no
partition, and :func:`~redmem.fields._reindex.reindex`, find every partition. It lives in a slot
of its own, so it is kept outside every record's write: a tenant's save touches only keys
under the tenant's hash tag, and the registry is updated by a separate ``SADD`` just before
the write. A registry that cannot be written (its cluster node is down, the user's ACL does
not cover it) is logged and ignored, so it never fails a tenant's write; registry updates then
pause for :data:`RETRY_AFTER` seconds so a dead node does not slow every save.

To keep saves at one round trip, a process adds a partition at most once per :data:`REFRESH`
seconds (a registry that was lost, e.g. in a rollback, is filled again by the next writes, or
at once by :func:`rebuild_registry`).

``redmem.configure(partition_registry=False)`` turns the registry off (per-tenant ACL users
cannot write it; ``partition_registry = False`` in a model's ``Meta`` turns it off for that model): saves then never touch it, and partition-less queries and reindex find the
partitions by ``SCAN`` of ``<prefix>:<Model>:{*}:all`` on every node, which reads the whole
keyspace, so keep them for administration.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any
from weakref import WeakKeyDictionary

from redis.cluster import RedisCluster
from redis.exceptions import NoPermissionError, RedisClusterException, RedisError

from ..store._aio import is_cluster
from ..store._connection import server_errors
from ..store._errors import PermissionDenied
from ..store._keys import GLOBAL_TAG, KeyKind, KeySpace
from ._model_class import ModelClass

if TYPE_CHECKING:
    from ._options import Options

__all__ = ["PARTITIONS", "REFRESH", "RETRY_AFTER", "register", "relist", "unregister", "listed_partitions", "scan_partitions", "rebuild_registry"]

logger = logging.getLogger(__name__)

#: Key kind of the registry under the model's ``{%g}`` tag.
PARTITIONS = KeyKind.PARTITIONS
#: A process adds a given partition to the registry at most once per this many seconds.
REFRESH = 60.0
#: After a failed registry update, updates through that client pause this many seconds.
RETRY_AFTER = 30.0
_KEPT = 100_000

_lock = threading.Lock()
_added: WeakKeyDictionary[Any, dict[tuple[str, str], float]] = WeakKeyDictionary()
_paused_until: WeakKeyDictionary[Any, float] = WeakKeyDictionary()


def registry_key(meta: Options) -> str:
    """The registry set of the model described by ``meta``."""
    return meta.global_keyspace().key(PARTITIONS)


def register(meta: Any, client: Any, tags: Iterable[str]) -> None:
    """Add partitions (hash tags) to the registry, best effort: errors are logged, never raised.

    Does nothing for an unpartitioned model, with the registry turned off, for tags this process
    added less than :data:`REFRESH` seconds ago, or while updates through ``client`` are paused.
    """
    if not meta.partition_fields or not meta.partition_registry:
        return
    key, now = registry_key(meta), time.monotonic()
    with _lock:
        if _paused_until.get(client, 0.0) > now:
            return
        added = _added.setdefault(client, {})
        due = sorted({tag for tag in tags if added.get((key, tag), -REFRESH) + REFRESH <= now})
    if not due:
        return
    try:
        client.sadd(key, *due)
    except (RedisError, RedisClusterException, OSError) as exc:
        with _lock:
            _paused_until[client] = now + RETRY_AFTER
        logger.warning(
            "partition registry %s not updated (%s); the write goes on, registry updates pause %.0f s. "
            "Per-tenant ACL users: redmem.configure(partition_registry=False)", key, exc, RETRY_AFTER,
        )
        return
    with _lock:
        if len(added) > _KEPT:
            added.clear()
        added.update(((key, tag), now) for tag in due)


def relist(client: Any, prefix: str, model_names: Iterable[str], tag: str) -> None:
    """Add a partition (hash tag) to the registries of the models named ``model_names`` (after an
    import wrote their keys); errors are raised."""
    with server_errors(client):
        for name in model_names:
            client.sadd(KeySpace(prefix, name, GLOBAL_TAG).key(PARTITIONS), tag)


def unregister(client: Any, prefix: str, model_name: str, tag: str) -> bool:
    """Remove a partition (hash tag) from the registry of the model named ``model_name``, and from
    what this process remembers having added, so its next write registers it again; returns
    whether the registry listed it. Unlike :func:`register`, errors are raised.
    """
    key = KeySpace(prefix, model_name, GLOBAL_TAG).key(PARTITIONS)
    with _lock:
        _added.get(client, {}).pop((key, tag), None)
    with server_errors(client):
        return bool(client.srem(key, tag))


def listed_partitions(meta: Any, client: Any) -> list[KeySpace]:
    """Every partition of the model: the registry's members, or a SCAN when it is turned off.

    Reading the registry needs read access to its key (an ACL covering one tenant's keys does
    not give it): PermissionDenied says so.
    """
    if not meta.partition_registry:
        return scan_partitions(meta, client)
    key = registry_key(meta)
    try:
        with server_errors(client):
            tags = client.smembers(key)
    except PermissionDenied as exc:
        raise PermissionDenied(
            exc.address, f"reading the partition registry {key} ({exc.__cause__}); a query that names "
            "no partition needs it: name the partition, or grant read access to that key",
        ) from exc
    base = meta.global_keyspace()
    return [KeySpace(base.prefix, base.model, tag.decode()) for tag in sorted(tags)]


def scan_partitions(meta: Any, client: Any) -> list[KeySpace]:
    """Every partition holding records that ``client`` may read, found by
    ``SCAN MATCH <prefix>:<Model>:{*}:all`` on every node.

    Prefix and model names cannot hold glob characters or braces, and escaped partition values
    cannot hold ``}``, so the pattern matches exactly one key per partition. ``SCAN`` lists key
    names whatever the caller's ACL key patterns, so each partition found is then checked with
    one ``EXISTS`` of its id set (pipelined): one the ACL refuses is left out, and a caller
    confined to one tenant never learns another tenant's name through a query.
    """
    base = meta.global_keyspace()
    head, tail = f"{base.prefix}:{base.model}:{{", f"}}:{KeyKind.ALL_RECORDS}"
    options: dict[str, Any] = {"match": f"{head}*{tail}", "count": 1000, "_type": "zset"}
    if is_cluster(client):
        options["target_nodes"] = RedisCluster.PRIMARIES
    with server_errors(client):
        keys = sorted({raw.decode() for raw in client.scan_iter(**options)})
        keys = _readable(client, [key for key in keys if key[len(head) : -len(tail)] != GLOBAL_TAG])
    return [KeySpace(base.prefix, base.model, key[len(head) : -len(tail)]) for key in keys]


def _readable(client: Any, keys: list[str]) -> list[str]:
    """The ``keys`` the caller's ACL lets it read (a NOPERM reply leaves a key out)."""
    if not keys:
        return keys
    with client.pipeline(transaction=False) as pipe:
        for key in keys:
            pipe.exists(key)
        replies = pipe.execute(raise_on_error=False)
    refused = [reply for reply in replies if isinstance(reply, Exception) and not isinstance(reply, NoPermissionError)]
    if refused:
        raise refused[0]
    return [key for key, reply in zip(keys, replies) if not isinstance(reply, Exception)]


def rebuild_registry(model: ModelClass) -> int:
    """Add every partition found by :func:`scan_partitions` to the registry; returns how many.

    For an operator after a rollback lost registry entries, or when turning the registry on
    after running without it. Errors are raised (this is not the best-effort path).
    """
    meta, client = model._meta, model._meta.client
    tags = [space.tag for space in scan_partitions(meta, client)]
    if tags:
        with server_errors(client):
            client.sadd(registry_key(meta), *tags)
    return len(tags)
