"""A persistent local server: one redis-server per data directory, reused by later processes.

The ``redmem`` commands use it when no Redis URL is given, so what ``ingest`` stores is there
for the next ``ask``. On first use the server is started daemonized (it outlives the command)
with append-only-file persistence (one fsync per second, and a full write-out on shutdown). It
listens only on a unix socket in the data directory (mode 700, no TCP port) and keeps its data,
pid file and log there; later processes find it through that socket. :meth:`LocalServer.stop`
shuts it down cleanly; the next command starts it again from the same files.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import subprocess
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from .embedded import find_server_binary, read_tail
from .errors import ConfigurationError

__all__ = ["DATA_DIR_ENV_VAR", "LocalServer", "default_data_dir"]

DATA_DIR_ENV_VAR = "REDMEM_DATA_DIR"
_SOCKET_NAME = "redis.sock"
_PID_NAME = "redis.pid"
_LOG_NAME = "server.log"
_LOCK_NAME = "start.lock"
#: Seconds a start-up or a shutdown may take.
_TIMEOUT = 10.0
#: Longest unix socket path (sun_path is 108 bytes on Linux, 104 on macOS).
_MAX_SOCKET_PATH = 100


def default_data_dir(environ: Mapping[str, str] = os.environ) -> Path:
    """``$REDMEM_DATA_DIR``, else ``$XDG_DATA_HOME/redmem``, else ``~/.local/share/redmem``."""
    if environ.get(DATA_DIR_ENV_VAR):
        return Path(environ[DATA_DIR_ENV_VAR]).expanduser().resolve()
    base = environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return (Path(base).expanduser() / "redmem").resolve()


class LocalServer:
    """The server whose data lives in ``directory``: started by :meth:`ensure`, stopped by :meth:`stop`."""

    def __init__(self, directory: str | Path, binary: str | None = None) -> None:
        self.directory = Path(directory).expanduser().resolve()
        self._binary = binary
        if len(str(self.socket_path)) > _MAX_SOCKET_PATH:
            raise ConfigurationError(
                f"data directory {self.directory} is too long for a unix socket ({_MAX_SOCKET_PATH} "
                f"characters with {_SOCKET_NAME!r}): set {DATA_DIR_ENV_VAR} to a shorter path"
            )

    def __repr__(self) -> str:
        return f"<LocalServer {self.directory}>"

    @property
    def socket_path(self) -> Path:
        return self.directory / _SOCKET_NAME

    @property
    def url(self) -> str:
        return f"unix://{self.socket_path}"

    @property
    def log_path(self) -> Path:
        return self.directory / _LOG_NAME

    @property
    def pid(self) -> int | None:
        """The server's process id from its pid file, None when there is none."""
        try:
            return int((self.directory / _PID_NAME).read_text().strip())
        except (OSError, ValueError):
            return None

    def answering(self) -> bool:
        """True when a server answers PING on this directory's socket."""
        if not self.socket_path.exists():
            return False
        client = self._client(timeout=1.0)
        try:
            return bool(client.ping())
        except (redis.ConnectionError, redis.TimeoutError, OSError):
            return False
        finally:
            client.close()

    def ensure(self) -> bool:
        """Start the server unless one already answers; True when this call started it.

        One process starts it at a time (a lock file in the directory), so two commands never run
        two servers on one data set.
        """
        self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        with self._start_lock():
            if self.answering():
                return False
            self._launch()
            self._wait(self.answering, "did not answer PING")
        return True

    def stop(self) -> bool:
        """Shut the server down (its data is written out first); False when none was running."""
        if not self.answering():
            return False
        client = self._client(timeout=_TIMEOUT)
        try:
            client.shutdown()
        except redis.ResponseError as exc:
            raise ConfigurationError(f"the local server in {self.directory} refused to shut down: {exc}") from exc
        finally:
            client.close()
        self._wait(lambda: self.pid is None and not self.answering(), "did not stop")  # the pid file goes last
        return True

    def _client(self, timeout: float) -> redis.Redis:
        """A client of the socket that does not retry (a server that went away is an answer here)."""
        return redis.Redis(unix_socket_path=str(self.socket_path), socket_timeout=timeout,
                           socket_connect_timeout=timeout, retry=Retry(NoBackoff(), 0))

    @contextlib.contextmanager
    def _start_lock(self) -> Iterator[None]:
        """An exclusive lock on the directory, held while checking for and starting the server."""
        with open(self.directory / _LOCK_NAME, "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def _command(self, binary: str) -> list[str]:
        return [
            binary, "--daemonize", "yes", "--dir", str(self.directory),
            "--port", "0", "--unixsocket", str(self.socket_path), "--unixsocketperm", "700",
            "--appendonly", "yes", "--appendfsync", "everysec", "--save", "",
            "--pidfile", str(self.directory / _PID_NAME), "--logfile", str(self.log_path),
        ]

    def _launch(self) -> None:
        """Run the server daemonized: the launched process forks the server and exits at once."""
        binary = self._binary or find_server_binary()
        try:
            done = subprocess.run(self._command(binary), stdin=subprocess.DEVNULL, capture_output=True,
                                  text=True, timeout=_TIMEOUT, cwd=self.directory)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise ConfigurationError(f"cannot run Redis server {binary!r}: {exc}") from exc
        if done.returncode != 0:
            raise ConfigurationError(
                f"Redis server {binary} exited with code {done.returncode} on start-up in {self.directory}: "
                f"{(done.stdout + done.stderr).strip()}{self._log_tail()}"
            )

    def _wait(self, condition: Callable[[], bool], failure: str) -> None:
        deadline = time.monotonic() + _TIMEOUT
        while time.monotonic() < deadline:
            if condition():
                return
            time.sleep(0.02)
        raise ConfigurationError(f"the local server in {self.directory} {failure} within "
                                 f"{_TIMEOUT:.0f} s{self._log_tail()}")

    def _log_tail(self) -> str:
        tail = read_tail(str(self.log_path), 10)
        return f"; log tail:\n{tail}" if tail else ""
