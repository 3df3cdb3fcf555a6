"""Running one subcommand: its output on a rich console, a library error as one ``error:`` line."""

from __future__ import annotations

import argparse
from typing import Any

from rich.console import Console
from rich.markup import escape

from ..store._errors import RedmemError

__all__ = ["run_command"]


def run_command(module: Any, args: argparse.Namespace) -> int:
    """Run ``module.run``; returns the exit status (1, with ``error: <message>`` printed, on a RedmemError)."""
    console = Console()
    try:
        module.run(console, args)
    except RedmemError as exc:
        console.print(f"[red]error:[/red] {escape(str(exc))}")
        return 1
    return 0
