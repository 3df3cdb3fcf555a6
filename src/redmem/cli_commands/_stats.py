"""``redmem stats [--agent A]``: per agent, how many memories and keys it holds; the server and prefix."""

from __future__ import annotations

import argparse

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ..recipes._tenant_data import tenant_key_count
from ._agents import DEFAULT_AGENT, agents_here, memory_count, require_memories
from ._memory import ChatMemory
from ._runtime import print_notes, start

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--agent", help="one agent only (default: every agent holding memories)")


def run(console: Console, args: argparse.Namespace) -> None:
    runtime = start(args)
    print_notes(console, runtime)
    if args.agent is not None:
        require_memories(args.agent, runtime)
    agents = [args.agent] if args.agent is not None else agents_here()
    table = Table(box=box.SIMPLE_HEAD)
    for column, justify in (("agent", "left"), ("memories", "right"), ("keys", "right")):
        table.add_column(column, justify=justify)  # type: ignore[arg-type]
    for agent in agents:
        table.add_row(escape(agent), str(memory_count(agent)), str(tenant_key_count(ChatMemory, agent_id=agent)))
    console.print(f"{len(agents)} agents with memories (default agent {DEFAULT_AGENT!r}), "
                  f"{escape(runtime.location)}", highlight=False)
    if agents:
        console.print(table)
