"""Fixtures: a private Redis server (or REDIS_URL), a 3-master cluster, one key prefix per test.

``REDMEM_TEST_CLIENT=asyncio-bridge`` makes the clients the fixtures hand out facades over
``redis.asyncio`` clients, driven by an event loop in a background thread
(:class:`redmem.store._aio.LoopThread`): the sync suite then runs over redis.asyncio. Tests that
inspect the sync connection's internals (the ``sent`` fixture, fault injection) are marked
``sync_only`` (or use ``sent``) and are left out in that mode.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import shutil
import tempfile
import threading

import pytest
import redis
from hypothesis import settings as hypothesis_settings

import redmem
from redmem.store._aio import AioClient, LoopThread, async_twin, is_cluster
from redmem.store._connection import SETTING_NAMES, settings
from redmem.store._embedded import EmbeddedServer
from redmem.store._embedded_cluster import EmbeddedCluster
from redmem.store._local_server import DATA_DIR_ENV_VAR, LocalServer

_prefixes = itertools.count(1)
#: The suite's own data directory, for this process and the commands it runs: a test that connects
#: without a URL starts the local server here, never in the user's (stopped and removed at the end).
SUITE_DATA_DIR = os.environ[DATA_DIR_ENV_VAR] = os.path.join(tempfile.mkdtemp(prefix="rm-suite-", dir="/tmp"), "data")
#: Whether the fixtures' clients go through redis.asyncio (see the module docstring).
BRIDGE = os.environ.get("REDMEM_TEST_CLIENT", "sync") == "asyncio-bridge"


def pytest_addoption(parser):
    parser.addoption("--run-benchmarks", action="store_true",
                     help="also run the tests marked bench (benchmark scripts at their smallest sizes; make test-bench)")


def _left_out(item, config) -> bool:
    """A bench test without --run-benchmarks; in asyncio-bridge mode, a test of the sync connection's internals."""
    if item.get_closest_marker("bench") and not config.getoption("--run-benchmarks"):
        return True
    return BRIDGE and ("sent" in getattr(item, "fixturenames", ()) or bool(item.get_closest_marker("sync_only")))


#: The fixtures that start or reach a Redis server; a test under tests/unit/ may use none of them.
SERVER_FIXTURES = frozenset({"redis_url", "cluster_url", "single_client", "cluster_client", "db", "any_db", "restartable"})
UNIT_TIER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "unit") + os.sep


def _check_unit_tier(items) -> None:
    """Fail the collection when a test of the unit tier asks for a server (it belongs in tests/integration/)."""
    for item in items:
        server = SERVER_FIXTURES.intersection(getattr(item, "fixturenames", ()))
        if str(item.path).startswith(UNIT_TIER) and server:
            raise pytest.UsageError(f"{item.nodeid} is in tests/unit/ but uses {sorted(server)}: move it to tests/integration/")


def pytest_collection_modifyitems(config, items):
    """Check the unit tier; leave out the bench tests unless asked for, and what asyncio-bridge mode cannot run."""
    _check_unit_tier(items)
    kept, left_out = [], []
    for item in items:
        (left_out if _left_out(item, config) else kept).append(item)
    if left_out:
        config.hook.pytest_deselected(items=left_out)
    items[:] = kept


def pytest_sessionfinish(session, exitstatus):
    """Stop the local server a test may have started in the suite's data directory, and remove it."""
    LocalServer(SUITE_DATA_DIR).stop()
    shutil.rmtree(os.path.dirname(SUITE_DATA_DIR), ignore_errors=True)


@pytest.fixture(scope="session")
def loop_thread():
    """The event loop thread that drives the bridge facades (asyncio-bridge mode)."""
    thread = LoopThread()
    yield thread
    thread.stop()


def _bridged(client, request):
    """``client``, or in asyncio-bridge mode the default-making facade over its redis.asyncio twin."""
    if not BRIDGE:
        return client
    facade = AioClient(async_twin(client), request.getfixturevalue("loop_thread").resolve)
    redmem.configure(client=facade)
    return facade

# No per-example deadline: the tests run beside other work on shared cores, where one example
# can take 2x hypothesis's 200 ms for reasons of load alone (speed lives in benchmarks/).
hypothesis_settings.register_profile("redmem", deadline=None)
# CI runs each property test on the same examples every time (a red CI blocks a landing, so a
# rare counter-example must be found locally, where examples stay random, not by chance in CI).
hypothesis_settings.register_profile("ci", parent=hypothesis_settings.get_profile("redmem"), derandomize=True)
hypothesis_settings.load_profile("ci" if os.environ.get("CI") else "redmem")


@pytest.fixture(scope="session")
def redis_url():
    """URL of the single server the tests use: REDIS_URL, else a private embedded server."""
    if os.environ.get("REDIS_URL"):
        yield os.environ["REDIS_URL"]
        return
    with EmbeddedServer(unix_socket=False) as server:
        yield server.url


@pytest.fixture(scope="session")
def cluster_url():
    """URL of a 3-master Redis Cluster on loopback, started from the same server binary."""
    if os.environ.get("REDIS_CLUSTER_URL"):
        yield os.environ["REDIS_CLUSTER_URL"]
        return
    with EmbeddedCluster(masters=3) as cluster:
        yield cluster.url


#: The suite's shared clients wait longer for a TCP connect than the library's 1 s default: on a
#: loaded 2-core CI host a cluster client's first connects to its nodes took longer than 1 s.
#: Tests of the defaults open clients of their own.
SHARED_CLIENT_OPTIONS = {"socket_connect_timeout": 5.0}


@pytest.fixture(scope="session")
def single_client(redis_url, request):
    client = _bridged(redmem.connect(redis_url, **SHARED_CLIENT_OPTIONS), request)
    yield client
    if BRIDGE:
        client.close()  # on its loop, before the loop thread stops


@pytest.fixture(scope="session")
def cluster_client(cluster_url, request):
    client = _bridged(redmem.connect(cluster_url, **SHARED_CLIENT_OPTIONS), request)
    yield client
    if BRIDGE:
        client.close()


@pytest.fixture(autouse=True)
def _settings_restored():
    """What a test configures ends with it (a CLI command run in-process sets the embedding provider)."""
    before = settings()
    yield
    redmem.configure(**{name: getattr(before, name) for name in SETTING_NAMES})


def _use(client):
    """Make ``client`` the default with a key prefix of its own, so tests never see each other."""
    redmem.configure(client=client, key_prefix=f"t{next(_prefixes)}")
    return client


@pytest.fixture
def db(single_client):
    """The single-server client, isolated for this test."""
    yield _use(single_client)


@pytest.fixture(params=["single", pytest.param("cluster", marks=pytest.mark.cluster)])
def any_db(request):
    """The test runs twice: on the single server and on the cluster."""
    name = "single_client" if request.param == "single" else "cluster_client"
    yield _use(request.getfixturevalue(name))


def all_keys(client, prefix: str | None = None) -> set[str]:
    """Every key under the current test's prefix, on every node of a cluster too.

    Operation keys (``...:op:<id>``, kept a few minutes so a resent write is applied once) and
    models' recorded schemas (``...:{%g}:schema``) are left out: they are bookkeeping, not data.
    """
    prefix = prefix or redmem.store.settings().key_prefix
    pattern = f"{prefix}:*"
    if is_cluster(client):
        found = client.scan_iter(match=pattern, target_nodes=redis.RedisCluster.PRIMARIES)
    else:
        found = client.scan_iter(match=pattern)
    return {key.decode() for key in found if b":op:" not in key and not key.endswith(b"}:schema")}


@pytest.fixture
def sent(monkeypatch):
    """A list that receives every request the test's own thread sends to a server while the test
    runs (one request = one round trip: a pipeline is sent as one).

    Requests of other threads (a worker another test left behind) and the handshake a
    connection sends when it (re)connects (a pooled connection an earlier test closed) are not
    the code under test's round trips, so they are not counted.
    """
    requests: list = []
    owner, handshaking = threading.get_ident(), threading.local()
    send, handshake = redis.connection.AbstractConnection.send_packed_command, \
        redis.connection.AbstractConnection.on_connect_check_health

    def counting(self, command, check_health=True):
        if threading.get_ident() == owner and not getattr(handshaking, "now", False):
            requests.append(command)
        return send(self, command, check_health)

    def uncounted(self, *args, **kwargs):
        handshaking.now = True
        try:
            return handshake(self, *args, **kwargs)
        finally:
            handshaking.now = False

    monkeypatch.setattr(redis.connection.AbstractConnection, "send_packed_command", counting)
    monkeypatch.setattr(redis.connection.AbstractConnection, "on_connect_check_health", uncounted)
    return requests


@pytest.fixture
def restartable(tmp_path):
    """A server whose data lives in ``tmp_path`` (dump.rdb), restartable on the same port; the
    default client is one that outlives the restart (its cached matrices and postings too)."""
    before = settings()
    args = ["--dir", str(tmp_path), "--dbfilename", "dump.rdb"]
    server = EmbeddedServer(unix_socket=False, extra_args=args).start()
    redmem.connect(server.url)
    redmem.configure(key_prefix="rollback")
    try:
        yield server, tmp_path
    finally:
        server.stop()
        redmem.configure(client=before.client, key_prefix=before.key_prefix)


@contextlib.contextmanager
def configured_embeddings(provider):
    """``provider`` as the configured embedding provider inside the block, then the previous one again."""
    previous = settings().embedding_provider
    redmem.configure(embedding_provider=provider)
    try:
        yield provider
    finally:
        redmem.configure(embedding_provider=previous)
