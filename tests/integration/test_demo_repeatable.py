"""The demo selects the same records every run: its memory ids do not come from the random generator.

Searches break ties by record id (equal graph weights, equal BM25 scores). With random memory
ids the demo's first turn lost the glucosamine routine from its 8 slots in about one run in 15
(records tied in the graph list outranked it), so the CLI test of the demo failed now and then.
The ids drawn by ``uuid4`` seeded with 17 are one such run.
"""

from __future__ import annotations

import io
import random
import uuid
from argparse import Namespace
from collections.abc import Callable
from datetime import UTC, datetime

import pytest
from rich.console import Console

import redmem
from redmem._demo import DEFAULT_MAX_ITEMS, DEFAULT_MAX_TOKENS, _ingest, sample_conversation
from redmem.cli_commands._ask import assembler_from
from redmem.cli_commands._demo_run import DemoRun
from redmem.cli_commands._memory import choose_embeddings
from redmem.store import settings

#: Random draws under which random memory ids lost the routine from the first turn (17), and one where they did not.
SEEDS = (0, 17)
NOW = datetime(2026, 11, 24, 19, 0, tzinfo=UTC)


def seeded_uuid4(seed: int) -> Callable[[], uuid.UUID]:
    """A ``uuid4`` drawing from a generator seeded with ``seed``."""
    draws = random.Random(seed)
    return lambda: uuid.UUID(int=draws.getrandbits(128), version=4)


@pytest.fixture
def embeddings(db):
    previous = settings().embedding_provider
    redmem.configure(embedding_provider=choose_embeddings("auto")[0])  # the demo's default, as the CLI test runs it
    yield
    redmem.configure(embedding_provider=previous)


def test_the_demo_selects_the_same_records_whatever_the_random_generator_draws(embeddings, monkeypatch):
    conversation = sample_conversation(NOW)
    assembler = assembler_from(Namespace(max_items=DEFAULT_MAX_ITEMS, max_tokens=DEFAULT_MAX_TOKENS, format="structured"))
    selections = []
    for seed in SEEDS:
        monkeypatch.setattr(uuid, "uuid4", seeded_uuid4(seed))
        run = DemoRun("demo")
        run.clear()
        memories = _ingest(Console(file=io.StringIO()), conversation, run)
        assert [m.memory_id for m in memories] == run.memory_ids(len(conversation.turns))
        # the question about Biscuit: its context has the due glucosamine routine (the dinner question's
        # had it too before ChatMemory searched each turn's context, see test_cli's demo test)
        biscuit = assembler.assemble(conversation.questions[-1].text, agent_id="demo", now=NOW.timestamp())
        pushed = {record.memory_id for record in biscuit.proactive}
        selections.append([(record.content, record.memory_id in pushed) for record in biscuit.records])
    assert selections[0] == selections[1]
    assert ("I give Biscuit his glucosamine with dinner every evening, one chewable tablet.", True) in selections[0]


@pytest.mark.parametrize("max_items", [DEFAULT_MAX_ITEMS, 5])
def test_the_demos_direct_answers_lead_graph_neighbours(embeddings, max_items):
    """Turn 4, "What does Biscuit need every day?": a memory that answers it (the daily walk, the
    glucosamine) is in the top two, with five slots too (the two ranked 6th and 7th of 8 behind
    graph-expanded turns such as "Good luck with the talk", and out of a 5-item context)."""
    conversation = sample_conversation(NOW)
    run = DemoRun("demo")
    run.clear()
    _ingest(Console(file=io.StringIO()), conversation, run)
    question = next(q.text for q in conversation.questions if "every day" in q.text)
    assembler = assembler_from(Namespace(max_items=max_items, max_tokens=DEFAULT_MAX_TOKENS, format="structured"))
    top = [record.content for record in assembler.assemble(question, agent_id="demo", now=NOW.timestamp()).records]
    answers = ("I walk Biscuit every morning at 7", "I give Biscuit his glucosamine with dinner every evening")
    assert any(answer in text for text in top[:2] for answer in answers), top
