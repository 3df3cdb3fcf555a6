"""A read of an agent's memories answers as the four-round-trip read did, whatever is superseded.

Before, ``read_memories`` read ``as_of="all"`` (with the window counts riding) and, when a memory
was superseded, asked the current read again: four round trips. It now sends the current read
at once to an agent whose last read found something superseded (and the ``as_of="all"`` read to
any other), asking again only when the counts say otherwise. The reference below is the old rule
written out: ``as_of="all"`` when nothing is superseded, else the current read. Both run on twin agents holding the same turns
(same ids, same times) with the same memories superseded, asked the same questions at a fixed
clock, so the post-effects of each read keep the twins alike.
"""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import configured_embeddings
from redmem.cli_commands._conversation import ChatTurn
from redmem.cli_commands._ingest import store_turns
from redmem.cli_commands._memory import ChatMemory, memory_assembler
from redmem.cli_commands._windows import WindowCounts, read_memories
from redmem.embeddings import HashingEmbeddings
from redmem.fields.search_protocol import run_search
from redmem.lifecycle import ALL_TIMES, AS_OF, supersede

SAID = [
    ("Ana", "I live in Berlin near the river."),
    ("Ben", "Berlin is cold in winter, bring a coat."),
    ("Ana", "I moved to Lisbon near the sea."),
    ("Ben", "Lisbon has great tiles and trams."),
    ("Ana", "My sister lives in Porto now."),
    ("Ben", "I work as a nurse at the city hospital."),
    ("Ana", "I started running by the river every morning."),
    ("Ben", "I quit the hospital and teach swimming now."),
    ("Ana", "We adopted a cat called Miso."),
    ("Ben", "Miso sleeps on the sofa all day."),
]
QUESTIONS = ["Where does Ana live?", "What does Ben do for work?", "Tell me about the cat Miso"]
NOW = datetime(2024, 7, 1, tzinfo=UTC).timestamp()
TWINS = itertools.count()


def stored(agent: str) -> None:
    day = datetime(2024, 5, 1, tzinfo=UTC)
    turns = [ChatTurn(text=text, at=day + timedelta(days=i), session=f"s{i // 4}", speaker=speaker)
             for i, (speaker, text) in enumerate(SAID)]
    store_turns(turns, agent, ids=[f"m{i}" for i in range(len(SAID))])


def old_read(assembler, question: str, agent: str):
    """The read before: ``as_of="all"`` when no memory of ``agent`` is superseded, else the current read."""
    _, _, superseded = run_search(ChatMemory._meta.client, WindowCounts(agent, strict=False))
    where = {AS_OF: ALL_TIMES} if superseded == 0 else None
    return assembler.assemble(question, where=where, agent_id=agent, now=NOW, emit_trace=True)


def answer(result) -> dict:
    """What a read returns, agent left out: records, scores and signals, text, metadata, superseded hits."""
    return {
        "records": [r.memory_id for r in result.records],
        "hits": [(h.record.memory_id, h.score, sorted(h.signals.items())) for h in result.hits],
        "text": result.formatted,
        "metadata": {k: v for k, v in result.metadata.items() if k not in ("timing_ms", "trace")},
        "trace": [(row["rank"], row["score"], row["source"], sorted(row["signals"].items()))
                  for row in result.metadata["trace"]],
        "superseded": [(h.key.record_id, h.ranks, h.score, h.superseded_by) for h in result.trail.superseded],
    }


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(superseded=st.lists(st.tuples(st.integers(0, len(SAID) - 2), st.integers(1, len(SAID) - 1)),
                           max_size=4, unique_by=lambda pair: pair[0]),
       questions=st.lists(st.sampled_from(QUESTIONS), min_size=2, max_size=4))
def test_a_read_answers_as_the_read_that_asked_again_when_something_was_superseded(db, superseded, questions):
    """``superseded``: (older, how far after it its successor was said) pairs."""
    twin = next(TWINS)
    new_agent, old_agent = f"new-{twin}", f"old-{twin}"
    assembler = memory_assembler(4, 2000)
    with configured_embeddings(HashingEmbeddings(dimensions=64)):
        for agent in (new_agent, old_agent):
            stored(agent)
            for older, later in superseded:
                newer = min(older + later, len(SAID) - 1)
                records = [ChatMemory.query.no_track().get(agent_id=agent, memory_id=f"m{i}") for i in (older, newer)]
                if newer != older and records[0].valid_to is None:
                    supersede(*records)
        for question in questions:
            new = read_memories(assembler, question, new_agent, None, now=NOW, emit_trace=True)
            old = old_read(assembler, question, old_agent)
            assert answer(new) == answer(old)
