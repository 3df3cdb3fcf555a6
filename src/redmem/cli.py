"""The ``redmem`` command: parses arguments and hands each subcommand to its module.

``doctor`` checks the server; ``demo`` runs the main job on a bundled conversation; ``ingest``,
``ask``, ``chat`` and ``inspect`` work on the conversation memory of an agent, ``mcp`` serves it
as MCP tools; ``reindex`` fills the indexes of any model; ``upgrade`` brings an agent's memories
of older versions up to date; ``server`` shows or stops the local
server that keeps the data when no Redis URL is given. The global options (``--url``, ``--prefix``, ``--embeddings``) go
before or after the subcommand. See docs/cli.md.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from rich.console import Console
from rich.markup import escape

from . import demo
from .cli_commands import ask, chat, doctor, ingest, inspect, mcp_server, migrate, reindex, server, upgrade
from .cli_commands.memory import EMBEDDINGS
from .store.errors import RedmemError
from .ui import command as ui

__all__ = ["main", "parser", "COMMANDS"]

#: name -> (module with add_arguments and run, one-line help)
COMMANDS = {
    "doctor": (doctor, "show which Redis server is used and how fast it answers"),
    "demo": (demo, "ingest a sample conversation, assemble context for questions, report outcomes"),
    "ingest": (ingest, "store a conversation (JSON) or one memory per line (text) for an agent"),
    "ask": (ask, "show the context a question gets from an agent's memory, with its trace"),
    "chat": (chat, "talk with a memory-backed assistant (/quit to leave)"),
    "inspect": (inspect, "show everything stored about one memory (read-only)"),
    "reindex": (reindex, "re-run fields' index writes over every stored record of a model"),
    "migrate": (migrate, "move renamed fields' stored entries and build new indexes, exactly once and resumably"),
    "upgrade": (upgrade, "make an agent's memories of older versions searchable by keyword again"),
    "mcp": (mcp_server, "serve an agent's memory as MCP tools (remember, recall, feedback, forget, list_memories)"),
    "server": (server, "show or stop the local server that keeps the data when no Redis URL is given"),
    "ui": (ui, "browse an agent's memories, ask and see why, forget or give feedback, in a local web page"),
}


def add_global_options(parser: argparse.ArgumentParser, *, after_command: bool = False) -> None:
    """``--url``, ``--prefix``, ``--embeddings``, declared on the top parser and again on each subcommand.

    After the subcommand they default to ``argparse.SUPPRESS``: a value given there wins, and one
    left out keeps the value given before the subcommand (or the top parser's default).
    """
    unset: dict[str, Any] = {"default": argparse.SUPPRESS} if after_command else {}
    parser.add_argument("--url", **unset,
                        help="Redis URL (default: REDIS_URL, else the local server of the data directory)")
    parser.add_argument("--prefix", **unset,
                        help="key prefix of everything stored (default: rm; redmem-demo for the demo)")
    parser.add_argument("--embeddings", **({"default": "auto"} | unset), choices=EMBEDDINGS,
                        help="vectors from the offline MiniLM model, or hashing (default: auto, MiniLM if installed)")


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="redmem", description="Memory for LLM agents on Redis.")
    add_global_options(top)
    after = argparse.ArgumentParser(add_help=False)
    add_global_options(after, after_command=True)
    commands = top.add_subparsers(dest="command", required=True)
    for name, (module, help_text) in COMMANDS.items():
        module.add_arguments(commands.add_parser(name, help=help_text, description=help_text, parents=[after]))
    return top


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    console = Console()
    try:
        COMMANDS[args.command][0].run(console, args)
    except RedmemError as exc:
        console.print(f"[red]error:[/red] {escape(str(exc))}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
