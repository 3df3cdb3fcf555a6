"""``redmem upgrade [--agent A]``: give an agent's memories written by older versions what this one searches.

Memories stored before turns carried their neighbours (``context``, ``passage``) are recalled by
their stored vector, but the keyword search, which reads ``context``, does not find them until
each has a context of its own line (:func:`~redmem.cli_commands._ingest.upgrade_memories`). It
only adds: nothing is deleted, and memories already upgraded are left as they are.
"""

from __future__ import annotations

import argparse

from rich.console import Console
from rich.markup import escape

from ._agents import add_agent_argument
from ._ingest import upgrade_memories
from ._runtime import print_notes, start

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_agent_argument(parser, "whose memories to upgrade")


def run(console: Console, args: argparse.Namespace) -> None:
    runtime = start(args)
    print_notes(console, runtime)
    done = upgrade_memories(args.agent)
    console.print(f"upgraded {done} memories of agent {escape(repr(args.agent))} under {escape(runtime.location)}",
                  highlight=False)
