"""``redmem ask "..."``: assemble the context one question would get, and show how it was chosen.

Assembling is a read with the assembler's post-effects: selected memories get a staged read,
proactive ones a pending RecallProposal, and pull candidates left out a mild confidence signal.
"""

from __future__ import annotations

import argparse

from rich.console import Console
from rich.markup import escape

from ..context._rendering import FORMATS
from ..recipes.assembler._context_assembler import ContextAssembler
from ._agents import add_agent_argument, require_memories
from ._as_of import as_of_where
from ._display import context_panel, summary, trace_table
from ._memory import memory_assembler
from ._runtime import print_notes, start
from ._why import why_tables
from ._windows import read_memories

__all__ = ["add_arguments", "run", "assembler_from"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("question", help="the user's turn")
    add_budget_arguments(parser)
    parser.add_argument("--why", action="store_true",
                        help="explain each memory (arms, ranks, weights, boosts) and what was left out and why")
    parser.add_argument("--as-of", metavar="WHEN",
                        help="read the memory as it was at WHEN (ISO 8601 date/time, epoch seconds, or 'all' "
                             "for every version, superseded ones too)")


def add_budget_arguments(parser: argparse.ArgumentParser) -> None:
    """``--agent``, ``--max-items``, ``--max-tokens`` and ``--format`` (shared with chat)."""
    add_agent_argument(parser, "whose memory to search")
    parser.add_argument("--max-items", type=int, default=10, help="most records in the context (default: 10)")
    parser.add_argument("--max-tokens", type=int, default=2000, help="token budget of the context (default: 2000)")
    parser.add_argument("--format", default="structured", choices=FORMATS, help="output format (default: structured)")


def assembler_from(args: argparse.Namespace) -> ContextAssembler:
    """The assembler the budget arguments describe."""
    return memory_assembler(args.max_items, args.max_tokens, args.format)


def run(console: Console, args: argparse.Namespace) -> None:
    assembler = assembler_from(args)
    where = as_of_where(assembler.model_class, args.as_of, "--as-of")
    runtime = start(args)
    console.print(f"memory of agent {escape(repr(args.agent))}, {escape(runtime.location)}", highlight=False)
    print_notes(console, runtime)
    require_memories(args.agent, runtime)
    result = read_memories(assembler, args.question, args.agent, where, emit_trace=True)
    console.print(summary(result, args.max_tokens))
    console.print(context_panel(result, args.format, args.max_tokens))
    console.print(trace_table(result, keys=True))
    if args.why:
        console.print(why_tables(result.explain()))
