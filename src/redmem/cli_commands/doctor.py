"""``redmem doctor``: which Redis redmem uses and how fast it answers."""

from __future__ import annotations

import argparse

from rich.console import Console
from rich.table import Table

from ..store.connection import connect
from ..store.doctor import server_report

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """No options of its own."""


def run(console: Console, args: argparse.Namespace) -> None:
    """Print the address, server and version, mode, Lua, client and round-trip time."""
    report = server_report(connect(args.url))
    table = Table(title="redmem doctor", show_header=False)
    table.add_row("address", report["address"])
    table.add_row("server", f"{report['server']} {report['version']} (redis_version {report['redis_version']})")
    table.add_row("mode", report["mode"])
    table.add_row("embedded binary", report["embedded"] or "no (external server)")
    table.add_row("lua scripts", "ok" if report["lua"] else "FAILED")
    table.add_row("client", report["client"])
    table.add_row(
        "round trip (PING)",
        f"p50 {report['rtt_p50_ms']:.3f} ms, p95 {report['rtt_p95_ms']:.3f} ms over {report['samples']}",
    )
    console.print(table)
