"""The HSCA part of ``redmem demo``: the sample conversation through HSCAEngine, its beats and macro queries.

Every turn is scored by the four layers; the snapshots go to the agent's ``demo`` session in
Redis (cleared first, so a rerun starts at position 0), then the demo prints the last beats and
which beats the first question is relevant to.
"""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.rule import Rule

from ..recipes.hsca import HSCAEngine, SessionStore
from .conversation import Conversation

__all__ = ["show_hsca", "HSCA_SESSION", "SHOWN_BEATS"]

#: The session of the demo agent that holds the demo's snapshots.
HSCA_SESSION = "demo"
#: Beats printed (the last ones).
SHOWN_BEATS = 2


def show_hsca(console: Console, conversation: Conversation, agent: str) -> None:
    """Ingest ``conversation`` into an HSCA session of ``agent`` and print its macro context."""
    SessionStore(agent, HSCA_SESSION).clear()
    engine = HSCAEngine(agent_id=agent, session_id=HSCA_SESSION)
    for turn in conversation.turns:
        engine.ingest_turn(f"{turn.speaker}: {turn.text}" if turn.speaker else turn.text)
    snapshots = engine.get_macro_context()
    console.print(Rule(f"HSCA: {len(conversation.turns)} turns, {len(snapshots)} beats in Redis, "
                       f"{len(engine.buffer)} buffered"))
    for snapshot in snapshots[-SHOWN_BEATS:]:
        domains = ", ".join(f"{d} {w:.2f}" for d, w in sorted(snapshot.domain_summary.items(), key=lambda i: -i[1])[:2])
        forced = ", forced" if snapshot.forced else ""
        console.print(f"  beat {snapshot.conversation_position}: {len(snapshot.chunks)} turns{forced}, "
                      f"macro weight {snapshot.macro_weight:.2f}, {escape(domains)}", highlight=False)
    for question in conversation.questions[:1]:
        found = engine.relevant(question.text, limit=2)
        beats = ", ".join(f"beat {r.snapshot.conversation_position} ({r.relevance:.2f})" for r in found) or "none"
        console.print(f"relevant to the first question: {beats}", highlight=False)
