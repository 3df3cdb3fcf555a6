"""Real-server tests of redmem.store._local_server: one persistent server per data directory,
which trusts neither a directory nor a socket it did not make."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from redmem.store._errors import ConfigurationError, DataDirectoryError
from redmem.store._local_server import LocalServer, default_data_dir

#: The uid of ``nobody``: a second user, for the tests that need root to make one's files.
NOBODY = 65534
as_root = pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another user needs root")


@pytest.fixture
def local() -> Iterator[LocalServer]:
    """A local server description on a fresh short directory, stopped (by its own socket) afterwards
    unless the test left the directory one that is refused."""
    with tempfile.TemporaryDirectory(prefix="rm-local-", dir="/tmp") as directory:
        server = LocalServer(Path(directory) / "data")
        try:
            yield server
        finally:
            with contextlib.suppress(DataDirectoryError):
                server.stop()


def test_data_directory_from_redmem_data_dir_then_xdg_then_home(tmp_path: Path) -> None:
    assert default_data_dir({"REDMEM_DATA_DIR": str(tmp_path / "a"), "XDG_DATA_HOME": "/x"}) == tmp_path / "a"
    assert default_data_dir({"XDG_DATA_HOME": str(tmp_path)}) == tmp_path / "redmem"
    assert default_data_dir({}) == Path.home().resolve() / ".local" / "share" / "redmem"


def test_one_server_per_directory_reused_then_stopped_with_its_data_kept(local: LocalServer) -> None:
    assert not local.answering() and local.pid is None
    assert local.ensure() is True  # started here
    first = local.pid
    assert first is not None and local.answering()
    assert oct(local.directory.stat().st_mode & 0o777) == "0o700"
    assert LocalServer(local.directory).ensure() is False  # a second process finds the running one
    assert local.pid == first
    with redis.Redis(unix_socket_path=str(local.socket_path)) as client:
        client.set("kept", "yes")
        assert client.config_get("appendonly") == {"appendonly": "yes"}
        assert client.config_get("port") == {"port": "0"}  # no TCP port: only the socket, mode 700
    assert local.stop() is True
    assert not local.answering() and local.pid is None and local.stop() is False
    assert local.ensure() is True  # started again from the same files
    with redis.Redis(unix_socket_path=str(local.socket_path)) as client:
        assert client.get("kept") == b"yes"


def test_a_directory_too_long_for_a_socket_names_the_variable(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="set REDMEM_DATA_DIR to a shorter path"):
        LocalServer(tmp_path / ("d" * 120))


def test_a_server_that_cannot_start_reports_it(local: LocalServer, tmp_path: Path) -> None:
    fake = tmp_path / "fake-server"
    fake.write_text("#!/bin/sh\necho 'FATAL CONFIG FILE ERROR' >&2\nexit 1\n")
    fake.chmod(0o755)
    with pytest.raises(ConfigurationError, match="exited with code 1 on start-up.*FATAL CONFIG FILE ERROR"):
        LocalServer(local.directory, binary=str(fake)).ensure()


def server_command(local: LocalServer, action: str) -> str:
    """What ``redmem server <action>`` prints for the data directory of ``local``."""
    env = {**os.environ, "REDMEM_DATA_DIR": str(local.directory), "COLUMNS": "300"}
    done = subprocess.run([sys.executable, "-m", "redmem.cli", "server", action], capture_output=True, text=True,
                          env=env, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def servers_on(directory: Path) -> list[int]:
    """The pids of every process whose working directory is ``directory`` (a server changes into its --dir)."""
    found = []
    for entry in Path("/proc").iterdir():
        with_cwd = entry / "cwd"
        try:
            if entry.name.isdigit() and os.readlink(with_cwd) == str(directory):
                found.append(int(entry.name))
        except OSError:
            continue
    return found


@pytest.mark.parametrize("mode", [0o755, 0o750, 0o705, 0o777, 0o1777], ids=oct)
def test_an_existing_directory_open_to_others_is_refused_with_the_fix_and_left_as_is(local: LocalServer, mode: int) -> None:
    local.directory.mkdir()
    local.directory.chmod(mode)
    with pytest.raises(DataDirectoryError, match=rf"has mode {mode:o}: other users could read.*chmod 700 {local.directory}"):
        local.ensure()
    assert local.directory.stat().st_mode & 0o7777 == mode and list(local.directory.iterdir()) == []  # nothing written
    with pytest.raises(DataDirectoryError):
        local.answering()  # `redmem server status` says why too


def test_a_directory_made_here_is_700_whatever_the_umask(local: LocalServer) -> None:
    previous = os.umask(0)
    try:
        assert local.ensure() is True
    finally:
        os.umask(previous)
    assert local.directory.stat().st_mode & 0o777 == 0o700


def test_a_data_directory_that_is_a_file_is_a_typed_error(local: LocalServer) -> None:
    local.directory.write_text("not a directory")
    with pytest.raises(DataDirectoryError, match="is a file, not a directory"):
        local.ensure()
    inside = LocalServer(local.directory / "data")
    with pytest.raises(DataDirectoryError, match="inside a file"):
        inside.ensure()
    env = {**os.environ, "REDMEM_DATA_DIR": str(local.directory), "COLUMNS": "200"}
    status = subprocess.run([sys.executable, "-m", "redmem.cli", "server", "status"], capture_output=True, text=True,
                            env=env, timeout=60)
    assert status.returncode == 1 and "Traceback" not in status.stdout + status.stderr
    assert "is a file, not a directory" in status.stdout


@as_root
def test_a_directory_of_another_user_is_refused(local: LocalServer) -> None:
    local.directory.mkdir(mode=0o700)
    os.chown(local.directory, NOBODY, NOBODY)
    with pytest.raises(DataDirectoryError, match=f"belongs to uid {NOBODY}, not to you"):
        local.ensure()
    assert list(local.directory.iterdir()) == []


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")
def test_a_deleted_socket_never_leads_to_a_second_server_on_the_directory(local: LocalServer) -> None:
    assert local.ensure() is True
    first = local.pid
    with redis.Redis(unix_socket_path=str(local.socket_path)) as client:
        client.set("kept", "yes")
    local.socket_path.unlink()
    with pytest.raises(DataDirectoryError, match=rf"pid {first}\) runs on .* its socket .* is gone.*redmem server stop"):
        local.ensure()
    assert servers_on(local.directory) == [first] and local.running_pid() == first
    assert f"running (pid {first}) but its socket {local.socket_path} is gone" in server_command(local, "status")
    assert f"stopped the local server (pid {first})" in server_command(local, "stop")  # SIGTERM: data written out
    assert local.running_pid() is None and servers_on(local.directory) == []
    assert local.ensure() is True
    with redis.Redis(unix_socket_path=str(local.socket_path)) as client:
        assert client.get("kept") == b"yes"
    assert servers_on(local.directory) == [local.pid]


def test_a_stale_pid_file_does_not_stop_a_start(local: LocalServer) -> None:
    local.directory.mkdir(mode=0o700)
    (local.directory / "redis.pid").write_text(f"{os.getpid()}\n")  # alive, but no server on the directory
    assert local.running_pid() is None
    assert local.ensure() is True and local.pid != os.getpid()


def test_a_socket_that_is_not_a_socket_is_refused(local: LocalServer) -> None:
    local.directory.mkdir(mode=0o700)
    local.socket_path.write_text("")
    with pytest.raises(DataDirectoryError, match="is not a socket of yours"):
        local.ensure()


@as_root
def test_another_users_server_socket_is_never_talked_to(local: LocalServer) -> None:
    assert local.ensure() is True
    os.chown(local.socket_path, NOBODY, NOBODY, follow_symlinks=False)
    try:
        with pytest.raises(DataDirectoryError, match=f"not a socket of yours \\(uid {NOBODY}"):
            local.ensure()
        with pytest.raises(DataDirectoryError):
            local.answering()
    finally:
        os.chown(local.socket_path, 0, 0, follow_symlinks=False)
