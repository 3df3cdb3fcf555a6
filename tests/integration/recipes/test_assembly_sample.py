"""The assembler on the bundled conversation (``redmem.samples``), as ``redmem demo`` runs it.

The memories are the command line's ``ChatMemory`` (BM25, vectors, graph, a daily routine cycle
on the push path), stored by ``store_turns``; the assembler is the demo's (8 records, 600
tokens). Vectors come from ``HashingEmbeddings`` so the test needs no model files.
"""

from __future__ import annotations

from argparse import Namespace
from datetime import UTC, datetime

import pytest

import redmem
from redmem.cli_commands._ask import assembler_from
from redmem.cli_commands._conversation import parse_conversation
from redmem.cli_commands._ingest import store_turns
from redmem.cli_commands._memory import DIMENSIONS
from redmem.context._rendering import LINE_FORMATS, frame_line
from redmem.context._tokens import exact_counter
from redmem.embeddings import HashingEmbeddings
from redmem.samples import load_sample

FORMATS = ["structured", "xml", "natural", "content"]
#: The demo's clock: the conversation is replayed so that its last session was the day before.
NOW = datetime(2026, 11, 24, 19, 0, tzinfo=UTC)


@pytest.fixture
def sample(db):
    previous = redmem.store.settings().embedding_provider
    redmem.configure(embedding_provider=HashingEmbeddings(DIMENSIONS))
    conversation = parse_conversation(load_sample()).shifted_to(NOW.replace(day=23))
    store_turns(list(conversation.turns), "demo")
    yield conversation
    redmem.configure(embedding_provider=previous)


def demo_assembler(output_format: str = "structured", **options):
    args = Namespace(max_items=8, max_tokens=600, format=output_format)
    assembler = assembler_from(args)
    for name, value in options.items():
        setattr(assembler, name, value)
    return assembler


def counted_pieces(assembler, records) -> list[str]:
    """What the packer counted for each selected record, in order (lines in the line formats)."""
    fmt = assembler.output_format
    slices = [assembler.render(r) for r in records]
    if fmt in LINE_FORMATS:
        return [frame_line(fmt, i, s) + "\n" for i, s in enumerate(slices, 1)]
    return slices


@pytest.mark.parametrize("output_format", FORMATS)
def test_the_default_counter_never_under_counts_an_assembled_context(sample, output_format):
    exact = exact_counter("cl100k_base")
    assembler = demo_assembler(output_format)
    for question in sample.questions:
        result = assembler.assemble(question.text, agent_id="demo", now=NOW.timestamp())
        assert result.records
        pieces = counted_pieces(assembler, result.records)
        assert result.metadata["token_count"] >= sum(map(exact, pieces)), question.text
        if output_format in LINE_FORMATS:  # the framing is inside the lines: the whole text
            assert result.metadata["token_count"] >= exact(result.formatted), question.text


def test_a_routine_never_ranks_above_what_the_question_found(sample):
    """The glucosamine routine is on the push path; it used to rank second for Lisbon and billing,
    and first for dinner (a weak keyword hit lifted by its push term)."""
    assembler = demo_assembler()
    for question in sample.questions:
        result = assembler.assemble(question.text, agent_id="demo", now=NOW.timestamp(), emit_trace=True)
        sources = [entry["source"] for entry in result.metadata["trace"]]
        found = [i for i, source in enumerate(sources) if source != "push"]
        assert found == list(range(len(found))), (question.text, sources)  # push-only records come last
        fused = [entry["signals"][assembler.fusion] for entry in result.metadata["trace"] if entry["source"] != "push"]
        assert fused == sorted(fused, reverse=True), question.text  # a routine's push term adds no rank
        assert sources.count("push") <= assembler.max_proactive
    lisbon = next(q for q in sample.questions if "Lisbon" in q.text)
    result = assembler.assemble(lisbon.text, agent_id="demo", now=NOW.timestamp())
    assert "glucosamine" not in " ".join(r.content for r in result.records[:2])
