"""With no URL the library keeps its data: the local server the CLI uses, shared by processes,
announced once per process; a throwaway server only when asked for (``connect(throwaway=True)``)."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

import redmem
from conftest import SUITE_DATA_DIR
from redmem.store._connection import server_address, settings
from redmem.store._local_server import LocalServer
from test_local_server import servers_on

#: A user's script: stores one note, connects again (which says nothing more), counts the notes.
SCRIPT = """
import logging, sys
if sys.argv[2] == "log":
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s %(message)s")
import redmem
from redmem import AutoKeyField, Model, StringField

class Note(Model):
    note_id = AutoKeyField()
    text = StringField()

for n in range(int(sys.argv[1])):
    Note.create(text=f"note {n}")
redmem.connect()
redmem.get_client()
print("notes now:", Note.query.count(), flush=True)
"""


@pytest.fixture
def data_dir() -> Iterator[Path]:
    """A fresh short data directory (a unix socket path is short), its server stopped afterwards."""
    with tempfile.TemporaryDirectory(prefix="rm-durable-", dir="/tmp") as directory:
        data = Path(directory) / "data"
        try:
            yield data
        finally:
            LocalServer(data).stop()


def user_script(data: Path, notes: int = 1, logs: bool = True) -> subprocess.Popen[str]:
    """Start SCRIPT as a user would run it: no REDIS_URL, the data directory ``data``."""
    env = {k: v for k, v in os.environ.items() if k != "REDIS_URL"}
    return subprocess.Popen([sys.executable, "-c", SCRIPT, str(notes), "log" if logs else "quiet"],
                            env={**env, "REDMEM_DATA_DIR": str(data)}, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def finished(process: subprocess.Popen[str]) -> tuple[str, list[str]]:
    """The script's output and the lines of its log that say where the data lives."""
    out, err = process.communicate(timeout=120)
    assert process.returncode == 0, out + err
    return out, [line for line in err.splitlines() if "data in" in line]


def test_a_script_run_twice_finds_its_data_and_is_told_once_where_it_lives(data_dir: Path) -> None:
    first, first_log = finished(user_script(data_dir))
    second, second_log = finished(user_script(data_dir))
    assert (first, second) == ("notes now: 1\n", "notes now: 2\n")
    where = f"data in {data_dir}, socket {data_dir / 'redis.sock'}"
    assert first_log == [f"WARNING redmem.local_server redmem: started the local server; {where} "
                         "(`redmem server stop` stops it)"]
    assert second_log == [f"INFO redmem.local_server redmem: using the local server; {where} "
                          "(`redmem server stop` stops it)"]


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")
def test_processes_started_together_share_one_server(data_dir: Path) -> None:
    together = [user_script(data_dir, notes=20, logs=False) for _ in range(3)]
    logs = [finished(process)[1] for process in together]
    assert sorted(len(log) for log in logs) == [0, 0, 1]  # the one that started it says so (a warning: no logging set up)
    assert logs[[len(log) for log in logs].index(1)][0].startswith("redmem: started the local server; data in")
    assert finished(user_script(data_dir, notes=0))[0] == "notes now: 60\n"
    assert servers_on(data_dir) == [LocalServer(data_dir).running_pid()]


def test_the_suites_own_connections_never_reach_the_users_data_directory(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("REDIS_URL", raising=False)
    before = settings()
    try:
        client = redmem.connect()
        assert server_address(client) == f"unix:{SUITE_DATA_DIR}/redis.sock"
        assert SUITE_DATA_DIR.startswith("/tmp/rm-suite-") and os.environ["REDMEM_DATA_DIR"] == SUITE_DATA_DIR
    finally:
        redmem.configure(client=before.client)
