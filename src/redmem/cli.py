"""The ``redmem`` command: ``doctor`` checks the server, ``demo`` runs the main job."""

from __future__ import annotations

import argparse
import sys

from rich.console import Console
from rich.table import Table

from . import demo
from .store.connection import connect
from .store.doctor import server_report
from .store.errors import RedmemError

__all__ = ["main"]


def doctor(console: Console, args: argparse.Namespace) -> None:
    """Print which Redis redmem uses: address, server and version, mode, Lua, round-trip time."""
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


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="redmem", description="Memory for LLM agents on Redis.")
    top.add_argument("--url", help="Redis URL (default: REDIS_URL, else a private embedded server)")
    commands = top.add_subparsers(dest="command", required=True)
    commands.add_parser("doctor", help="show which Redis server is used and how fast it answers")
    commands.add_parser("demo", help="save sample memories and query them back")
    return top


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    console = Console()
    try:
        {"doctor": doctor, "demo": demo.run}[args.command](console, args)
    except RedmemError as exc:
        console.print(f"[red]error:[/red] {exc}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
