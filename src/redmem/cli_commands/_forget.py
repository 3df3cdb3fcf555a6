"""``redmem forget ID... [--agent A]`` deletes memories; ``redmem forget --all --agent A`` erases the
agent: every key of it, checked gone after, once confirmed (typing the agent's name, or ``--yes``)."""

from __future__ import annotations

import argparse
import sys

from rich.console import Console
from rich.markup import escape

from ..recipes._tenant_data import erase_tenant, tenant_key_count
from ..store._errors import ValidationError
from ._agents import add_agent_argument, require_memories
from ._memory import ChatMemory
from ._runtime import Runtime, print_notes, start

__all__ = ["add_arguments", "run", "forget_memories"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("memory_ids", nargs="*", metavar="MEMORY_ID", help="the memories to delete")
    add_agent_argument(parser, "whose memories")
    parser.add_argument("--all", action="store_true", help="erase the agent: every memory and everything about it")
    parser.add_argument("--yes", action="store_true", help="erase without asking for confirmation")


def forget_memories(agent: str, memory_ids: list[str]) -> tuple[list[str], list[str]]:
    """Delete ``agent``'s memories with these ids and everything indexed about them: (deleted, not found)."""
    query = ChatMemory.query.no_track()
    gone = []
    for memory_id in dict.fromkeys(memory_ids):
        record = query.get(agent_id=agent, memory_id=memory_id)
        if record is not None and record.delete():
            gone.append(memory_id)
    return gone, [memory_id for memory_id in dict.fromkeys(memory_ids) if memory_id not in gone]


def run(console: Console, args: argparse.Namespace) -> None:
    if args.all == bool(args.memory_ids):
        raise ValidationError("name the memories to forget (MEMORY_ID ...), or erase the whole agent with --all")
    runtime = start(args)
    print_notes(console, runtime)
    agent = repr(args.agent)
    if not args.all:
        gone, missing = forget_memories(args.agent, args.memory_ids)
        console.print(f"forgot {len(gone)} memories of agent {escape(agent)}, {escape(runtime.location)}", highlight=False)
        if missing:
            raise ValidationError(f"agent {args.agent!r} has no memory {', '.join(missing)}")
        return
    _confirm(console, args, runtime)
    done = erase_tenant(ChatMemory, agent_id=args.agent)
    if not done.complete:
        raise ValidationError(f"{done.left} keys of agent {args.agent!r} are still there (written meanwhile?): run again")
    console.print(f"erased agent {escape(agent)}: {done.erased} keys deleted, 0 left, {escape(runtime.location)}",
                  highlight=False)


def _confirm(console: Console, args: argparse.Namespace, runtime: Runtime) -> None:
    """Ask for the agent's name before an erase, unless ``--yes``; refuse when no one can answer."""
    count = require_memories(args.agent, runtime)
    if args.yes:
        return
    if not sys.stdin.isatty():
        raise ValidationError("erasing an agent needs confirmation: add --yes (nothing was erased)")
    keys = tenant_key_count(ChatMemory, agent_id=args.agent)
    answer = console.input(f"erase agent {escape(repr(args.agent))} ({count} memories, {keys} keys) for good? "
                           "type its name to confirm: ")
    if answer.strip() != args.agent:
        raise ValidationError("not confirmed: nothing was erased")
