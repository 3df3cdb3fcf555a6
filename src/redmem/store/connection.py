"""Connecting to Redis: explicit URL, else ``REDIS_URL``, else a private embedded server."""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any

import redis
from redis.backoff import ExponentialBackoff
from redis.cluster import RedisCluster
from redis.retry import Retry

from .embedded import EmbeddedServer
from .errors import ConfigurationError, PermissionDenied, ServerUnavailable
from .keys import check_name

__all__ = [
    "connect",
    "configure",
    "embedded_server",
    "get_client",
    "settings",
    "server_address",
    "server_errors",
]

CLUSTER_SCHEMES = {"redis+cluster": "redis", "rediss+cluster": "rediss"}
_RETRIED = (redis.ConnectionError, redis.TimeoutError)
#: How Redis words an ACL refusal of a command a Lua script runs (not a NOPERM error).
_SCRIPT_REFUSED = "The user executing the script can't"


@dataclass(frozen=True)
class Settings:
    """Library-wide defaults that models and recipes read when not told otherwise."""

    client: Any = None
    key_prefix: str = "rm"
    embedding_provider: Any = None
    token_counter: Any = None
    partition_registry: bool = True
    extras: dict = field(default_factory=dict)


_settings = Settings()
_lock = threading.Lock()
_embedded = None


def settings() -> Settings:
    """The current library-wide defaults."""
    return _settings


def configure(**options: Any) -> Settings:
    """Change library-wide defaults: ``client``, ``key_prefix``, ``embedding_provider``, ``token_counter``,
    ``partition_registry`` (keep the best-effort registry of partitions; see :mod:`redmem.model.registry`)."""
    global _settings
    unknown = set(options) - {"client", "key_prefix", "embedding_provider", "token_counter", "partition_registry"}
    if unknown:
        raise ConfigurationError(f"unknown redmem setting(s): {', '.join(sorted(unknown))}")
    if not isinstance(options.get("partition_registry", True), bool):
        raise ConfigurationError(
            f"partition_registry must be True or False, got {options['partition_registry']!r}"
        )
    if "key_prefix" in options:
        check_name(options["key_prefix"], "key_prefix")
    _settings = replace(_settings, **options)
    return _settings


def _retry() -> Retry:
    """Retry connection errors 5 times, backing off 0.05 s doubling to 1 s (about 1.5 s in all)."""
    return Retry(ExponentialBackoff(cap=1.0, base=0.05), retries=5, supported_errors=_RETRIED)


def _client_for(url: str, cluster: bool, options: dict) -> Any:
    scheme, _, rest = url.partition("://")
    if scheme in CLUSTER_SCHEMES:
        url, cluster = f"{CLUSTER_SCHEMES[scheme]}://{rest}", True
    elif scheme not in {"redis", "rediss", "unix"}:
        raise ConfigurationError(
            f"unsupported Redis URL scheme {scheme!r}: use redis://, rediss://, unix:// "
            "or redis+cluster://"
        )
    options = {"retry": _retry(), **options}
    if cluster:
        if scheme == "unix":
            raise ConfigurationError("a Redis Cluster cannot be reached through a unix socket")
        return RedisCluster.from_url(url, **options)
    options.setdefault("retry_on_error", list(_RETRIED))
    return redis.Redis.from_url(url, **options)


def _embedded_url() -> str:
    global _embedded
    if _embedded is None:
        _embedded = EmbeddedServer()
        _embedded.start()
    return _embedded.url


def embedded_server() -> EmbeddedServer | None:
    """The private server started by :func:`connect`, if one was."""
    return _embedded


def connect(url: str | None = None, *, cluster: bool = False, **options: Any) -> Any:
    """Open a client and make it the default for every model.

    ``url`` wins, then the ``REDIS_URL`` environment variable, then a private embedded server
    started on first use and stopped at interpreter exit. ``redis+cluster://host:port`` or
    ``cluster=True`` gives a ``RedisCluster``; other ``options`` go to redis-py.
    """
    with _lock:
        url = url or os.environ.get("REDIS_URL") or _embedded_url()
        client = _client_for(url, cluster, options)
        with server_errors(client):
            client.ping()
        configure(client=client)
    return client


def get_client() -> Any:
    """The default client, connecting on first use."""
    return _settings.client if _settings.client is not None else connect()


def server_address(client: Any) -> str:
    """A human-readable address of the server(s) behind ``client``."""
    if isinstance(client, RedisCluster):
        nodes = client.get_nodes() or []
        return "cluster " + ",".join(f"{n.host}:{n.port}" for n in nodes[:3])
    kwargs = client.connection_pool.connection_kwargs
    if "path" in kwargs:
        return f"unix:{kwargs['path']}"
    return f"{kwargs.get('host', 'localhost')}:{kwargs.get('port', 6379)}"


@contextlib.contextmanager
def server_errors(client: Any) -> Iterator[None]:
    """Turn redis-py connection failures into :class:`ServerUnavailable` and ACL refusals
    (``NOPERM``, or a script refused a command by the ACL) into :class:`PermissionDenied`, each
    naming the server."""
    try:
        yield
    except redis.exceptions.NoPermissionError as exc:
        raise PermissionDenied(server_address(client), exc) from exc
    except redis.exceptions.ResponseError as exc:
        if _SCRIPT_REFUSED in str(exc):
            raise PermissionDenied(server_address(client), exc) from exc
        raise
    except _RETRIED as exc:
        raise ServerUnavailable(server_address(client), exc) from exc
    except redis.exceptions.ClusterError as exc:
        raise ServerUnavailable(server_address(client), exc) from exc
