"""Connecting to Redis: explicit URL, else ``REDIS_URL``, else the persistent local server
(:mod:`redmem.store._local_server`); a private throwaway server only when asked for.

Default timeouts bound how long a dead server takes to be reported (``ServerUnavailable``):
a command is tried ``1 + RETRIES`` times, each attempt waiting at most ``SOCKET_TIMEOUT`` for a
reply (``CONNECT_TIMEOUT`` for a TCP connect), with a ``0.25`` s pause in between:
``2 * 1.2 + 0.25 = 2.65`` s at worst, about 0.25 s for a refused connection
(``benchmarks/failure_detection.py`` measures it). A reconnect inside a retried command is
tried once, so attempts add up instead of multiplying. ``SOCKET_TIMEOUT`` is also the longest
a single read may run on the server (a write's resent copy returns the first copy's stored
reply, so a write may run until the second attempt's timeout: about 2.6 s).
Retried commands are safe: reads may run twice, writes carry operation keys
(:mod:`redmem.store._outcome`). Options given to :func:`connect` win over these defaults.
"""

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

from ._aio import in_worker, is_cluster, loop_facade, unwrapped
from ._embedded import EmbeddedServer
from ._error_map import REDIS_ERRORS, typed_error
from ._errors import ConfigurationError
from ._keys import check_name
from ._local_server import shared_server_url
from ._validation import is_int

__all__ = [
    "connect",
    "configure",
    "embedded_server",
    "get_client",
    "resolved_client",
    "settings",
    "checked_settings",
    "SETTING_NAMES",
    "server_address",
    "server_errors",
    "reply_timeout",
    "never_sent",
    "retry_pauses",
]

#: Attribute set on a redis-py error when no attempt of its command got past connecting.
NEVER_SENT = "redmem_never_sent"
CLUSTER_SCHEMES = {"redis+cluster": "redis", "rediss+cluster": "rediss"}
_RETRIED = (redis.ConnectionError, redis.TimeoutError)
#: Seconds a command waits for its reply, and a TCP connect for its answer, before a retry.
SOCKET_TIMEOUT = 1.2
CONNECT_TIMEOUT = 1.0
#: Retries after the first attempt, pausing BACKOFF_BASE * 2**n s (n = 1, 2..) up to BACKOFF_CAP.
RETRIES = 1
BACKOFF_BASE = 0.125
BACKOFF_CAP = 0.5


#: The settings :func:`configure` changes, which a model's ``Meta`` may also set for that model.
SETTING_NAMES = (
    "client", "key_prefix", "embedding_provider", "token_counter", "partition_registry", "async_client",
    "max_text_bytes",
)
#: The default write-size limit: UTF-8 bytes of one text value of a record (64 KiB).
MAX_TEXT_BYTES = 64 * 1024


@dataclass(frozen=True)
class Settings:
    """Library-wide defaults that models and recipes read when neither they nor the model's
    ``Meta`` say otherwise."""

    client: Any = None
    #: The ``redis.asyncio`` client of the ``a``-prefixed API (None: one made from ``client``
    #: per event loop; see :mod:`redmem.store._aio`).
    async_client: Any = None
    key_prefix: str = "rm"
    embedding_provider: Any = None
    token_counter: Any = None
    partition_registry: bool = True
    #: The most UTF-8 bytes one text value of a record may hold (0 or None: no limit); a save
    #: over it raises MemoryTooLarge (see :mod:`redmem.model._text_limit`).
    max_text_bytes: int | None = MAX_TEXT_BYTES
    extras: dict[str, Any] = field(default_factory=dict)


_settings = Settings()
_lock = threading.Lock()
_embedded = None


def settings() -> Settings:
    """The current library-wide defaults."""
    return _settings


def checked_settings(options: dict[str, Any]) -> dict[str, Any]:
    """``options`` once checked as settings: ConfigurationError for an unknown name, a key prefix
    that would break the key layout or a ``partition_registry`` that is not a bool."""
    unknown = set(options) - set(SETTING_NAMES)
    if unknown:
        raise ConfigurationError(f"unknown redmem setting(s): {', '.join(sorted(unknown))}")
    if not isinstance(options.get("partition_registry", True), bool):
        raise ConfigurationError(
            f"partition_registry must be True or False, got {options['partition_registry']!r}"
        )
    if "key_prefix" in options:
        check_name(options["key_prefix"], "key_prefix")
    limit = options.get("max_text_bytes")
    if limit is not None and (not is_int(limit) or limit < 0):
        raise ConfigurationError(f"max_text_bytes must be an int >= 0 (0 or None: no limit), got {limit!r}")
    return options


def configure(**options: Any) -> Settings:
    """Change library-wide defaults: ``client``, ``async_client``, ``key_prefix``, ``embedding_provider``, ``token_counter``,
    ``partition_registry`` (keep the best-effort registry of partitions; see :mod:`redmem.model._registry`),
    ``max_text_bytes`` (the write-size limit of one text value, default 64 KiB; 0 or None: none).

    A model's ``Meta`` may set any of them for that model (and its subclasses) alone.
    """
    global _settings
    _settings = replace(_settings, **checked_settings(options))
    return _settings


def _failed_connecting(exc: BaseException) -> bool:
    """Whether ``exc`` was raised while its connection was being made (socket or handshake): the
    command it was for had not been sent on that connection."""
    tb = exc.__traceback__
    while tb is not None:
        frame = tb.tb_frame
        if frame.f_code.co_name == "connect_check_health" and frame.f_globals.get("__name__") == "redis.connection":
            return True
        tb = tb.tb_next
    return False


class FlatRetry(Retry):
    """A redis-py ``Retry`` whose nested uses try once: attempts of one command add up, not multiply.

    redis-py retries a reconnect (and its handshake) by the same policy inside a retried command,
    so ``r`` retries would cost ``(r + 1) ** 2`` timeouts against a server that stopped answering.
    When every attempt failed while connecting, the error raised says the command never left
    (its attribute :data:`NEVER_SENT` is True; see :func:`never_sent`).
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._running = threading.local()

    def __deepcopy__(self, memo: dict[str, Any]) -> FlatRetry:
        return FlatRetry(self._backoff, self._retries, self._supported_errors)

    def call_with_retry(self, do: Any, fail: Any, *args: Any, **kwargs: Any) -> Any:
        if getattr(self._running, "active", False):
            return do()
        self._running.active = True
        sent = False

        def attempt() -> Any:
            nonlocal sent
            try:
                return do()
            except BaseException as exc:
                sent = sent or not _failed_connecting(exc)
                raise

        try:
            return super().call_with_retry(attempt, fail, *args, **kwargs)
        except BaseException as exc:
            setattr(exc, NEVER_SENT, not sent)
            raise
        finally:
            self._running.active = False


def never_sent(exc: BaseException) -> bool:
    """Whether no attempt of the command that raised ``exc`` got past connecting (so nothing ran).

    Known only for clients made by :func:`connect` (their :class:`FlatRetry` marks it); False
    when unknown, so a caller errs towards "may have run".
    """
    return bool(getattr(exc, NEVER_SENT, False))


def retry_pauses() -> float:
    """Seconds one command pauses between its attempts, all retries together (0.25 s by default)."""
    return float(sum(min(BACKOFF_CAP, BACKOFF_BASE * 2**n) for n in range(1, RETRIES + 1)))


def _retry() -> Retry:
    """Retry connection errors and timeouts RETRIES times, pausing 0.25 s."""
    return FlatRetry(ExponentialBackoff(cap=BACKOFF_CAP, base=BACKOFF_BASE), retries=RETRIES, supported_errors=_RETRIED)


def _client_for(url: str, cluster: bool, options: dict[str, Any]) -> Any:
    scheme, _, rest = url.partition("://")
    if scheme in CLUSTER_SCHEMES:
        url, cluster = f"{CLUSTER_SCHEMES[scheme]}://{rest}", True
    elif scheme not in {"redis", "rediss", "unix"}:
        raise ConfigurationError(
            f"unsupported Redis URL scheme {scheme!r}: use redis://, rediss://, unix:// "
            "or redis+cluster://"
        )
    options = {
        "retry": _retry(),
        "socket_timeout": SOCKET_TIMEOUT,
        "socket_connect_timeout": CONNECT_TIMEOUT,
        **options,
    }
    if cluster:
        if scheme == "unix":
            raise ConfigurationError("a Redis Cluster cannot be reached through a unix socket")
        try:
            return RedisCluster.from_url(url, **options)
        except REDIS_ERRORS as exc:  # RedisCluster connects as it is made
            raise typed_error(exc, f"cluster {rest}") from exc
    options.setdefault("retry_on_error", list(_RETRIED))
    return redis.Redis.from_url(url, **options)


def _server_url(url: str | None, throwaway: bool) -> str:
    """``url``, else a private throwaway server when asked for, else ``REDIS_URL``, else the local server."""
    if throwaway:
        if url:
            raise ConfigurationError("connect() takes a url or throwaway=True, not both")
        return _embedded_url()
    return url or os.environ.get("REDIS_URL") or shared_server_url()


def _embedded_url() -> str:
    global _embedded
    if _embedded is None:
        _embedded = EmbeddedServer()
        _embedded.start()
    return _embedded.url


def embedded_server() -> EmbeddedServer | None:
    """The private throwaway server started by ``connect(throwaway=True)``, if one was."""
    return _embedded


def connect(url: str | None = None, *, cluster: bool = False, throwaway: bool = False, **options: Any) -> Any:
    """Open a client and make it the default for every model.

    ``url`` wins, then the ``REDIS_URL`` environment variable, then the persistent local server of
    the data directory (``$REDMEM_DATA_DIR``, else ``~/.local/share/redmem``), started on first use
    and shared with every other process, the ``redmem`` commands included; the first connection
    logs where the data lives. ``throwaway=True`` starts a private server instead, which keeps
    nothing and stops at interpreter exit (for demos). ``redis+cluster://host:port`` or
    ``cluster=True`` gives a ``RedisCluster``; other ``options`` go to redis-py and win over
    the defaults (``socket_timeout=1.2``, ``socket_connect_timeout=1.0``, 1 retry): a dead
    server is reported within about 2.7 s. Raise ``socket_timeout`` for reads that may run
    longer than 1.2 s on the server.
    """
    with _lock:
        client = _client_for(_server_url(url, throwaway), cluster, options)
        with server_errors(client):
            client.ping()
        configure(client=client)
    return client


def get_client() -> Any:
    """The default client, connecting on first use (inside the asyncio API: its facade, see
    :func:`resolved_client`)."""
    if _settings.async_client is not None and in_worker():
        return loop_facade(_settings.client, _settings.async_client)
    return resolved_client(_settings.client if _settings.client is not None else connect())


def resolved_client(client: Any) -> Any:
    """The client Redis I/O goes through: ``client`` itself, except inside the asyncio API
    (:func:`~redmem.store._aio.greenlet_spawn`), where it is the facade over ``client``'s
    ``redis.asyncio`` twin made for the running event loop."""
    return loop_facade(client) if in_worker() else client


def server_address(client: Any) -> str:
    """A human-readable address of the server(s) behind ``client``."""
    client = unwrapped(client)
    if is_cluster(client):
        nodes = client.get_nodes() or []
        return "cluster " + ",".join(f"{n.host}:{n.port}" for n in nodes[:3])
    kwargs = client.connection_pool.connection_kwargs
    if "path" in kwargs:
        return f"unix:{kwargs['path']}"
    return f"{kwargs.get('host', 'localhost')}:{kwargs.get('port', 6379)}"


def reply_timeout(client: Any) -> float | None:
    """The seconds ``client`` waits for a reply before it retries (None: no limit)."""
    client = unwrapped(client)
    if isinstance(client, RedisCluster):
        return client.nodes_manager.connection_kwargs.get("socket_timeout")
    if is_cluster(client):
        return client.connection_kwargs.get("socket_timeout")  # type: ignore[no-any-return]  # redis.asyncio: dict[str, Any]
    timeout: float | None = client.connection_pool.connection_kwargs.get("socket_timeout")
    return timeout


@contextlib.contextmanager
def server_errors(client: Any) -> Iterator[None]:
    """Turn every redis-py error into its :class:`~redmem.store._errors.RedmemError`
    (:func:`~redmem.store._error_map.typed_error`: ServerUnavailable, PermissionDenied, WriteRefused,
    ServerError...), naming the server and keeping the redis-py error as the cause."""
    try:
        yield
    except REDIS_ERRORS as exc:
        raise typed_error(exc, server_address(client)) from exc
