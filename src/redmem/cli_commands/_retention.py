"""``redmem retention --agent A --keep N / --older-than DAYS [--yes]``: evict an agent's least
valuable or oldest memories, archived first.

A dry run by default: it lists what would go (and why) and changes nothing. ``--yes``, or typing
``evict`` at the prompt of an interactive terminal, evicts: each memory's stored fields go to the
agent's archive stream first (:func:`~redmem.recipes._retention.archived` reads it; ``export``
and ``forget --all`` carry and erase it with the agent), then the memory and its index entries
are deleted. ``--keep N`` keeps the N memories of highest decayed relevance; ``--older-than
DAYS`` evicts those whose relevance clock (when said, or last recalled) is older.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ..model._dbkey import DbKey
from ..model._loading import load_records
from ..recipes._retention import Retention, RetentionReport, apply_retention, plan_retention
from ..store._errors import ValidationError
from ._agents import add_agent_argument, require_memories
from ._memory import ChatMemory
from ._runtime import print_notes, start

__all__ = ["add_arguments", "run", "policy_of", "retention_policy", "Evicted", "evict_memories"]

#: Memories listed by a dry run (the count covers them all).
SHOWN = 10
DAY = 86400.0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_agent_argument(parser, "whose memories to evict")
    parser.add_argument("--keep", type=int, metavar="N", help="keep the N memories of highest decayed relevance")
    parser.add_argument("--older-than", type=float, metavar="DAYS",
                        help="evict memories said (or last recalled) more than DAYS days ago")
    parser.add_argument("--yes", action="store_true", help="evict (archived first) without asking; else a dry run")


@dataclass
class Evicted:
    """What a retention run evicted (``applied``) or would evict (a dry run): memory ids by reason."""

    agent_id: str
    applied: bool
    past_keep: list[str]
    older: list[str]


def policy_of(args: argparse.Namespace) -> Retention:
    """The policy the command's options describe (see :func:`retention_policy`)."""
    return retention_policy(args.keep, args.older_than, ("--keep", "--older-than"))


def retention_policy(keep: int | None, older_than_days: float | None, names: tuple[str, str]) -> Retention:
    """The policy of ChatMemory keeping ``keep`` memories and/or none older than ``older_than_days``
    (archiving, ranked by ``relevance``); ValidationError naming ``names`` without a rule or with a bad one."""
    if keep is None and older_than_days is None:
        raise ValidationError(f"say what to keep: {names[0]} N (the most relevant N) and/or {names[1]} DAYS")
    if keep is not None and keep < 1:
        raise ValidationError(f"{names[0]} must be at least 1, not {keep}")
    if older_than_days is not None and not older_than_days > 0:
        raise ValidationError(f"{names[1]} must be above 0 days, not {older_than_days}")
    ttl = None if older_than_days is None else older_than_days * DAY
    return Retention(max_memories=keep, ttl_seconds=ttl, archive=True, field="relevance")


def evict_memories(agent: str, policy: Retention, confirm: str | None) -> Evicted:
    """Evict what ``policy`` says from ``agent``'s memories, archived first, when ``confirm`` repeats
    the agent's id; else a dry run (what would go, nothing changed)."""
    applied = confirm == agent
    if confirm is not None and not applied:
        raise ValidationError(f"not confirmed: to evict from agent {agent!r}, pass confirm={agent!r} "
                              "(nothing was evicted)")
    run_policy = apply_retention if applied else plan_retention
    report = run_policy(ChatMemory, policy=policy, agent_id=agent)
    return Evicted(agent, applied, report.over_cap, report.expired)


def run(console: Console, args: argparse.Namespace) -> None:
    policy = policy_of(args)
    runtime = start(args)
    print_notes(console, runtime)
    count = require_memories(args.agent, runtime)
    plan = plan_retention(ChatMemory, policy=policy, agent_id=args.agent)
    agent = escape(repr(args.agent))
    if not plan.evicted:
        console.print(f"nothing to evict: agent {agent} keeps all {count} memories", highlight=False)
        return
    console.print(_table(args.agent, plan))
    console.print(f"{plan.evicted} of {count} memories of agent {agent} would be evicted "
                  f"({len(plan.over_cap)} past --keep, {len(plan.expired)} older than --older-than), "
                  "each archived first", highlight=False)
    if not _confirmed(console, args):
        console.print("dry run: nothing was evicted (add --yes to evict)", highlight=False)
        return
    done = apply_retention(ChatMemory, policy=policy, agent_id=args.agent)
    console.print(f"evicted {done.evicted} memories of agent {agent} (archived), {escape(runtime.location)}",
                  highlight=False)


def _confirmed(console: Console, args: argparse.Namespace) -> bool:
    if args.yes:
        return True
    if not sys.stdin.isatty():
        return False
    return console.input("type evict to evict them: ").strip() == "evict"


def _table(agent: str, plan: RetentionReport) -> Table:
    """The first :data:`SHOWN` memories that would go, with why."""
    reasons = {**dict.fromkeys(plan.over_cap, "past --keep"), **dict.fromkeys(plan.expired, "older")}
    ids = list(reasons)[:SHOWN]
    space = ChatMemory._meta.keyspace((agent,))
    table = Table("memory", "said", "why", "content", title=f"would evict (first {len(ids)} of {len(reasons)})")
    for record in load_records(ChatMemory, [DbKey(space, rid) for rid in ids], track=False):
        table.add_row(record.memory_id, record.said_at or "", reasons[record.memory_id], escape(record.content or ""))
    return table
