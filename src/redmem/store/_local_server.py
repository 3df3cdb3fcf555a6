"""A persistent local server: one redis-server per data directory, reused by later processes.

The ``redmem`` commands and :func:`redmem.connect` use it when no Redis URL is given, so what
one process stores is there for the next, and several processes share it. On first use the server is started daemonized (it outlives the command)
with append-only-file persistence (one fsync per second, and a full write-out on shutdown). It
listens only on a unix socket in the data directory (mode 700, no TCP port) and keeps its data,
pid file and log there; later processes find it through that socket. :meth:`LocalServer.stop`
shuts it down cleanly; the next command starts it again from the same files.

Nothing here trusts what it finds: the data directory must be a directory of this user with no
group or other permissions, the socket a socket of this user, and a server is started only when
the pid file names no live server on the directory (a deleted socket does not make a second one).
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import signal
import stat
import subprocess
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from ._embedded import find_server_binary, read_tail
from ._errors import ConfigurationError, DataDirectoryError

__all__ = ["DATA_DIR_ENV_VAR", "LocalServer", "default_data_dir", "shared_server_url"]

logger = logging.getLogger("redmem.local_server")

DATA_DIR_ENV_VAR = "REDMEM_DATA_DIR"
_SOCKET_NAME = "redis.sock"
_PID_NAME = "redis.pid"
_LOG_NAME = "server.log"
_LOCK_NAME = "start.lock"
#: Seconds a start-up or a shutdown may take.
_TIMEOUT = 10.0
#: Longest unix socket path (sun_path is 108 bytes on Linux, 104 on macOS).
_MAX_SOCKET_PATH = 100
#: Names a server binary's path contains (Debian's redis-server is a link to redis-check-rdb).
_SERVER_NAMES = ("redis", "valkey")
#: Data directories whose location this process has already logged.
_announced: set[Path] = set()


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
        """True when a server answers PING on this directory's socket; DataDirectoryError when the
        directory or the socket cannot be trusted."""
        if not self._directory_present() or not self._socket_present():
            return False
        client = self._client(timeout=1.0)
        try:
            return bool(client.ping())
        except (redis.ConnectionError, redis.TimeoutError, OSError):
            return False
        finally:
            client.close()

    def running_pid(self) -> int | None:
        """The pid file's process when it is alive and a Redis server on this directory, else None."""
        pid = self.pid
        return pid if pid is not None and _serves(pid, self.directory) else None

    def ensure(self) -> bool:
        """Start the server unless one already runs on this directory; True when this call started it.

        One process starts it at a time (a lock file in the directory), and a server is started only
        when the pid file names no live server on the directory, so two processes never run two
        servers on one data set, even when the socket was deleted.
        """
        self._make_directory()
        with self._start_lock():
            if self.answering():
                return False
            running = self.running_pid()
            if running is not None and self._socket_present():
                self._wait(self.answering, "did not answer PING")  # still loading its data
                return False
            if running is not None:
                raise DataDirectoryError(
                    f"a Redis server (pid {running}) runs on {self.directory} but its socket {self.socket_path} "
                    "is gone, and a second server would write over its data: `redmem server stop` stops it "
                    "(its data is written out first); the next use starts it again"
                )
            self._launch()
            self._wait(self.answering, "did not answer PING")
        return True

    def stop(self) -> bool:
        """Shut the server down (its data is written out first); False when none was running.

        A server that lost its socket is sent SIGTERM, which shuts it down the same way.
        """
        if self.answering():
            client = self._client(timeout=_TIMEOUT)
            try:
                client.shutdown()
            except redis.ResponseError as exc:
                raise ConfigurationError(f"the local server in {self.directory} refused to shut down: {exc}") from exc
            finally:
                client.close()
        else:
            running = self.running_pid()
            if running is None:
                return False
            with contextlib.suppress(ProcessLookupError):  # it may have just gone by itself
                os.kill(running, signal.SIGTERM)
        self._wait(lambda: self.running_pid() is None and not self.answering(), "did not stop")
        return True

    def _make_directory(self) -> None:
        """Create the data directory (mode 700) unless it exists; either way, check it."""
        if not self._directory_present():
            try:
                self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
            except OSError as exc:  # a file in the way, no permission, a read-only file system
                raise DataDirectoryError(f"cannot create the data directory {self.directory}: {exc}; set "
                                         f"{DATA_DIR_ENV_VAR} to a directory of your own") from exc
            self._directory_present()

    def _directory_present(self) -> bool:
        """Whether the data directory exists; DataDirectoryError when it is not a directory, belongs to
        another user or is open to group or others (its data, and the server's socket, would be theirs too)."""
        try:
            info = self.directory.stat()
        except FileNotFoundError:
            return False
        except NotADirectoryError as exc:
            raise DataDirectoryError(f"the data directory {self.directory} is inside a file, not a directory: "
                                     f"set {DATA_DIR_ENV_VAR} to a directory") from exc
        if not stat.S_ISDIR(info.st_mode):
            raise DataDirectoryError(f"the data directory {self.directory} is a file, not a directory: move the "
                                     f"file away or set {DATA_DIR_ENV_VAR} to a directory")
        if info.st_uid != os.geteuid():
            raise DataDirectoryError(f"the data directory {self.directory} belongs to uid {info.st_uid}, not to you "
                                     f"(uid {os.geteuid()}): set {DATA_DIR_ENV_VAR} to a directory of your own")
        if info.st_mode & 0o077:
            raise DataDirectoryError(
                f"the data directory {self.directory} has mode {stat.S_IMODE(info.st_mode):o}: other users could read "
                f"the data or reach the server; run `chmod 700 {self.directory}` (redmem does not change a "
                "directory it did not create)"
            )
        return True

    def _socket_present(self) -> bool:
        """Whether the socket exists; DataDirectoryError when it is not a socket of this user."""
        try:
            info = os.lstat(self.socket_path)
        except FileNotFoundError:
            return False
        if not stat.S_ISSOCK(info.st_mode) or info.st_uid != os.geteuid():
            raise DataDirectoryError(
                f"{self.socket_path} is not a socket of yours (uid {info.st_uid}, mode {stat.filemode(info.st_mode)}): "
                f"redmem does not talk to another user's server; remove it, or set {DATA_DIR_ENV_VAR} to a "
                "directory of your own"
            )
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


def _serves(pid: int, directory: Path) -> bool:
    """Whether process ``pid`` is alive and a Redis server working in ``directory`` (the server
    changes into its ``--dir``); where there is no /proc, whether it is alive."""
    proc = Path("/proc") / str(pid)
    if Path("/proc/self").exists():
        try:
            return (os.readlink(proc / "cwd") == str(directory)
                    and any(name in Path(os.readlink(proc / "exe")).name for name in _SERVER_NAMES))
        except OSError:  # gone, a zombie, or another user's
            return False
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    return True


def shared_server_url(directory: Path | None = None) -> str:
    """The URL of the local server of ``directory`` (default: :func:`default_data_dir`), started if need be.

    The first call per directory in a process logs where the data lives: a warning when this call
    started the server (a process now runs in the background), else at INFO.
    """
    local = LocalServer(directory or default_data_dir())
    started = local.ensure()
    if local.directory not in _announced:
        _announced.add(local.directory)
        logger.log(logging.WARNING if started else logging.INFO,
                   "redmem: %s the local server; data in %s, socket %s (`redmem server stop` stops it)",
                   "started" if started else "using", local.directory, local.socket_path)
    return local.url
