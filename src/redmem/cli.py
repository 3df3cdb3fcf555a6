"""The ``redmem`` command: parses arguments and hands each subcommand to its module.

``doctor`` checks the server; ``demo`` runs the main job on a bundled conversation; ``ingest``,
``ask``, ``chat`` and ``inspect`` work on the conversation memory of an agent, ``list``,
``stats``, ``forget``, ``export`` and ``import`` show, erase and move it, ``mcp`` serves it as
MCP tools; ``reindex`` fills the indexes of any model; ``upgrade`` brings an agent's memories
of older versions up to date; ``server`` shows or stops the local
server that keeps the data when no Redis URL is given. The global options (``--url``, ``--prefix``, ``--embeddings``) go
before or after the subcommand. ``redmem`` alone prints the help. A subcommand's module is
imported only when the command line names it, so ``redmem --help`` does not load them all.
See docs/cli.md.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from types import ModuleType
from typing import Any

from .cli_commands._choices import EMBEDDINGS

__all__ = ["main", "parser", "COMMANDS"]

#: The module that runs a subcommand and prints its errors (imported once a command is run).
RUNNER = "redmem.cli_commands._runner"
#: name -> (module with add_arguments and run, or its dotted name, imported when the command is used; one-line help)
COMMANDS: dict[str, tuple[ModuleType | str, str]] = {
    "doctor": ("redmem.cli_commands._doctor", "show which Redis server is used and how fast it answers"),
    "demo": ("redmem._demo", "ingest a sample conversation, assemble context for questions, report outcomes"),
    "ingest": ("redmem.cli_commands._ingest", "store a conversation (JSON) or one memory per line (text) for an agent"),
    "ask": ("redmem.cli_commands._ask", "show the context a question gets from an agent's memory, with its trace"),
    "chat": ("redmem.cli_commands._chat", "talk with a memory-backed assistant (/quit to leave)"),
    "list": ("redmem.cli_commands._listing", "list an agent's memories, a page at a time"),
    "stats": ("redmem.cli_commands._stats", "show each agent's memory and key counts"),
    "inspect": ("redmem.cli_commands._inspect", "show everything stored about one memory (read-only)"),
    "forget": ("redmem.cli_commands._forget", "delete memories, or erase a whole agent (--all, confirmed)"),
    "retention": ("redmem.cli_commands._retention",
                  "evict an agent's least relevant or oldest memories, archived (a dry run unless --yes)"),
    "export": ("redmem.cli_commands._export", "write an agent's whole memory to JSON Lines"),
    "import": ("redmem.cli_commands._importing", "write an agent exported by `redmem export` into this server"),
    "reindex": ("redmem.cli_commands._reindex", "re-run fields' index writes over every stored record of a model"),
    "migrate": ("redmem.cli_commands._migrate",
                "move renamed fields' stored entries and build new indexes, exactly once and resumably"),
    "upgrade": ("redmem.cli_commands._upgrade", "make an agent's memories of older versions searchable by keyword again"),
    "mcp": ("redmem.cli_commands.mcp_server",
            "serve an agent's memory as MCP tools (remember, recall, feedback, forget, list_memories, retention, export, erase)"),
    "server": ("redmem.cli_commands._server", "show or stop the local server that keeps the data when no Redis URL is given"),
    "ui": ("redmem.ui._command", "browse an agent's memories, ask and see why, forget or give feedback, in a local web page"),
}


def command_module(name: str) -> Any:
    """The module of subcommand ``name`` (imported now if it was given by name)."""
    module = COMMANDS[name][0]
    return importlib.import_module(module) if isinstance(module, str) else module


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


def parser(used: set[str] | None = None) -> argparse.ArgumentParser:
    """The whole command line; with ``used``, the arguments of those subcommands only (the others
    are listed with their help, their modules not imported)."""
    top = argparse.ArgumentParser(prog="redmem", description="Memory for LLM agents on Redis.")
    add_global_options(top)
    after = argparse.ArgumentParser(add_help=False)
    add_global_options(after, after_command=True)
    commands = top.add_subparsers(dest="command", metavar="COMMAND")
    for name, (_, help_text) in COMMANDS.items():
        sub = commands.add_parser(name, help=help_text, description=help_text, parents=[after])
        if used is None or name in used:
            command_module(name).add_arguments(sub)
    return top


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    top = parser({word for word in argv if word in COMMANDS})
    args = top.parse_args(argv)
    if args.command is None:
        top.print_help()
        return 0
    status: int = importlib.import_module(RUNNER).run_command(command_module(args.command), args)
    return status


if __name__ == "__main__":
    sys.exit(main())
