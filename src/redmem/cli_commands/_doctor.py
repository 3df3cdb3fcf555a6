"""``redmem doctor``: which Redis the data commands use, where its data lives, and how fast it answers."""

from __future__ import annotations

import argparse

from rich.console import Console
from rich.table import Table

from ..store._doctor import server_report
from ..store._embedded import find_server_binary
from ._runtime import open_server

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """No options of its own."""


def run(console: Console, args: argparse.Namespace) -> None:
    """Print the address, data directory, server and version, mode, Lua, client and round-trip time."""
    server = open_server(args.url)
    report = server_report(server.client)
    table = Table(title="redmem doctor", show_header=False)
    table.add_row("address", report["address"])
    table.add_row("data", server.storage + (" (started by this command; `redmem server stop` stops it)"
                                            if server.started else ""))
    table.add_row("server", f"{report['server']} {report['version']} (redis_version {report['redis_version']})")
    table.add_row("mode", report["mode"])
    binary = report["embedded"] or (find_server_binary() if server.data_dir else None)
    table.add_row("embedded binary", binary or "no (external server)")
    table.add_row("lua scripts", "ok" if report["lua"] else "FAILED")
    table.add_row("client", report["client"])
    table.add_row(
        "round trip (PING)",
        f"p50 {report['rtt_p50_ms']:.3f} ms, p95 {report['rtt_p95_ms']:.3f} ms over {report['samples']}",
    )
    console.print(table)
