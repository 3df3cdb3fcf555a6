"""Real-server tests of redmem.store.local_server: one persistent server per data directory."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from redmem.store.errors import ConfigurationError
from redmem.store.local_server import LocalServer, default_data_dir


@pytest.fixture
def local() -> Iterator[LocalServer]:
    """A local server description on a fresh short directory, stopped (by its own socket) afterwards."""
    with tempfile.TemporaryDirectory(prefix="rm-local-", dir="/tmp") as directory:
        server = LocalServer(Path(directory) / "data")
        try:
            yield server
        finally:
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
