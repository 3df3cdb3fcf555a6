"""``redmem export [--agent A] [--output FILE]``: an agent's whole memory as JSON Lines (every key,
see :mod:`redmem.recipes._tenant_data`), to FILE or to standard output; ``redmem import`` reads it."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from ..recipes._tenant_data import export_tenant
from ..store._errors import ValidationError
from ._agents import add_agent_argument, require_memories
from ._memory import ChatMemory
from ._runtime import print_notes, start

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_agent_argument(parser, "whose memory to export")
    parser.add_argument("--output", "-o", type=Path, metavar="FILE",
                        help="write it to FILE, UTF-8 (default: standard output, the messages then on stderr)")


def run(console: Console, args: argparse.Namespace) -> None:
    notes = console if args.output is not None else Console(stderr=True)
    runtime = start(args)
    print_notes(notes, runtime)
    count = require_memories(args.agent, runtime)
    if args.output is None:
        keys = export_tenant(ChatMemory, sys.stdout, agent_id=args.agent)
        where = "standard output"
    else:
        try:
            with args.output.open("w", encoding="utf-8") as out:
                keys = export_tenant(ChatMemory, out, agent_id=args.agent)
        except OSError as exc:
            raise ValidationError(f"cannot write {args.output}: {exc.strerror or exc}") from None
        where = str(args.output)
    notes.print(f"exported agent {escape(repr(args.agent))} ({count} memories, {keys} keys) to {escape(where)}, "
                f"{escape(runtime.location)}", highlight=False)
