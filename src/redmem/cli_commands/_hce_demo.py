"""The HCE section of ``redmem demo``: the sample conversation through ``HCEPipeline``.

Every user/assistant exchange of the sample is stored in one session (focus buffer, entity
graph, semantic tree); then where each sample question's context block came from (graph, tree,
buffer), in one line for all (``--verbose``: per question, with tokens, round trips and the best
candidates).
The chat model is asked in the demo's main section only.
"""

from __future__ import annotations

from collections import Counter

from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..recipes.hce import ContextCandidate, HCEPipeline
from ._conversation import Conversation

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
    """Fill one HCE session from the conversation, then show each question's context block by source:
    two lines in all, or per question its sources, tokens, round trips and best candidates when ``verbose``."""
    pipe = HCEPipeline(session_id=session_id, max_focus=FOCUS, context_budget=budget)
    pipe.clear()
    pairs = exchanges(conversation)
    pipe.update_many(pairs)
    console.print(Text(f"HCE pipeline (redmem.recipes.hce): {len(pairs)} exchanges, "
                       f"{len(pipe.graph.entities())} entities in its graph", no_wrap=True, overflow="ellipsis"))
    blocks = []
    for question in conversation.questions:
        found = pipe.retrieve_candidates(question.text, for_prompt=True)
        sources = ", ".join(f"{n} {s}" for s, n in sorted(Counter(c.source for c in found.selected).items()))
        blocks.append(sources or "none")
        if verbose:
            console.print(f"  {question.text}: {sources or 'nothing'}, "
                          f"{sum(c.token_cost for c in found.selected)}/{budget} tokens, "
                          f"{found.round_trips} round trips", highlight=False)
            console.print(_best(found.selected[:SHOWN]))
    if not verbose:
        console.print(Text(f"  blocks by source: {' | '.join(blocks)}", no_wrap=True, overflow="ellipsis"))


def _best(selected: list[ContextCandidate]) -> Table:
    table = Table(show_header=True, box=None, pad_edge=False)
    for column in ("source", "utility", "tokens", "text"):
        table.add_column(column, no_wrap=column != "text", overflow="ellipsis")
    for c in selected:
        table.add_row(c.source, f"{c.utility:.3f}", str(c.token_cost), c.content.replace("\n", " / "))
    return table
