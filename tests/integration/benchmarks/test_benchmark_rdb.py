"""``common.save_rdb``: the benchmarks' partitions are kept as RDB files, written with BGSAVE and
waited for, since a SAVE of a 100k-block partition outlasts the client's socket timeout."""

from __future__ import annotations

import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[3] / "benchmarks"
sys.path.insert(0, str(BENCH))

import common  # noqa: E402
from redmem.store._embedded import EmbeddedServer  # noqa: E402


def test_save_rdb_returns_once_the_data_is_on_disk_and_a_restart_reads_it(tmp_path):
    args = ["--dir", str(tmp_path), "--dbfilename", "dump.rdb"]
    with EmbeddedServer(unix_socket=False, extra_args=args) as server:
        client = server.client()
        client.mset({f"block:{n}": n for n in range(5_000)})
        common.save_rdb(client, poll_seconds=0.01)
        assert client.info("persistence")["rdb_changes_since_last_save"] == 0
        port = server.port
    assert (tmp_path / "dump.rdb").stat().st_size > 0
    with EmbeddedServer(unix_socket=False, port=port, extra_args=args) as again:
        assert again.client().dbsize() == 5_000
