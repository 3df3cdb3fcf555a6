"""``redmem list [--agent A]``: an agent's memories, a page at a time, in memory-id order."""

from __future__ import annotations

import argparse

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ._agents import add_agent_argument, require_memories
from ._memory import ChatMemory
from ._runtime import print_notes, start

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_agent_argument(parser, "whose memories to list")
    parser.add_argument("--limit", type=int, default=20, help="most memories shown (default: 20)")
    parser.add_argument("--offset", type=int, default=0, help="memories skipped first (default: 0)")


def run(console: Console, args: argparse.Namespace) -> None:
    runtime = start(args)
    print_notes(console, runtime)
    total = require_memories(args.agent, runtime)
    page = ChatMemory.query.filter(agent_id=args.agent).no_track().limit(args.limit, args.offset).all()
    table = Table(box=box.SIMPLE_HEAD)
    for column in ("memory_id", "date", "speaker", "content"):
        table.add_column(column, overflow="fold")
    for memory in page:
        table.add_row(memory.memory_id, memory.date or "-", memory.speaker or "-", escape(memory.content or ""))
    console.print(f"agent {escape(repr(args.agent))}: memories {args.offset + 1 if page else 0}-"
                  f"{args.offset + len(page)} of {total}, {escape(runtime.location)}", highlight=False)
    console.print(table)
