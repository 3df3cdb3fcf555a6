"""asyncio without a second code path: the sync library runs in a greenlet, its Redis I/O awaits on the loop.

This is SQLAlchemy's asyncio technique. :func:`greenlet_spawn` runs a sync function in a worker
greenlet; every Redis call the function makes goes through a :class:`AioClient` (or
:class:`AioPipeline`) over a ``redis.asyncio`` client, whose methods hand the awaitable they get
to :func:`await_only`: it switches to the parent greenlet, which awaits it on the event loop and
switches back with the result (or throws the exception in). So the very same code (Lua scripts,
keys, transactions, pure stages) serves ``save()`` and ``await asave()``, and a cancelled task
sees its ``CancelledError`` raised at the sync code's current Redis call.

The facade is driven by a *resolver*, a function that turns an awaitable into its result:
:func:`await_only` in a worker greenlet, or :meth:`LoopThread.resolve` (an event loop in a
background thread) so plain sync code -- the test suite -- can run over ``redis.asyncio`` too.

Inside :func:`greenlet_spawn`, :func:`redmem.store._connection.resolved_client` turns the
configured client into the facade over its asyncio twin (:func:`async_twin`: the same
connection settings), cached per event loop since a ``redis.asyncio`` client belongs to one
loop; ``configure(async_client=...)`` or ``Meta.async_client`` name one instead.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import threading
import time
import weakref
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from typing import Any, Generic, ParamSpec, TypeVar, cast, overload

import greenlet
import redis
import redis.asyncio
import redis.asyncio.cluster
import redis.asyncio.retry
from redis.asyncio.client import Pipeline as AsyncPipeline
from redis.asyncio.cluster import ClusterPipeline as AsyncClusterPipeline
from redis.cluster import RedisCluster

from ._errors import ConfigurationError

__all__ = [
    "greenlet_spawn",
    "await_only",
    "in_worker",
    "Resolver",
    "AioClient",
    "AioPipeline",
    "LoopThread",
    "async_twin",
    "loop_facade",
    "aclose_clients",
    "unwrapped",
    "cache_owner",
    "is_cluster",
    "CooperativeLock",
    "poll_on_loop",
    "AsyncVariant",
    "async_variant",
    "async_function",
]

P = ParamSpec("P")
R = TypeVar("R")
#: Turns an awaitable into its result (raising its exception), from sync code.
Resolver = Callable[[Awaitable[Any]], Any]


class _Worker(greenlet.greenlet):  # type: ignore[misc]  # greenlet ships no type information
    """A greenlet started by :func:`greenlet_spawn`: sync code that may call :func:`await_only`.

    It runs in its driver's context, so the sync code sees the caller's context variables.
    """

    def __init__(self, fn: Callable[..., Any], driver: Any) -> None:
        super().__init__(fn, driver)
        self.gr_context = driver.gr_context


def in_worker() -> bool:
    """Whether the running code is inside :func:`greenlet_spawn` (its Redis I/O must await)."""
    return isinstance(greenlet.getcurrent(), _Worker)


def await_only(awaitable: Awaitable[R]) -> R:
    """The result of ``awaitable``, from sync code running inside :func:`greenlet_spawn`.

    Switches to the greenlet that drives the worker (it awaits the awaitable on the event loop)
    and returns what it sends back; an exception (a ``CancelledError`` too) is raised here.
    """
    current = greenlet.getcurrent()
    if not isinstance(current, _Worker):
        raise ConfigurationError("await_only() called outside greenlet_spawn(): use the a-prefixed API from a coroutine")
    parent = current.parent
    assert parent is not None  # a worker is started from its driver
    return cast(R, parent.switch(awaitable))


async def greenlet_spawn(fn: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
    """Run ``fn(*args, **kwargs)`` in a worker greenlet, awaiting on this loop each awaitable it
    passes to :func:`await_only`; its result, or its exception.

    An exception of an awaited call (``CancelledError`` when this task is cancelled) is thrown
    into the worker at that call, so the sync code's ``with`` blocks and ``finally`` clauses run
    (awaiting their own clean-up calls) before it propagates here.
    """
    worker = _Worker(fn, greenlet.getcurrent())
    result: Any = worker.switch(*args, **kwargs)
    while not worker.dead:
        try:
            value = await result
        except BaseException as exc:
            result = worker.throw(exc)
        else:
            result = worker.switch(value)
    return cast(R, result)


class AsyncVariant(Generic[P, R]):
    """``aX = async_variant(X)`` in a class body: ``await obj.aX(...)`` runs ``obj.X(...)`` through
    :func:`greenlet_spawn`.

    ``X`` is looked up by name on each call (``aX`` without its ``a``), so a subclass's override of
    ``X`` is what ``aX`` runs, and arguments pass through unchanged: a new argument of ``X`` needs
    no change here. Works for instance methods, classmethods, staticmethods and properties (a
    property ``X`` gives a method ``aX()``: its getter runs in the greenlet).
    """

    def __init__(self, method: Any) -> None:
        function: Any = method.fget if isinstance(method, property) else getattr(method, "__func__", method)
        self.sync_name: str = function.__name__
        self.__doc__ = f"``await`` form of ``{self.sync_name}`` (run through :func:`redmem.store._aio.greenlet_spawn`)."

    def __set_name__(self, owner: type, name: str) -> None:
        if name != "a" + self.sync_name:
            raise TypeError(f"{owner.__name__}.{name}: the async variant of {self.sync_name!r} must be named 'a{self.sync_name}'")

    def __get__(self, instance: object, owner: type | None = None) -> Callable[P, Coroutine[Any, Any, R]]:
        holder = owner if instance is None else instance
        declared = inspect.getattr_static(holder, self.sync_name)
        if isinstance(declared, property) and instance is not None:
            assert declared.fget is not None  # a property with no getter has no async variant
            target: Any = functools.partial(declared.fget, instance)
        else:
            target = getattr(holder, self.sync_name)
        return cast(Callable[P, Coroutine[Any, Any, R]], functools.partial(greenlet_spawn, target))


@overload
def async_variant(method: property) -> AsyncVariant[[], Any]: ...
@overload
def async_variant(method: Callable[..., R]) -> AsyncVariant[..., R]: ...
def async_variant(method: Any) -> Any:
    """The ``a``-prefixed awaitable twin of a method or property (see :class:`AsyncVariant`);
    its result type is the sync method's, its arguments are passed through as given."""
    return AsyncVariant(method)


def async_function(function: Callable[P, R]) -> Callable[P, Coroutine[Any, Any, R]]:
    """``aX = async_function(X)`` beside a module function ``X``: ``await aX(...)`` runs it through
    :func:`greenlet_spawn`."""

    @functools.wraps(function)
    async def run(*args: P.args, **kwargs: P.kwargs) -> R:
        return await greenlet_spawn(function, *args, **kwargs)

    run.__doc__ = f"``await`` form of :func:`{function.__name__}` (run through :func:`redmem.store._aio.greenlet_spawn`)."
    return run


# -- the facade -------------------------------------------------------------------------------


def _sync_iterator(iterator: Any, resolve: Resolver) -> Iterator[Any]:
    """An async iterator (``scan_iter``) read as a sync one, each step resolved."""
    while True:
        try:
            yield resolve(iterator.__anext__())
        except StopAsyncIteration:
            return


#: What a facade reads for an attribute its wrapped object lacks: set on the facade itself.
_facade_own: Any = object()


class _Facade:
    """Forward every attribute to the wrapped ``redis.asyncio`` object; call results resolved."""

    _pipelines = (AsyncPipeline, AsyncClusterPipeline)

    def __init__(self, wrapped: Any, resolve: Resolver) -> None:
        object.__setattr__(self, "wrapped", wrapped)
        object.__setattr__(self, "resolve", resolve)

    def _result(self, value: Any) -> Any:
        if value is self.wrapped:
            return self  # a command queued on a pipeline returns the pipeline
        if isinstance(value, self._pipelines):
            return AioPipeline(value, self.resolve)  # awaitable itself, so checked first
        if hasattr(value, "__anext__"):
            return _sync_iterator(value, self.resolve)
        if isinstance(value, Awaitable):
            return self._result(self.resolve(value))
        return value

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self.wrapped, name)
        if not callable(attribute) or isinstance(attribute, type):
            return attribute

        def call(*args: Any, **kwargs: Any) -> Any:  # not functools.wraps: it would cost more than the call
            return self._result(attribute(*args, **kwargs))

        return call

    def __setattr__(self, name: str, value: Any) -> None:
        """State of the wrapped object (``pipe.watching = False``) is set there; anything else (a
        method replaced by a test) on the facade, which then finds it first."""
        current = getattr(self.wrapped, name, _facade_own)
        if current is not _facade_own and not callable(current):
            setattr(self.wrapped, name, value)
        else:
            object.__setattr__(self, name, value)


class AioClient(_Facade):
    """A sync-looking client over a ``redis.asyncio`` client (or cluster), every call resolved."""

    def __init__(self, wrapped: Any, resolve: Resolver) -> None:
        super().__init__(wrapped, resolve)
        if isinstance(wrapped, redis.asyncio.cluster.RedisCluster) and wrapped._initialize:
            resolve(wrapped.initialize())  # before any pipeline: its transactions look slots up without I/O

    def __repr__(self) -> str:
        return f"AioClient({self.wrapped!r})"

    def close(self) -> None:
        """Close the connections (the sync ``close``; ``redis.asyncio`` names it ``aclose``)."""
        self.resolve(self.wrapped.aclose())

    def __enter__(self) -> AioClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AioPipeline(_Facade):
    """A sync-looking pipeline (or MULTI/EXEC transaction with WATCH) over a ``redis.asyncio`` one."""

    def __enter__(self) -> AioPipeline:
        return self

    def __exit__(self, *exc: object) -> None:
        self.resolve(self.wrapped.reset())

    def __len__(self) -> int:
        return len(self.wrapped)

    def __bool__(self) -> bool:
        return True


def unwrapped(client: Any) -> Any:
    """The ``redis.asyncio`` client behind a facade, else ``client`` itself."""
    return client.wrapped if isinstance(client, _Facade) else client


def cache_owner(client: Any) -> Any:
    """The client whose in-process caches ``client`` shares: for a loop's facade, the configured
    client it stands for (its twin talks to the same server), so sync and async calls, and
    successive event loops, keep one vector matrix per partition; else ``client`` itself."""
    return vars(client).get("stands_for", client) if isinstance(client, AioClient) else client


def is_cluster(client: Any) -> bool:
    """Whether ``client`` (sync, asyncio or a facade) talks to a Redis Cluster."""
    return isinstance(unwrapped(client), (RedisCluster, redis.asyncio.cluster.RedisCluster))


class LoopThread:
    """An event loop in a daemon thread; :meth:`resolve` runs an awaitable there and waits for it.

    The resolver that lets plain sync code (the test suite in ``REDMEM_TEST_CLIENT=asyncio-bridge``
    mode) drive an :class:`AioClient`.
    """

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="redmem-asyncio", daemon=True)
        self.thread.start()

    def resolve(self, awaitable: Awaitable[R]) -> R:
        """The result of ``awaitable``, awaited on this loop while the calling thread waits."""
        if threading.current_thread() is self.thread:
            close = getattr(awaitable, "close", None)
            if close is not None:
                close()  # never to run
            raise ConfigurationError("a LoopThread's facade was called from its own loop: it would wait on itself")

        async def awaited() -> R:
            return await awaitable

        return asyncio.run_coroutine_threadsafe(awaited(), self.loop).result()

    def stop(self) -> None:
        """Stop the loop, wait for its thread, and close the loop."""
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join()
        self.loop.close()


# -- the asyncio twin of a configured client --------------------------------------------------

#: Connection options a sync client's pool holds that ``redis.asyncio`` takes under the same name.
_SHARED_OPTIONS = (
    "host", "port", "db", "username", "password", "socket_timeout", "socket_connect_timeout",
    "socket_keepalive", "client_name", "encoding", "encoding_errors", "decode_responses",
    "protocol", "health_check_interval",
)
_SSL_OPTIONS = ("ssl_keyfile", "ssl_certfile", "ssl_cert_reqs", "ssl_ca_certs", "ssl_check_hostname")


def _connection_options(kwargs: dict[str, Any], ssl: bool) -> dict[str, Any]:
    """The options of a ``redis.asyncio`` client equivalent to a pool's ``connection_kwargs``.

    The retry policy is copied (same backoff and number of retries, an asyncio ``Retry``), so a
    command is retried as often with the same operation key (:mod:`redmem.store._outcome`).
    """
    options = {name: kwargs[name] for name in _SHARED_OPTIONS if name in kwargs}
    if "path" in kwargs:
        options["unix_socket_path"] = kwargs["path"]
    if ssl:
        options.update(ssl=True, **{name: kwargs[name] for name in _SSL_OPTIONS if name in kwargs})
    retry = kwargs.get("retry")
    if retry is not None:
        supported = tuple(getattr(retry, "_supported_errors", ()))
        options["retry"] = redis.asyncio.retry.Retry(retry._backoff, retry._retries, supported)
        options["retry_on_error"] = list(supported)
    return options


def async_twin(client: Any) -> Any:
    """A new ``redis.asyncio`` client (or cluster) with ``client``'s server and connection settings.

    A single server's client has a blocking pool of as many connections as ``client``'s pool
    may open (redis-py's default: 100): each coroutine in flight holds one, and past that many
    the next waits (up to 20 s) for one to be released, instead of failing.

    ``client`` is a sync ``redis.Redis`` / ``RedisCluster``, or a facade (whose asyncio client's
    settings are used). ConfigurationError for anything else.
    """
    source = unwrapped(client)
    if isinstance(source, RedisCluster | redis.asyncio.cluster.RedisCluster):
        kwargs = source.connection_kwargs if isinstance(source, redis.asyncio.cluster.RedisCluster) \
            else source.nodes_manager.connection_kwargs
        options = _connection_options(kwargs, "ssl" in str(kwargs.get("connection_class", "")).lower())
        options.pop("retry_on_error", None)
        for name in ("host", "port", "db"):
            options.pop(name, None)
        nodes = [redis.asyncio.cluster.ClusterNode(n.host, n.port) for n in source.get_nodes()]
        return redis.asyncio.cluster.RedisCluster(startup_nodes=nodes, **options)
    if isinstance(source, redis.Redis | redis.asyncio.Redis):
        pool = source.connection_pool
        ssl = "SSL" in getattr(pool.connection_class, "__name__", "")
        template = redis.asyncio.Redis(**_connection_options(pool.connection_kwargs, ssl)).connection_pool
        blocking = redis.asyncio.BlockingConnectionPool(
            max_connections=pool.max_connections, connection_class=template.connection_class,
            **template.connection_kwargs,
        )
        return redis.asyncio.Redis.from_pool(blocking)
    raise ConfigurationError(
        f"cannot derive a redis.asyncio client from {type(client).__name__}: "
        "give one with redmem.configure(async_client=...) or Meta.async_client"
    )


#: Per event loop: the facades made there, by id of the configured client they stand for.
_by_loop: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[int, tuple[Any, AioClient]]] = (
    weakref.WeakKeyDictionary()
)
_by_loop_lock = threading.Lock()


def loop_facade(client: Any, async_client: Any = None) -> AioClient:
    """The facade this event loop uses for configured ``client``: over ``async_client`` when given
    (a ``redis.asyncio`` client the user made; ``client`` may then be None), else over
    ``client``'s :func:`async_twin`, made once per loop. Called inside :func:`greenlet_spawn`.
    """
    loop = asyncio.get_running_loop()
    source = client if async_client is None else async_client
    with _by_loop_lock:
        made = _by_loop.setdefault(loop, {})
        entry = made.get(id(source))
    if entry is not None and entry[0] is source:
        return entry[1]
    facade = AioClient(async_twin(client) if async_client is None else async_client, await_only)
    facade.stands_for = source
    with _by_loop_lock:
        made[id(source)] = (source, facade)
    return facade


async def aclose_clients() -> None:
    """Close the asyncio twins this event loop made (their connections); the next call makes new ones.

    Clients given with ``async_client`` are the caller's to close.
    """
    with _by_loop_lock:
        made = _by_loop.pop(asyncio.get_running_loop(), {})
    for source, facade in made.values():
        if facade.wrapped is not source:
            await facade.wrapped.aclose()


def poll_on_loop(ready: Callable[[], bool], timeout: float | None = None, most: float = 0.005) -> bool:
    """From a worker greenlet, call ``ready()`` until it returns True, sleeping on the event loop
    between tries (0.1 ms, doubling up to ``most`` s), so the loop's other coroutines run
    meanwhile; False once ``timeout`` seconds have passed without it."""
    deadline = None if timeout is None else time.monotonic() + timeout
    pause = 0.0001
    while not ready():
        if deadline is not None and time.monotonic() >= deadline:
            return False
        await_only(asyncio.sleep(pause))
        pause = min(pause * 2, most)
    return True


class CooperativeLock:
    """A ``threading.Lock`` that a worker greenlet waits for by yielding to its event loop.

    In-process caches (the vector matrices) hold their lock across a round trip. Two coroutines
    of one loop share one thread, so the second one blocking on a plain lock would stop the loop
    and never let the first finish: here a worker polls, sleeping on the loop (0.1 ms doubling up
    to ``MAX_POLL`` s) between tries. Threads block as on a plain lock.
    """

    MAX_POLL = 0.005

    def __init__(self) -> None:
        self._lock = threading.Lock()

    def acquire(self, blocking: bool = True) -> bool:
        """Take the lock (``blocking=False``: only if free at once; returns whether it was taken)."""
        if not blocking or not in_worker():
            return self._lock.acquire(blocking)
        return poll_on_loop(lambda: self._lock.acquire(blocking=False), most=self.MAX_POLL)

    def release(self) -> None:
        self._lock.release()

    def locked(self) -> bool:
        return self._lock.locked()

    def __enter__(self) -> bool:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()

