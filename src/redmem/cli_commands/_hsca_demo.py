"""The HSCA part of ``redmem demo``: the sample conversation through HSCAEngine, its beats and macro queries.

Every turn is scored by the four layers; the snapshots go to the agent's ``demo`` session in
Redis (cleared first, so a rerun starts at position 0), then the demo prints the beat most
relevant to the first question and the last beat.
"""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.rule import Rule

from ..recipes.hsca import HSCAEngine, SessionStore
from ._conversation import Conversation

__all__ = ["show_hsca", "HSCA_SESSION", "SHOWN_BEATS"]

#: The session of the demo agent that holds the demo's snapshots.
HSCA_SESSION = "demo"
#: Beats printed (the last ones): the demo's sections share one screen's worth of lines.
SHOWN_BEATS = 1


def show_hsca(console: Console, conversation: Conversation, agent: str) -> None:
    """Ingest ``conversation`` into an HSCA session of ``agent`` and print its macro context."""
    SessionStore(agent, HSCA_SESSION).clear()
    engine = HSCAEngine(agent_id=agent, session_id=HSCA_SESSION)
    for turn in conversation.turns:
        engine.ingest_turn(f"{turn.speaker}: {turn.text}" if turn.speaker else turn.text)
    snapshots = engine.get_macro_context()
    found = engine.relevant(conversation.questions[0].text, limit=1) if conversation.questions else []
    best = f"; question 1: beat {found[0].snapshot.conversation_position}" if found else ""
    console.print(Rule(f"HSCA: {len(conversation.turns)} turns, {len(snapshots)} beats in Redis{best}"))
    for snapshot in snapshots[-SHOWN_BEATS:]:
        domains = ", ".join(f"{d} {w:.2f}" for d, w in sorted(snapshot.domain_summary.items(), key=lambda i: -i[1])[:2])
        forced = ", forced" if snapshot.forced else ""
        console.print(f"last beat {snapshot.conversation_position}: {len(snapshot.chunks)} turns{forced}, "
                      f"weight {snapshot.macro_weight:.2f}, {escape(domains)}", highlight=False)
