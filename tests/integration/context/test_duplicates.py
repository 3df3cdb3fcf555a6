"""Duplicate memories collapse at assembly time: the same text after normalisation, or vectors
with cosine >= DUPLICATE_COSINE; the best-ranked copy stays, and no round trip is added."""

from __future__ import annotations

import random
import unicodedata

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import redmem
from redmem import (
    AutoKeyField,
    BM25Field,
    ConfidenceField,
    CyclicDecayField,
    EmbeddingField,
    FloatField,
    KeyField,
    Model,
    StringField,
)
from redmem.context._duplicates import DUPLICATE_COSINE, collapse_duplicates, normalised_text
from redmem.embeddings import HashingEmbeddings, MiniLMEmbeddings
from redmem.recipes.context_assembler import ContextAssembler


class DuplicatesNote(Model):
    """Hybrid (BM25 + vectors from the configured provider) with a push path.

    Local: unlike ``models.DuplicatesNote`` (lexical only) it has vectors, which the near-duplicate tests need.
    """

    note_id = AutoKeyField()
    agent_id = KeyField()
    content = StringField()
    salience = FloatField(default=0.0)
    confidence = ConfidenceField(partition_by="agent_id")
    content_bm25 = BM25Field(source="content", partition_by="agent_id")
    embedding = EmbeddingField(source="content", partition_by="agent_id")
    rhythm = CyclicDecayField(base_score_field="salience", partition_by="agent_id")


@pytest.fixture(scope="module")
def minilm():
    return MiniLMEmbeddings()


@pytest.fixture
def provider(request):
    previous = redmem.store.settings().embedding_provider
    yield lambda chosen: redmem.configure(embedding_provider=chosen)
    redmem.configure(embedding_provider=previous)


def test_normalisation_folds_case_punctuation_and_whitespace():
    assert normalised_text("  I walk Biscuit,\tevery  MORNING!\n") == "i walk biscuit every morning"
    assert normalised_text("Straße — «café»") == normalised_text("STRASSE café")
    assert normalised_text("at 7") != normalised_text("at 8")


def test_the_best_ranked_copy_is_kept():
    texts = ["Deploy on Friday.", "Rollback with helm", "deploy on friday", "DEPLOY  ON FRIDAY!!"]
    kept, collapsed = collapse_duplicates(texts, str)
    assert kept == ["Deploy on Friday.", "Rollback with helm"]
    assert collapsed == ["deploy on friday", "DEPLOY  ON FRIDAY!!"]


def test_near_duplicates_collapse_by_cosine_and_only_with_vectors():
    unit = {name: v / np.linalg.norm(v) for name, v in
            {"a": np.array([1.0, 0.0]), "b": np.array([1.0, 0.1]), "c": np.array([1.0, 0.3])}.items()}
    kept, collapsed = collapse_duplicates(["a", "b", "c"], lambda name: f"text {name}", unit)
    assert float(unit["a"] @ unit["b"]) >= DUPLICATE_COSINE > float(unit["a"] @ unit["c"])
    assert (kept, collapsed) == (["a", "c"], ["b"])
    assert collapse_duplicates(["a", "b", "c"], lambda name: f"text {name}") == (["a", "b", "c"], [])


def test_the_threshold_collapses_rewordings_and_keeps_updated_facts(minilm):
    """The pairs behind DUPLICATE_COSINE, with the MiniLM model."""
    def cosine(a: str, b: str) -> float:
        u, v = minilm.embed([a, b])
        return float(u @ v / np.linalg.norm(u) / np.linalg.norm(v))

    walk = "I walk Biscuit every morning at 7 before work."
    assert cosine(walk, "I walk Biscuit every morning at 7 before my work.") >= DUPLICATE_COSINE
    pill = "I give Biscuit his glucosamine with dinner every evening."
    assert cosine(pill, "I give Biscuit his glucosamine with dinner each evening.") >= DUPLICATE_COSINE
    assert cosine(walk, "I walk Biscuit every morning at 8 before work.") < DUPLICATE_COSINE
    dinner = "My parents are coming for dinner on Saturday."
    assert cosine(dinner, "My parents are coming for dinner on Sunday.") < DUPLICATE_COSINE


def round_trips(sent: list, assembler: ContextAssembler, text: str, agent: str) -> int:
    assembler.assemble(text, agent_id=agent)  # warm
    sent.clear()
    assembler.assemble(text, agent_id=agent)
    return len(sent)


def test_identical_memories_fill_one_slot(db, provider, sent):
    provider(HashingEmbeddings(64))
    first = DuplicatesNote.create(agent_id="a", content="Biscuit eats at seven.")
    DuplicatesNote.create(agent_id="a", content="biscuit eats at seven")
    DuplicatesNote.create(agent_id="a", content="Biscuit EATS at seven!")
    other = DuplicatesNote.create(agent_id="a", content="Biscuit sleeps after his walk at seven.")
    for content in ("Biscuit eats at seven.", "Biscuit sleeps after his walk at seven."):
        DuplicatesNote.create(agent_id="b", content=content)  # the same without the copies
    assembler = ContextAssembler(DuplicatesNote, max_items=5)
    result = assembler.assemble("Biscuit seven", agent_id="a")
    shown = [normalised_text(r.content) for r in result.records]
    assert shown == [normalised_text(first.content), normalised_text(other.content)]
    assert result.records[1] == other
    assert result.metadata["duplicates_collapsed"] == 2 and result.metadata["total_candidates"] == 4
    assert result.metadata["suppressed_count"] == 0  # a collapsed copy did not lose: it is not suppressed
    assert round_trips(sent, assembler, "Biscuit seven", "a") == round_trips(sent, assembler, "Biscuit seven", "b")


def test_the_copy_found_by_both_paths_ranks_first_and_stays(db, provider):
    provider(HashingEmbeddings(64))
    # The two texts tie on BM25, so their ranks follow their ids: the routine's id ranks first.
    DuplicatesNote.create(agent_id="a", note_id="f" * 32, content="Water the plants on Sunday")
    routine = DuplicatesNote.create(agent_id="a", note_id="0" * 32, content="water the plants on sunday.", salience=1.0)
    result = ContextAssembler(DuplicatesNote, max_items=5, retrieval_mode="lexical").assemble("plants", agent_id="a")
    assert result.records == [routine] == result.proactive
    assert result.metadata["duplicates_collapsed"] == 1


def test_near_duplicates_collapse_in_hybrid_mode(db, provider, minilm):
    provider(minilm)
    first = DuplicatesNote.create(agent_id="a", content="I give Biscuit his glucosamine with dinner every evening.")
    second = DuplicatesNote.create(agent_id="a", content="I give Biscuit his glucosamine with dinner each evening.")
    update = DuplicatesNote.create(agent_id="a", content="I give Biscuit his glucosamine with breakfast every morning.")
    result = ContextAssembler(DuplicatesNote, max_items=5).assemble("When does Biscuit get glucosamine?", agent_id="a")
    shown = [r.content for r in result.records]
    assert len(shown) == 2 and update.content in shown and (first.content in shown) != (second.content in shown)
    assert result.metadata["duplicates_collapsed"] == 1


def test_duplicate_cosine_none_keeps_near_duplicates_and_bad_values_are_refused(db, provider, minilm):
    provider(minilm)
    for text in ("I give Biscuit his glucosamine with dinner every evening.",
                 "I give Biscuit his glucosamine with dinner each evening."):
        DuplicatesNote.create(agent_id="a", content=text)
    kept = ContextAssembler(DuplicatesNote, max_items=5, duplicate_cosine=None).assemble("glucosamine", agent_id="a")
    assert len(kept.records) == 2 and kept.metadata["duplicates_collapsed"] == 0
    for bad in (0, 1.5, -0.2, "0.9", True):
        with pytest.raises(ValueError, match="duplicate_cosine"):
            ContextAssembler(DuplicatesNote, duplicate_cosine=bad)


def test_ascii_texts_normalise_as_every_other_text():
    """The ASCII shortcut (lower, a table of punctuation) gives what NFKC, casefold and the
    per-character category test give."""
    def by_category(text: str) -> str:
        folded = unicodedata.normalize("NFKC", text).casefold()
        return " ".join("".join(c for c in folded if not unicodedata.category(c).startswith("P")).split())

    rng = random.Random(4)
    for _ in range(5000):
        text = "".join(chr(rng.randrange(128)) for _ in range(rng.randint(0, 30)))
        assert normalised_text(text) == by_category(text)


@settings(max_examples=80, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), count=st.integers(0, 25), with_vectors=st.floats(0, 1),
       threshold=st.sampled_from([0.5, 0.9, DUPLICATE_COSINE]))
def test_collapse_equals_comparing_each_candidate_with_the_copies_kept_before_it(seed, count, with_vectors, threshold):
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((4, 8))
    texts = [f"text {rng.integers(0, 6)}" for _ in range(count)]
    vectors = {}
    for n in range(count):
        if rng.random() < with_vectors:
            vector = centres[rng.integers(0, 4)] + 0.05 * rng.standard_normal(8)
            vectors[n] = (vector / np.linalg.norm(vector)).astype(np.float32)
    kept_reference: list[int] = []
    for n in range(count):
        near = n in vectors and any(
            m in vectors and float(vectors[m] @ vectors[n]) >= threshold for m in kept_reference)
        if texts[n] not in {texts[m] for m in kept_reference} and not near:
            kept_reference.append(n)
    kept, collapsed = collapse_duplicates(list(range(count)), lambda n: texts[n], vectors, threshold=threshold)
    assert kept == kept_reference
    assert sorted(kept + collapsed) == list(range(count))
