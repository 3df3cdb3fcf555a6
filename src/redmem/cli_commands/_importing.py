"""``redmem import FILE``: write an agent exported by ``redmem export`` (the agent its file names)
into this server and key prefix; refused when that agent already holds memories here."""

from __future__ import annotations

import argparse

from rich.console import Console
from rich.markup import escape

from ..recipes._tenant_data import import_tenant
from ._agents import memory_count
from ._conversation import DEFAULT_ENCODING, read_text_file
from ._memory import ChatMemory
from ._runtime import print_notes, start

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", help="a file written by redmem export")
    parser.add_argument("--encoding", default=DEFAULT_ENCODING, help=f"the file's text encoding (default: {DEFAULT_ENCODING})")


def run(console: Console, args: argparse.Namespace) -> None:
    text = read_text_file(args.file, args.encoding)
    runtime = start(args)
    print_notes(console, runtime)
    tenant, keys = import_tenant(ChatMemory, text.splitlines())
    agent = str(tenant["agent_id"])
    console.print(f"imported agent {escape(repr(agent))} ({memory_count(agent)} memories, {keys} keys) from "
                  f"{escape(args.file)}, {escape(runtime.location)}", highlight=False)
