"""The HSCA part of ``redmem demo``: the sample conversation through HSCAEngine, its beats and macro queries.

Every turn is scored by the four layers; the snapshots go to the agent's ``demo`` session in
Redis (cleared first, so a rerun starts at position 0), then the demo prints each beat and asks
the macro context where a concept first appeared and which beats a question is relevant to.
"""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.rule import Rule
from rich.table import Table

from ..recipes.hsca import HSCAEngine, SessionStore
from .conversation import Conversation

__all__ = ["show_hsca", "HSCA_SESSION", "SHOWN_BEATS"]

#: The session of the demo agent that holds the demo's snapshots.
HSCA_SESSION = "demo"
#: Beats printed (the last ones).
SHOWN_BEATS = 6


def show_hsca(console: Console, conversation: Conversation, agent: str) -> None:
    """Ingest ``conversation`` into an HSCA session of ``agent`` and print its macro context."""
    console.print(Rule("HSCA: beats and macro context"))
    SessionStore(agent, HSCA_SESSION).clear()
    engine = HSCAEngine(agent_id=agent, session_id=HSCA_SESSION)
    for turn in conversation.turns:
        engine.ingest_turn(f"{turn.speaker}: {turn.text}" if turn.speaker else turn.text)
    table = Table("beat", "turns", "forced", "macro weight", "domains (share of layer-1 weight)")
    snapshots = engine.get_macro_context()
    for snapshot in snapshots[-SHOWN_BEATS:]:
        domains = ", ".join(f"{d} {w:.2f}" for d, w in sorted(snapshot.domain_summary.items(), key=lambda i: -i[1])[:3])
        table.add_row(str(snapshot.conversation_position), str(len(snapshot.chunks)), "yes" if snapshot.forced else "",
                      f"{snapshot.macro_weight:.2f}", escape(domains))
    console.print(f"{len(conversation.turns)} turns made {len(snapshots)} beats; the last {SHOWN_BEATS}:")
    console.print(table)
    console.print(f"turns waiting in the buffer for the next beat: {len(engine.buffer)}; the snapshots are in "
                  f"Redis, session {HSCA_SESSION!r} of agent {agent!r}")
    for question in conversation.questions[:2]:
        found = engine.relevant(question.text, limit=2)
        beats = ", ".join(f"beat {r.snapshot.conversation_position} ({r.relevance:.2f})" for r in found) or "none"
        console.print(f"relevant to {escape(repr(question.text))}: {beats}")
