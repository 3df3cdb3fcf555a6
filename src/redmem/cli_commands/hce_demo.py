"""The HCE section of ``redmem demo``: the sample conversation through ``HCEPipeline``.

Every user/assistant exchange of the sample is stored in one session (focus buffer, entity
graph, semantic tree); each sample question then shows where its context block came from
(graph, tree, buffer) and what it cost, in one line (the best candidates too with ``--verbose``).
The chat model is asked in the demo's main section only.
"""

from __future__ import annotations

import time
from collections import Counter

from rich.console import Console
from rich.table import Table

from ..recipes.hce import ContextCandidate, HCEPipeline
from .conversation import Conversation

__all__ = ["run_hce"]

#: Messages the demo's focus buffer keeps (three exchanges).
FOCUS = 6
#: Selected candidates shown per question.
SHOWN = 3


def exchanges(conversation: Conversation) -> list[tuple[str, str]]:
    """The conversation as (user, assistant) pairs: each user turn with the assistant turn that
    answers it ("" when none does); an assistant turn that answers no user turn is its own pair."""
    pairs: list[tuple[str, str]] = []
    pending: str | None = None
    for turn in conversation.turns:
        if turn.speaker != "assistant":
            if pending is not None:
                pairs.append((pending, ""))
            pending = turn.text
        else:
            pairs.append((pending or "(the assistant spoke first)", turn.text))
            pending = None
    return pairs + ([(pending, "")] if pending is not None else [])


def run_hce(console: Console, conversation: Conversation, session_id: str, budget: int, verbose: bool) -> None:
    """Fill one HCE session from the conversation, then show each question's context block: one line
    per question, plus its best candidates when ``verbose``."""
    pipe = HCEPipeline(session_id=session_id, max_focus=FOCUS, context_budget=budget)
    pipe.clear()
    began = time.perf_counter()
    pairs = exchanges(conversation)
    pipe.update_many(pairs)
    console.print(f"[bold]HCE pipeline[/bold] (redmem.recipes.hce): {len(pairs)} exchanges stored in "
                  f"{time.perf_counter() - began:.1f} s, {len(pipe.graph.entities())} entities in the graph; "
                  "context blocks by source:", highlight=False)
    for question in conversation.questions:
        found = pipe.retrieve_candidates(question.text, for_prompt=True)
        by_source = Counter(c.source for c in found.selected)
        console.print(f"  {question.text} {', '.join(f'{n} {s}' for s, n in sorted(by_source.items())) or 'none'}, "
                      f"{sum(c.token_cost for c in found.selected)}/{budget} tokens, {found.round_trips} round trips",
                      highlight=False)
        if verbose:
            console.print(_best(found.selected[:SHOWN]))


def _best(selected: list[ContextCandidate]) -> Table:
    table = Table(show_header=True, box=None, pad_edge=False)
    for column in ("source", "utility", "tokens", "text"):
        table.add_column(column, no_wrap=column != "text", overflow="ellipsis")
    for c in selected:
        table.add_row(c.source, f"{c.utility:.3f}", str(c.token_cost), c.content.replace("\n", " / "))
    return table
