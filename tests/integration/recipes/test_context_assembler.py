"""ContextAssembler against its seed: modes and errors, the ExistenceFilter pre-check, graph
expansion, RRF fusion (k, candidate limits, query-adaptive weights), convex score fusion and
fixed fusion weights, the merge of both paths
(``max_proactive``), the metadata and the quality assessment. Budgets, formats and shown
fields: test_assembler_budget.py; post-effects, push path and tenant isolation:
test_assembler_effects.py; round trips: test_assembler_round_trips.py.

The composite ranking comes from the selection of ``Query.composite_score`` (``composite_search``
in src/redmem/fields/_composite.py), sent in the assembler's first round trip.
"""

from __future__ import annotations

import math
import time
import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import redmem
from conftest import configured_embeddings
from models import SeedMemory as Memory
from models import SeedNote as Note
from redmem import (
    AccessTrackerMixin,
    AutoKeyField,
    BM25Field,
    ConfidenceField,
    CoOccurrenceField,
    CyclicDecayField,
    DecayingSortedField,
    EmbeddingField,
    ExistenceFilter,
    FloatField,
    KeyField,
    Model,
    QueryException,
    StringField,
    ValidationError,
)
from redmem.context._candidates import Candidate, merge_paths
from redmem.context._fusion import RRF_K
from redmem.context._query_weights import query_adaptive_weights
from redmem.embeddings import HashingEmbeddings
from redmem.model._dbkey import DbKey
from redmem.recipes.context_assembler import AssemblyResult, ContextAssembler


class ContextAssemblerFact(Model):
    """Neither BM25Field nor EmbeddingField: auto -> composite."""

    fact_id = AutoKeyField()
    agent_id = KeyField()
    content = StringField()
    importance = FloatField(default=1.0)
    relevance = DecayingSortedField(base_score_field="importance", partition_by="agent_id")
    confidence = ConfidenceField()


class ContextAssemblerPlain(Model):
    """Hybrid-capable, with no ExistenceFilter (so no pre-check short-circuits a query)."""

    plain_id = AutoKeyField()
    agent_id = KeyField()
    content = StringField()
    importance = FloatField(default=1.0)
    relevance = DecayingSortedField(base_score_field="importance", partition_by="agent_id")
    content_bm25 = BM25Field(source="content")
    embedding = EmbeddingField(source="content")


class TableEmbeddings:
    """ContextAssemblerVectors by lookup: texts in ``near`` get e0, every other text e1 (cosine 0 with e0).

    Lets a test decide exactly which records the vector arm finds for a query in ``near``.
    """

    dimensions = 2
    max_batch_size = 64

    def __init__(self, near: set[str]) -> None:
        self.near = near

    def embed(self, texts, input_type="document"):
        return np.array([[1.0, 0.0] if t in self.near else [0.0, 1.0] for t in texts], dtype=np.float32)


NEAR: set[str] = set()


class Ranked(Model):
    """Hybrid, with vectors chosen by the test through TableEmbeddings(NEAR)."""

    ranked_id = AutoKeyField()
    agent_id = KeyField()
    content = StringField()
    content_bm25 = BM25Field(source="content", partition_by="agent_id")
    embedding = EmbeddingField(source="content", provider=TableEmbeddings(NEAR))


COSINES: dict[str, float] = {}


class AngleEmbeddings:
    """ContextAssemblerVectors by lookup: a text in COSINES gets the unit vector at that cosine to e0 (so a query
    listed at 1.0 is e0), every other text e1. Lets a test set each record's cosine."""

    dimensions = 2
    max_batch_size = 64

    def embed(self, texts, input_type="document"):
        cosines = [COSINES.get(t) for t in texts]
        return np.array([[0.0, 1.0] if c is None else [c, math.sqrt(1 - c * c)] for c in cosines], dtype=np.float32)


class Scored(Model):
    """Hybrid, with the cosines chosen by the test through AngleEmbeddings (stored as float32)."""

    scored_id = AutoKeyField()
    agent_id = KeyField()
    content = StringField()
    content_bm25 = BM25Field(source="content", partition_by="agent_id")
    embedding = EmbeddingField(source="content", provider=AngleEmbeddings(), dtype="float32", partition_by="agent_id")


class ContextAssemblerVectors(Model):
    """EmbeddingField without a BM25Field: auto -> semantic. ContextAssemblerVectors from TableEmbeddings(NEAR)."""

    vector_id = AutoKeyField()
    agent_id = KeyField()
    content = StringField()
    links = CoOccurrenceField()
    embedding = EmbeddingField(source="content", provider=TableEmbeddings(NEAR), partition_by="agent_id")


class Diary(Model):
    """Keyword hits with a confidence and an exponential decay of half-life one hour (quality)."""

    entry_id = AutoKeyField()
    agent_id = KeyField()
    content = StringField()
    importance = FloatField(default=1.0)
    relevance = DecayingSortedField(base_score_field="importance", half_life=3600.0, partition_by="agent_id")
    confidence = ConfidenceField()
    content_bm25 = BM25Field(source="content")






@pytest.fixture(autouse=True)
def hashing_embeddings():
    """HashingEmbeddings as the configured provider for the test, then the previous one again."""
    with configured_embeddings(HashingEmbeddings(64)):
        yield


@pytest.fixture(autouse=True)
def no_near_texts():
    """Each test chooses its own NEAR texts and COSINES, before it saves the records they concern."""
    NEAR.clear()
    COSINES.clear()
    yield
    NEAR.clear()
    COSINES.clear()


#: The seed's ranking (RRF, no relevance floor, no newer-first move): the tests of its mechanics pin it.
SEED = {"fusion": "rrf", "fusion_weights": {"graph": 1.0}, "min_relevance": None, "newer_first": False}


def ids(records) -> list[str]:
    return [r.content for r in records]


def trace_of(result: AssemblyResult) -> list[dict]:
    return result.metadata["trace"]


# -- modes ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(("model", "mode"), [(Memory, "hybrid"), (ContextAssemblerPlain, "hybrid"), (Note, "lexical"),
                                             (ContextAssemblerVectors, "semantic"), (ContextAssemblerFact, "composite")])
def test_auto_mode_follows_the_fields_of_the_model(model, mode):
    assembler = ContextAssembler(model, score_weights={"relevance": 1.0} if model is ContextAssemblerFact else None)
    assert (assembler.retrieval_mode, assembler.mode) == ("auto", mode)


def test_auto_composite_needs_no_score_weights():
    assert ContextAssembler(ContextAssemblerFact).mode == "composite"  # the push path alone, until weights are given


@pytest.mark.parametrize(("model", "mode", "needs"), [
    (Note, "hybrid", "EmbeddingField"), (ContextAssemblerFact, "hybrid", "BM25Field"), (ContextAssemblerFact, "lexical", "BM25Field"),
    (Note, "semantic", "EmbeddingField"), (ContextAssemblerFact, "semantic", "EmbeddingField"),
])
def test_forced_modes_need_their_fields_at_init(model, mode, needs):
    with pytest.raises(QueryException, match=f"'{mode}' needs .*{needs}"):
        ContextAssembler(model, score_weights={"relevance": 1.0}, retrieval_mode=mode)


@pytest.mark.parametrize(("model", "mode"), [(Memory, "hybrid"), (Memory, "lexical"), (Memory, "semantic"),
                                             (Ranked, "semantic"), (ContextAssemblerVectors, "semantic")])
def test_a_forced_mode_is_kept_when_its_fields_exist(model, mode):
    assert ContextAssembler(model, retrieval_mode=mode).mode == mode


@pytest.mark.parametrize("weights", [None, {}])
def test_composite_needs_score_weights_at_init(weights):
    with pytest.raises(QueryException, match="score_weights"):
        ContextAssembler(Memory, score_weights=weights, retrieval_mode="composite")


def test_unknown_options_are_rejected_at_init():
    with pytest.raises(QueryException, match=r"unknown retrieval_mode 'vector'.*'semantic'"):
        ContextAssembler(Memory, retrieval_mode="vector")
    with pytest.raises(ValueError, match="output_format"):
        ContextAssembler(Memory, output_format="yaml")
    with pytest.raises(ValueError, match="max_items"):
        ContextAssembler(Memory, max_items=-1)
    with pytest.raises(ValueError, match="max_tokens"):
        ContextAssembler(Memory, max_tokens=-5)
    with pytest.raises(QueryException, match=r"render_fields names field\(s\) \['summary'\]"):
        ContextAssembler(Memory, render_fields=["content", "summary"])
    with pytest.raises(QueryException, match=r"unknown fusion 'borda'.*'convex'"):
        ContextAssembler(Memory, fusion="borda")
    with pytest.raises(QueryException, match=r"fusion_weights names unknown list\(s\) \['semantic'\]"):
        ContextAssembler(Memory, fusion_weights={"vector": 1.0, "semantic": 1.0})
    with pytest.raises(ValidationError, match="weight of list 'vector'"):
        ContextAssembler(Memory, fusion_weights={"vector": -1.0})


@pytest.mark.parametrize("bad", [-1, 1.5, "2", True], ids=repr)
def test_a_bad_max_proactive_is_rejected_at_init(bad):
    with pytest.raises(ValueError, match="max_proactive"):
        ContextAssembler(Note, max_proactive=bad)


def test_constructor_defaults_and_constants():
    assembler = ContextAssembler(Memory)
    assert (assembler.max_items, assembler.max_tokens, assembler.surfacing_threshold) == (10, None, 0.5)
    assert (assembler.propagation_depth, assembler.output_format, assembler.retrieval_mode) == (2, "structured", "auto")
    assert (assembler.render_fields, assembler.max_proactive) == (None, 2)
    assert (assembler.fusion, assembler.fusion_weights) == ("convex", None)
    assert ContextAssembler.COMPETITIVE_SUPPRESSION_SIGNAL == 0.3
    assert ContextAssembler.DEFAULT_SURFACING_THRESHOLD == 0.5
    assert ContextAssembler.DEFAULT_MAX_ITEMS == 10
    assert ContextAssembler.DEFAULT_PROPAGATION_DEPTH == 2
    assert (RRF_K, ContextAssembler.CANDIDATE_MULTIPLIER, ContextAssembler.GRAPH_SEEDS) == (60, 5, 5)


@pytest.mark.parametrize(("max_items", "expected"), [(1, 1), (5, 1), (9, 1), (10, 2), (14, 2), (25, 5)])
def test_max_proactive_defaults_to_a_fifth_of_max_items_and_at_least_one(max_items, expected):
    assert ContextAssembler(Note, max_items=max_items).max_proactive == expected
    assert ContextAssembler(Note, max_items=max_items, max_proactive=0).max_proactive == 0
    assert ContextAssembler(Note, max_items=max_items, max_proactive=7).max_proactive == 7


def test_assemble_needs_exactly_the_partition(any_db):
    assembler = ContextAssembler(Memory)
    with pytest.raises(QueryException, match="agent_id"):
        assembler.assemble({"topic": "deployment"})
    with pytest.raises(QueryException, match="agent_id"):
        assembler.assemble({"topic": "deployment"}, agent="agent-1")
    with pytest.raises(QueryException, match="query_cues"):
        assembler.assemble(["deployment"], agent_id="agent-1")


def test_hybrid_mode_fuses_keyword_and_vector(any_db):
    Memory.create(agent_id="a", topic="deployment", content="deploy with blue green switches")
    Memory.create(agent_id="a", topic="deployment", content="rollbacks use helm history")
    result = ContextAssembler(Memory, max_items=5, **SEED).assemble({"topic": "deploy"}, agent_id="a", emit_trace=True)
    assert result.metadata["retrieval_mode"] == "hybrid"
    top = trace_of(result)[0]
    assert result.records[0].content == "deploy with blue green switches"
    assert {"bm25", "vector", "rrf"} <= set(top["signals"])
    assert top["signals"]["rrf"] == pytest.approx(2 / 61)  # first in both lists, k = 60


def test_lexical_mode_uses_bm25_only(any_db):
    for text in ["alpha beta", "alpha alpha alpha", "gamma delta"]:
        Note.create(agent_id="a", content=text)
    result = ContextAssembler(Note, **SEED).assemble("alpha", agent_id="a", emit_trace=True)
    assert result.metadata["retrieval_mode"] == "lexical"
    assert ids(result.records) == ["alpha alpha alpha", "alpha beta"]
    assert [t["signals"]["rrf"] for t in trace_of(result)] == [1 / 61, 1 / 62]
    assert all("vector" not in t["signals"] for t in trace_of(result))


def test_lexical_can_be_forced_on_a_hybrid_model(any_db):
    NEAR.update({"alpha", "only by vector"})
    Ranked.create(agent_id="a", content="alpha words")
    Ranked.create(agent_id="a", content="only by vector")
    hybrid = ContextAssembler(Ranked).assemble("alpha", agent_id="a")
    lexical = ContextAssembler(Ranked, retrieval_mode="lexical").assemble("alpha", agent_id="a")
    assert ids(hybrid.records) == ["alpha words", "only by vector"]
    assert ids(lexical.records) == ["alpha words"] and lexical.metadata["retrieval_mode"] == "lexical"


def test_semantic_mode_uses_the_vector_arm_only(any_db):
    NEAR.update({"alpha", "close in meaning"})
    ContextAssemblerVectors.create(agent_id="a", content="alpha words")  # the query's word, not its meaning
    close = ContextAssemblerVectors.create(agent_id="a", content="close in meaning")
    result = ContextAssembler(ContextAssemblerVectors, **SEED).assemble("alpha", agent_id="a", emit_trace=True)
    assert result.metadata["retrieval_mode"] == "semantic"
    assert result.records == [close]
    (entry,) = trace_of(result)
    assert set(entry["signals"]) == {"vector", "rrf", "match"}
    assert entry["signals"]["vector"] == pytest.approx(1.0) and entry["signals"]["rrf"] == pytest.approx(1 / 61)


def test_semantic_can_be_forced_on_a_hybrid_model(any_db):
    NEAR.update({"alpha", "only by vector"})
    Ranked.create(agent_id="a", content="alpha words")
    Ranked.create(agent_id="a", content="only by vector")
    result = ContextAssembler(Ranked, retrieval_mode="semantic").assemble("alpha", agent_id="a", emit_trace=True)
    assert ids(result.records) == ["only by vector"] and result.metadata["retrieval_mode"] == "semantic"
    assert all("bm25" not in t["signals"] for t in trace_of(result))


def test_semantic_graph_expansion_starts_from_the_vector_hits(any_db):
    NEAR.update({"alpha", "close in meaning"})
    close = ContextAssemblerVectors.create(agent_id="a", content="close in meaning")
    friend = ContextAssemblerVectors.create(agent_id="a", content="linked friend")  # cosine 0: not a vector hit
    ContextAssemblerVectors.links.link(close, friend, initial_weight=0.5)
    result = ContextAssembler(ContextAssemblerVectors, **SEED).assemble("alpha", agent_id="a", emit_trace=True)
    assert result.records == [close, friend]
    assert trace_of(result)[1]["signals"] == {"graph": 0.25, "rrf": pytest.approx(1 / 61), "match": 0.0}  # first of the graph list


@pytest.mark.parametrize("query", ["alpha 42", '"alpha phrase"', "ask Maria about alpha"])
def test_semantic_mode_pulls_for_specific_queries_too(any_db, query):
    NEAR.update({query, "close in meaning"})
    close = ContextAssemblerVectors.create(agent_id="a", content="close in meaning")
    assert ContextAssembler(ContextAssemblerVectors).assemble(query, agent_id="a").records == [close]


@pytest.mark.parametrize(("model", "mode"), [(Ranked, "auto"), (Ranked, "hybrid"), (Ranked, "lexical"),
                                             (Ranked, "semantic"), (ContextAssemblerVectors, "auto"), (Note, "auto")])
@pytest.mark.parametrize("cues", [None, {"topic": "  ", "detail": None}], ids=["none", "blank"])
def test_without_query_text_every_mode_runs_composite_silently(any_db, model, mode, cues):
    NEAR.add("alpha")
    model.create(agent_id="a", content="alpha")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = ContextAssembler(model, retrieval_mode=mode).assemble(cues, agent_id="a")
    assert result.metadata["retrieval_mode"] == "composite"
    assert result.records == [] and result.metadata["total_candidates"] == 0  # no score_weights to rank by


def query_fallback_setup() -> ContextAssembler:
    for importance, text in [(0.2, "low"), (0.9, "high"), (0.5, "middle")]:
        ContextAssemblerPlain.create(agent_id="a", content=f"{text} importance memo", importance=importance)
    return ContextAssembler(ContextAssemblerPlain, score_weights={"relevance": 1.0}, max_items=5)


def test_hybrid_falls_back_to_composite_with_a_warning_when_both_arms_are_empty(any_db):
    assembler = query_fallback_setup()
    with pytest.warns(RuntimeWarning, match="falling back to composite") as caught:
        result = assembler.assemble("???", agent_id="a")  # no terms: BM25 and vector both empty
    assert caught[0].filename == __file__  # the warning points at the caller's assemble()
    assert result.metadata["retrieval_mode"] == "composite"
    assert ids(result.records) == ["high importance memo", "middle importance memo", "low importance memo"]


def test_lexical_falls_back_to_composite_when_bm25_finds_nothing(any_db):
    query_fallback_setup()
    assembler = ContextAssembler(ContextAssemblerPlain, score_weights={"relevance": 1.0}, max_items=5, retrieval_mode="lexical")
    with pytest.warns(RuntimeWarning, match="lexical retrieval found nothing"):
        result = assembler.assemble("zebra", agent_id="a")  # a term no record holds: no graph seeds
    assert result.metadata["retrieval_mode"] == "composite"
    assert ids(result.records) == ["high importance memo", "middle importance memo", "low importance memo"]


def test_composite_ranks_at_the_assemblers_clock(any_db):
    """``now`` fixes the clock of the composite too: fresh beats important early, not 100 days on."""
    t0, day = 1_750_000_000.0, 86400.0
    fresh = ContextAssemblerFact.create(agent_id="a", content="fresh", importance=1.0)
    important = ContextAssemblerFact.create(agent_id="a", content="important", importance=1.2)
    ContextAssemblerFact.relevance.touch(fresh, now=t0)
    ContextAssemblerFact.relevance.touch(important, now=t0 - 5 * day)
    assembler = ContextAssembler(ContextAssemblerFact, score_weights={"relevance": 1.0})
    # at t0: 0.01 ** -0.1 = 1.58 against 1.2 * 5 ** -0.1 = 1.02; 100 days on: 0.63 against 0.75
    assert ids(assembler.assemble(agent_id="a", now=t0).records) == ["fresh", "important"]
    assert ids(assembler.assemble(agent_id="a", now=t0 + 100 * day).records) == ["important", "fresh"]


def test_fallback_without_score_weights_returns_no_pull_candidates(any_db):
    query_fallback_setup()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing to fall back on: nothing to warn about
        result = ContextAssembler(ContextAssemblerPlain).assemble("???", agent_id="a")
    assert result.records == [] and result.metadata["pull_count"] == 0
    assert result.metadata["retrieval_mode"] == "composite"


def test_composite_ranks_by_the_weighted_scores(any_db):
    for importance, text in [(0.2, "low"), (0.9, "high"), (0.5, "middle")]:
        ContextAssemblerFact.create(agent_id="a", content=text, importance=importance)
    result = ContextAssembler(ContextAssemblerFact, score_weights={"relevance": 1.0}).assemble(agent_id="a", emit_trace=True)
    assert result.metadata["retrieval_mode"] == "composite"
    assert ids(result.records) == ["high", "middle", "low"]
    assert all("composite" in t["signals"] for t in trace_of(result))


def test_composite_mode_still_uses_the_query_text_through_bm25(any_db):
    for i in range(12):
        ContextAssemblerPlain.create(agent_id="a", content=f"weekly report number {i}", importance=0.9)
    ContextAssemblerPlain.create(agent_id="a", content="kubernetes cluster upgrade", importance=0.01)
    assembler = ContextAssembler(ContextAssemblerPlain, score_weights={"relevance": 1.0}, max_items=3, retrieval_mode="composite")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the model has a BM25Field: the cues are not ignored
        result = assembler.assemble("kubernetes", agent_id="a")
    assert "kubernetes cluster upgrade" in ids(result.records)  # last by relevance, first by text


def test_no_query_text_on_a_hybrid_model_ranks_by_score_weights(any_db):
    assembler = query_fallback_setup()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = assembler.assemble(agent_id="a")
    assert result.metadata["retrieval_mode"] == "composite"
    assert ids(result.records) == ["high importance memo", "middle importance memo", "low importance memo"]


def test_composite_without_bm25_warns_that_the_query_cues_are_ignored(any_db):
    ContextAssemblerFact.create(agent_id="a", content="anything", importance=0.5)
    assembler = ContextAssembler(ContextAssemblerFact)  # auto -> composite, no score_weights: the push path alone
    with pytest.warns(RuntimeWarning, match="ignores the query cues") as caught:
        result = assembler.assemble({"topic": "deployment"}, agent_id="a")
    assert len(caught) == 1 and caught[0].filename == __file__
    assert result.metadata["retrieval_mode"] == "composite" and result.records == []
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no query text: nothing is ignored, nothing to warn about
        assert assembler.assemble(agent_id="a").metadata["retrieval_mode"] == "composite"


def test_composite_with_score_weights_and_no_bm25_ranks_by_the_weights_alone(any_db):
    for importance, text in [(0.2, "deployment"), (0.9, "lunch")]:
        ContextAssemblerFact.create(agent_id="a", content=text, importance=importance)
    assembler = ContextAssembler(ContextAssemblerFact, score_weights={"relevance": 1.0})
    with pytest.warns(RuntimeWarning, match="ignores the query cues") as caught:
        result = assembler.assemble({"topic": "deployment"}, agent_id="a")
    assert caught[0].filename == __file__
    assert ids(result.records) == ["lunch", "deployment"]  # the cue moved nothing


# -- ExistenceFilter pre-check --------------------------------------------------------------------
def test_a_definitely_missing_query_yields_no_keyword_candidates(any_db):
    record = Memory.create(agent_id="a", topic="deployment", content="kubernetes rollout with helm charts")
    assembler = ContextAssembler(Memory, retrieval_mode="lexical")
    missing = assembler.assemble({"topic": "kubernetes"}, agent_id="a")  # never a topic: filter says no
    assert missing.records == []
    assert missing.metadata["total_candidates"] == 0 and missing.metadata["pull_count"] == 0
    assert Memory.topics_seen.definitely_missing("kubernetes", agent_id="a")
    # the same words reach the record as soon as one cue term may exist
    found = assembler.assemble({"topic": "deployment", "detail": "kubernetes"}, agent_id="a")
    assert found.records == [record]
    assert ConfidenceField.get_confidence_data(record, "confidence")["evidence_count"] == 0


class Allergy(Model):
    """Hybrid with an ExistenceFilter over the memory text: the pre-check speaks for the keyword arm only."""

    allergy_id = AutoKeyField()
    agent_id = KeyField()
    content = StringField()
    seen = ExistenceFilter(fingerprint_fn=lambda m: m.content, partition_by="agent_id")
    content_bm25 = BM25Field(source="content", partition_by="agent_id")
    embedding = EmbeddingField(source="content", provider=TableEmbeddings(NEAR), partition_by="agent_id")


def test_the_pre_check_never_hides_what_the_vector_arm_finds(any_db):
    """A paraphrase shares no word with its memory: the ExistenceFilter says no term occurs, and the
    vector arm still finds it (it used to skip every arm)."""
    NEAR.update({"seafood allergy", "Ana is allergic to shellfish"})
    record = Allergy.create(agent_id="a", content="Ana is allergic to shellfish")
    Allergy.create(agent_id="a", content="Gus grows tomatoes")
    assert Allergy.seen.definitely_missing("seafood allergy", agent_id="a")
    hybrid = ContextAssembler(Allergy).assemble("seafood allergy", agent_id="a")
    assert hybrid.records == [record] and hybrid.metadata["retrieval_mode"] == "hybrid"
    assert ContextAssembler(Allergy, retrieval_mode="lexical").assemble("seafood allergy", agent_id="a").records == []


# -- graph expansion ----------------------------------------------------------------------------
def graph_setup() -> dict[str, Note]:
    notes = {name: Note.create(agent_id="a", content=text) for name, text in [
        ("seed", "alpha seed memo"), ("hop1", "unrelated gamma"), ("hop2", "unrelated delta"),
        ("loner", "unrelated epsilon")]}
    Note.links.link(notes["seed"], notes["hop1"], initial_weight=0.5)
    Note.links.link(notes["hop1"], notes["hop2"], initial_weight=0.5)
    return notes


@pytest.mark.parametrize(("depth", "expected"), [(0, []), (1, ["unrelated gamma"]),
                                                 (2, ["unrelated gamma", "unrelated delta"])])
def test_graph_expansion_brings_in_linked_records(any_db, depth, expected):
    graph_setup()
    result = ContextAssembler(Note, propagation_depth=depth, **SEED).assemble("alpha", agent_id="a", emit_trace=True)
    assert ids(result.records) == ["alpha seed memo", *expected]
    weights = [t["signals"].get("graph") for t in trace_of(result)[1:]]
    assert weights == [0.25, 0.0625][: len(expected)]  # 1.0 * 0.5 (hop) * 0.5 (edge), then again


def test_graph_seeds_are_the_top_five_keyword_hits(any_db):
    # six keyword hits with strictly falling BM25 (same length, fewer "alpha")
    hits = [Note.create(agent_id="a", content=text) for text in ladder(6)]
    fifth_friend = Note.create(agent_id="a", content="friend of the fifth")
    sixth_friend = Note.create(agent_id="a", content="friend of the sixth")
    Note.links.link(hits[4], fifth_friend, initial_weight=0.9)
    Note.links.link(hits[5], sixth_friend, initial_weight=0.9)
    result = ContextAssembler(Note, max_items=10, **SEED).assemble("alpha", agent_id="a")
    assert {h.content for h in hits} <= set(ids(result.records))
    assert "friend of the fifth" in ids(result.records)
    assert "friend of the sixth" not in ids(result.records)


# -- fusion: k, candidate limits, adaptive weights ---------------------------------------------
def ladder(count: int) -> list[str]:
    """``count`` texts matching "alpha" with strictly falling BM25 (same length, fewer "alpha")."""
    return [" ".join(["alpha"] * (count + 1 - i) + ["pad"] * (i - 1)) for i in range(1, count + 1)]


@pytest.mark.parametrize(("keyword_rank", "keyword_counted"), [(10, True), (11, False)])
def test_each_arm_returns_five_times_max_items(any_db, keyword_rank, keyword_counted):
    texts = ladder(11)
    NEAR.update({"alpha", texts[keyword_rank - 1]})  # the vector arm finds only the target
    hits = [Ranked.create(agent_id="a", content=text) for text in texts]
    target = hits[keyword_rank - 1]
    result = ContextAssembler(Ranked, max_items=2, **SEED).assemble("alpha", agent_id="a", emit_trace=True)
    signals = {t["key"]: t["signals"] for t in trace_of(result)}
    found = signals[target.db_key.redis_key]
    assert ("bm25" in found) is keyword_counted  # arm limit 2 x 5 = 10: rank 10 in, rank 11 out
    expected = 1 / 61 + (1 / (60 + keyword_rank) if keyword_counted else 0.0)
    assert found["rrf"] == pytest.approx(expected)
    assert result.records[0 if keyword_counted else 1] == target


def test_fused_list_keeps_twice_max_items(any_db):
    for text in ladder(30):
        Ranked.create(agent_id="a", content=text)
    for max_items in (1, 3, 4):
        # every text outside NEAR has the same vector: keep these near duplicates
        result = ContextAssembler(Ranked, max_items=max_items, duplicate_cosine=None).assemble("alpha", agent_id="a")
        assert result.metadata["total_candidates"] == 2 * max_items
        assert len(result.records) == max_items


QUERIES = [
    ("alpha", True),                # plain: keyword 1, vector 1
    ("alpha 42", False),            # a number: exact terms, vector 0
    ("alpha for Bob", False),       # a capitalised word inside the sentence
    ('the "alpha" plan', False),    # a quoted span
    ("my alpha 42", True),          # first person wins over the number
]


@pytest.mark.parametrize("query", [query for query, _ in QUERIES])
def test_by_default_the_vector_list_counts_for_every_query(any_db, query):
    """Hybrid means hybrid: a memory only the vector arm finds is in the context whatever the
    query names (the query-adaptive rule gave the vector list weight 0 for names, numbers and
    quotes: hybrid then ranked as lexical for most questions)."""
    NEAR.update({query, "omega only by meaning"})
    Ranked.create(agent_id="a", content="alpha keyword memo")
    Ranked.create(agent_id="a", content="omega only by meaning")
    result = ContextAssembler(Ranked).assemble(query, agent_id="a")
    assert set(ids(result.records)) == {"alpha keyword memo", "omega only by meaning"}


@pytest.mark.parametrize(("query", "vector_counts"), QUERIES)
def test_query_adaptive_weights_as_fusion_weights_switch_the_vector_arm(any_db, query, vector_counts):
    NEAR.update({query, "omega only by meaning"})
    Ranked.create(agent_id="a", content="alpha keyword memo")
    Ranked.create(agent_id="a", content="omega only by meaning")
    assembler = ContextAssembler(Ranked, **{**SEED, "fusion_weights": query_adaptive_weights(query)})
    result = assembler.assemble(query, agent_id="a")
    assert ("omega only by meaning" in ids(result.records)) is vector_counts
    assert ids(result.records)[0] == "alpha keyword memo"


@pytest.mark.parametrize(("query", "weights", "vector_counts"), [
    ("alpha for Bob", {"keyword": 1.0, "vector": 1.0}, True),  # adaptive would weigh the vector list 0
    ("alpha", {"vector": 0.0}, False),                          # adaptive would weigh it 1
    ("alpha", {"keyword": 1.0}, True),                          # a list not named weighs 1
])
def test_fusion_weights_replace_the_query_adaptive_weights(any_db, query, weights, vector_counts):
    NEAR.update({query, "omega only by meaning"})
    Ranked.create(agent_id="a", content="alpha keyword memo")
    Ranked.create(agent_id="a", content="omega only by meaning")
    result = ContextAssembler(Ranked, fusion_weights=weights).assemble(query, agent_id="a")
    assert ("omega only by meaning" in ids(result.records)) is vector_counts
    assert ids(result.records)[0] == "alpha keyword memo"


def convex_setup() -> None:
    """A keyword hit far ahead on BM25 that five records outrank by a little on cosine, and the
    vector list's best, which BM25 ranks second far behind. (Two-dimensional vectors this close
    are near duplicates: the assemblers here keep them, with ``duplicate_cosine=None``.)"""
    COSINES.update({"alpha": 1.0, "alpha alpha alpha alpha": 0.9, "alpha pad pad pad pad pad pad pad": 1.0,
                    "near apple": 0.99, "near pear": 0.98, "near plum": 0.97})
    for text in COSINES:
        if text != "alpha":
            Scored.create(agent_id="a", content=text)


def test_convex_fusion_keeps_a_keyword_lead_that_rrf_gives_away(any_db):
    convex_setup()
    rrf = ContextAssembler(Scored, duplicate_cosine=None, max_items=3, **SEED).assemble("alpha", agent_id="a")
    assert ids(rrf.records)[0] == "alpha pad pad pad pad pad pad pad"  # 1/62 + 1/61 > 1/61 + 1/65
    convex = ContextAssembler(Scored, duplicate_cosine=None, max_items=3, fusion="convex").assemble(
        "alpha", agent_id="a", emit_trace=True)
    assert ids(convex.records) == ["alpha alpha alpha alpha", "alpha pad pad pad pad pad pad pad", "near apple"]
    trace = trace_of(convex)
    top_bm25 = max(t["signals"].get("bm25", 0.0) for t in trace)
    top_vector = max(t["signals"].get("vector", 0.0) for t in trace)
    for entry in trace:  # both lists ended before their limit (50): a missing score is 0
        signals = entry["signals"]
        expected = (signals.get("bm25", 0.0) / top_bm25 + signals.get("vector", 0.0) / top_vector) / 2
        assert signals["convex"] == pytest.approx(expected) and "rrf" not in signals
    assert trace[0]["signals"]["convex"] == pytest.approx((1 + 0.9) / 2, abs=1e-6)


def test_convex_fusion_with_fixed_weights_weighs_the_vector_list_for_specific_queries(any_db):
    convex_setup()
    COSINES["alpha for Bob"] = 1.0
    lexical_only = ContextAssembler(Scored, duplicate_cosine=None, max_items=3, fusion="convex",
                                    fusion_weights=query_adaptive_weights("alpha for Bob")).assemble(
        "alpha for Bob", agent_id="a")
    assert ids(lexical_only.records) == ["alpha alpha alpha alpha", "alpha pad pad pad pad pad pad pad"]
    both = ContextAssembler(Scored, duplicate_cosine=None, max_items=3)  # the default: convex, every list 1
    assert ids(both.assemble("alpha for Bob", agent_id="a").records) == [
        "alpha alpha alpha alpha", "alpha pad pad pad pad pad pad pad", "near apple"]


# -- merge ----------------------------------------------------------------------------------
def merge_setup() -> dict[str, Note]:
    return {
        "pull_first": Note.create(agent_id="a", content="alpha alpha alpha", salience=0.0),
        "both": Note.create(agent_id="a", content="alpha beta gamma", salience=0.5),
        "push_only": Note.create(agent_id="a", content="omega", salience=1.0),
    }


def test_a_record_found_by_both_paths_is_kept_once_and_ranks_by_what_the_query_found(any_db):
    notes = merge_setup()
    result = ContextAssembler(Note, **SEED).assemble("alpha", agent_id="a", emit_trace=True)
    assert result.records == [notes["pull_first"], notes["both"], notes["push_only"]]
    assert [t["source"] for t in trace_of(result)] == ["pull", "both", "push"]
    assert result.proactive == [notes["both"], notes["push_only"]]
    assert (result.metadata["pull_count"], result.metadata["push_count"]) == (2, 2)
    assert result.metadata["total_candidates"] == 3


def test_for_a_question_the_score_is_each_paths_normalised_score(any_db):
    merge_setup()
    trace = trace_of(ContextAssembler(Note, **SEED).assemble("alpha", agent_id="a", emit_trace=True))
    top_pull = max(t["signals"].get("rrf", 0.0) for t in trace)
    top_push = max(t["signals"].get("cyclic", 0.0) for t in trace)
    for entry in trace:
        signals = entry["signals"]
        expected = signals["rrf"] / top_pull if "rrf" in signals else signals["cyclic"] / top_push
        assert entry["score"] == pytest.approx(expected)
    assert [t["score"] for t in trace] == pytest.approx([1.0, 61 / 62, 1.0])  # the push record comes last


def test_the_push_term_breaks_ties_between_pull_hits():
    pulled = pull_list(0.05, 0.05, 0.04)
    merged = merge_paths(pulled, push_list(("p2", 1.0), ("q1", 2.0)), 1, asked=True)
    assert [c.key.record_id for c in merged] == ["p2", "p1", "p3", "q1"]
    assert [c.combined for c in merged] == pytest.approx([1.0, 1.0, 0.8, 1.0])


SPACE = Note._meta.keyspace(("a",))


def pull_list(*scores: float) -> list[Candidate]:
    return [Candidate(DbKey(SPACE, f"p{i}"), pull=score) for i, score in enumerate(scores, 1)]


def push_list(*pairs: tuple[str, float]) -> list[Candidate]:
    return [Candidate(DbKey(SPACE, name), push=score) for name, score in pairs]


def merged_names(max_proactive, both: bool = False, asked: bool = False) -> list[str]:
    """Pull p1..p3 (0.05, 0.04, 0.03 -> 1.0, 0.8, 0.6) and push q1..q3 (2.0, 1.9, 1.8 -> 1.0, 0.95, 0.9)."""
    pushed = push_list(("q1", 2.0), ("q2", 1.9), ("q3", 1.8)) + (push_list(("p2", 1.0)) if both else [])
    merged = merge_paths(pull_list(0.05, 0.04, 0.03), pushed, max_proactive, asked=asked)
    return [c.key.record_id for c in merged]


@pytest.mark.parametrize(("max_proactive", "expected"), [
    (None, ["p1", "p2", "p3", "q1", "q2", "q3"]),
    (2, ["p1", "p2", "p3", "q1", "q2"]),
    (0, ["p1", "p2", "p3"]),
])
def test_for_a_question_push_only_records_follow_the_pull_candidates_up_to_max_proactive(max_proactive, expected):
    assert merged_names(max_proactive, asked=True) == expected
    assert merged_names(max_proactive, both=True, asked=True) == ["p1", "p2", "p3"] + expected[3:]  # p2: 0.8


@pytest.mark.parametrize(("max_proactive", "expected"), [
    (None, ["p1", "q1", "q2", "q3", "p2", "p3"]),  # plain combined order (ties: pull first)
    (3, ["p1", "q1", "q2", "q3", "p2", "p3"]),
    (2, ["p1", "q1", "q2", "p2", "p3", "q3"]),
    (1, ["p1", "q1", "p2", "p3", "q2", "q3"]),
    (0, ["p1", "p2", "p3", "q1", "q2", "q3"]),
])
def test_push_only_records_past_max_proactive_queue_behind_every_pull_candidate(max_proactive, expected):
    assert merged_names(max_proactive) == expected


def test_records_found_by_both_paths_are_not_held_back_by_max_proactive():
    # p2 is also a push record: 0.8 + 1.0 / 2.0 = 1.3, the best combined score
    assert merged_names(0, both=True) == ["p2", "p1", "p3", "q1", "q2", "q3"]
    assert merged_names(1, both=True) == ["p2", "p1", "q1", "p3", "q2", "q3"]


@given(
    pull=st.lists(st.floats(0.001, 1.0), max_size=6),
    push=st.lists(st.tuples(st.integers(0, 9), st.floats(0.001, 5.0)), max_size=8,
                  unique_by=lambda pair: pair[0]),
    max_proactive=st.integers(0, 4),
)
def test_merge_invariants_for_a_question(pull, push, max_proactive):
    """Every pull candidate (found by both paths too) comes before every push-only record."""
    pushed = push_list(*((f"p{i + 1}" if i < len(pull) else f"q{i}", score) for i, score in push))
    merged = merge_paths(pull_list(*pull), pushed, max_proactive, asked=True)
    found = [c for c in merged if c.pull is not None]
    assert merged[: len(found)] == found and len(found) == len(pull)
    assert [c.combined for c in found] == sorted((c.combined for c in found), reverse=True)
    proactive = merged[len(found):]
    assert all(c.pull is None for c in proactive) and len(proactive) <= max_proactive
    assert [c.combined for c in proactive] == sorted((c.combined for c in proactive), reverse=True)


@given(
    pull=st.lists(st.floats(0.001, 1.0), max_size=6),
    push=st.lists(st.tuples(st.integers(0, 9), st.floats(0.001, 5.0)), max_size=8,
                  unique_by=lambda pair: pair[0]),
    max_proactive=st.integers(0, 4),
)
def test_merge_invariants(pull, push, max_proactive):
    """Push ids 0..5 may also be pull candidates p1..p6 (found by both paths)."""
    pushed = push_list(*((f"p{i + 1}" if i < len(pull) else f"q{i}", score) for i, score in push))
    merged = merge_paths(pull_list(*pull), pushed, max_proactive)
    keys = [c.key for c in merged]
    assert len(keys) == len(set(keys)) == len({c.key for c in pull_list(*pull) + pushed})
    top_pull, top_push = max(pull, default=1.0), max((s for _, s in push), default=1.0)
    for candidate in merged:
        assert candidate.combined == pytest.approx((candidate.pull or 0) / top_pull + (candidate.push or 0) / top_push)
    push_only = [i for i, c in enumerate(merged) if c.pull is None]
    last_pull = max((i for i, c in enumerate(merged) if c.pull is not None), default=-1)
    assert sum(1 for i in push_only if i < last_pull) <= max_proactive  # the rest queue behind
    competing = [c for c in merged if c.pull is not None or c.push is None] + \
        [merged[i] for i in push_only[:max_proactive]]
    head = merged[: len(competing)]
    assert sorted(map(id, head)) == sorted(map(id, competing))
    assert [c.combined for c in head] == sorted((c.combined for c in head), reverse=True)
    tail = [c.combined for c in merged[len(head):]]
    assert tail == sorted(tail, reverse=True)
    best_queued = max(tail, default=float("-inf"))
    assert all(merged[i].combined >= best_queued for i in push_only[:max_proactive])


def proactive_setup() -> tuple[list[Note], list[Note]]:
    """Pull hits combined 1, 61/62, 61/63; push-only records combined 1, .999, .998, .997."""
    pulled = [Note.create(agent_id="a", content=text) for text in ladder(3)]
    pushed = [Note.create(agent_id="a", content=f"omega {i}", salience=salience)
              for i, salience in enumerate([1.0, 0.999, 0.998, 0.997])]
    return pulled, pushed


@pytest.mark.parametrize(("max_proactive", "chosen"), [
    (None, "p1 p2 p3 q1"),     # default max(1, 5 // 5) = 1 proactive record, after every pull hit
    (0, "p1 p2 p3"),
    (4, "p1 p2 p3 q1 q2"),     # they fill the slots the pull path leaves, no more
])
def test_proactive_records_follow_every_pull_hit_of_a_question(any_db, max_proactive, chosen):
    pulled, pushed = proactive_setup()
    names = {**{f"p{i}": r for i, r in enumerate(pulled, 1)}, **{f"q{i}": r for i, r in enumerate(pushed, 1)}}
    result = ContextAssembler(Note, max_items=5, max_proactive=max_proactive).assemble("alpha", agent_id="a")
    assert result.records == [names[n] for n in chosen.split()]
    assert result.proactive == [names[n] for n in chosen.split() if n.startswith("q")]
    expected_push = sum(n.startswith("q") for n in chosen.split())
    assert (result.metadata["pull_count"], result.metadata["push_count"]) == (3, expected_push)
    assert result.metadata["total_candidates"] == 3 + min(4, 1 if max_proactive is None else max_proactive)
    assert result.metadata["suppressed_count"] == 0


def test_a_full_pull_path_leaves_no_slot_to_proactive_records(any_db):
    pulled, _pushed = proactive_setup()
    result = ContextAssembler(Note, max_items=3, max_proactive=3).assemble("alpha", agent_id="a")
    assert result.records == pulled and result.proactive == []


@pytest.mark.parametrize(("max_proactive", "chosen"), [
    (None, "q1 q2 q3 q4"),     # no question: the push path alone fills the slots
    (0, "q1 q2 q3 q4"),
])
def test_without_a_question_the_push_path_fills_the_context(any_db, max_proactive, chosen):
    _, pushed = proactive_setup()
    result = ContextAssembler(Note, max_items=5, max_proactive=max_proactive).assemble(agent_id="a")
    assert result.records == pushed == result.proactive


class Seeded(AccessTrackerMixin, Model):
    """The seed's Memory with a CyclicDecayField on importance: every fresh record is above 0.5."""

    memory_id = AutoKeyField()
    agent_id = KeyField()
    topic = StringField()
    content = StringField()
    importance = FloatField(default=1.0)
    relevance = DecayingSortedField(base_score_field="importance", partition_by="agent_id")
    rhythm = CyclicDecayField(base_score_field="importance", partition_by="agent_id")
    confidence = ConfidenceField()
    associations = CoOccurrenceField()
    topics_seen = ExistenceFilter(fingerprint_fn=lambda m: m.topic)
    content_bm25 = BM25Field(source="content")
    embedding = EmbeddingField(source="content", provider=HashingEmbeddings(64))


def test_a_question_matching_nothing_gets_at_most_max_proactive_records(any_db):
    for n, topic in enumerate(["deployment", "deployment", "lunch", "billing", "travel"]):
        Seeded.create(agent_id="a", topic=topic, content=f"{topic} note number {n}")
    result = ContextAssembler(Seeded, max_items=10).assemble({"topic": "kubernetes"}, agent_id="a")
    assert result.metadata["pull_count"] == 0  # the filter says no topic matches
    assert len(result.proactive) == len(result.records) == 2  # max(1, 10 // 5), not all 5
    high = ContextAssembler(Seeded, max_items=10, surfacing_threshold=5.0)
    assert high.assemble({"topic": "kubernetes"}, agent_id="a").records == []  # nothing above the bar


def test_a_proactive_record_never_ranks_above_a_pull_hit(any_db):
    for n, topic in enumerate(["deployment", "deployment", "lunch", "billing", "travel"]):
        Seeded.create(agent_id="a", topic=topic, content=f"{topic} note number {n}")
    result = ContextAssembler(Seeded, max_items=10).assemble({"topic": "deployment"}, agent_id="a", emit_trace=True)
    sources = [t["source"] for t in trace_of(result)]
    assert "push" in sources and sources.index("push") > max(i for i, s in enumerate(sources) if s != "push")
    assert set(ids(result.records)[:2]) == {"deployment note number 0", "deployment note number 1"}


# -- result and metadata ------------------------------------------------------------------------
BASE_KEYS = {"pull_count", "push_count", "token_count", "timing_ms", "total_candidates", "retrieval_mode",
             "duplicates_collapsed", "below_floor", "oversize",
             "suppressed_count"}


def test_the_assembler_is_exported_from_redmem():
    assert redmem.ContextAssembler is ContextAssembler and redmem.AssemblyResult is AssemblyResult
    assert {"ContextAssembler", "AssemblyResult"} <= set(redmem.__all__)


def test_result_shape_and_metadata_keys(any_db):
    notes = merge_setup()
    result = ContextAssembler(Note).assemble("alpha", agent_id="a")
    assert isinstance(result, AssemblyResult) and isinstance(result.formatted, str)
    assert set(result.metadata) == BASE_KEYS
    assert result.metadata["timing_ms"] > 0 and isinstance(result.metadata["token_count"], int)
    assert result.metadata["suppressed_count"] == 0  # every candidate was selected
    keys = [r.db_key for r in result.records]
    assert all(r.db_key in keys for r in result.proactive) and len(keys) == len(notes)


def test_emit_trace_adds_one_entry_per_record_in_rank_order(any_db):
    merge_setup()
    result = ContextAssembler(Note).assemble("alpha", agent_id="a", emit_trace=True)
    assert set(result.metadata) == BASE_KEYS | {"trace"}
    trace = trace_of(result)
    assert [t["key"] for t in trace] == [r.db_key.redis_key for r in result.records]
    assert [t["rank"] for t in trace] == [1, 2, 3]
    assert all({"key", "rank", "score", "source"} <= set(t) for t in trace)
    scores = [t["score"] for t in trace if t["source"] != "push"]  # push-only records follow, whatever their score
    assert scores == sorted(scores, reverse=True) and trace[-1]["source"] == "push"


def test_assess_quality_adds_the_quality_key(any_db):
    merge_setup()
    result = ContextAssembler(Note).assemble("alpha", agent_id="a", assess_quality=True)
    assert set(result.metadata) == BASE_KEYS | {"quality"}
    assert 0.0 <= result.metadata["quality"].fok_score <= 1.0


def test_quality_is_assessed_before_the_post_effects_with_the_assembly_clock(any_db):
    entries = [Diary.create(agent_id="a", content=text) for text in ladder(4)]
    assembler = ContextAssembler(Diary, max_items=1)  # fused list: 2 candidates, one selected
    later = time.time() + 2 * 3600  # two half-lives after the saves, by the assembly clock
    result = assembler.assemble("alpha", agent_id="a", now=later, assess_quality=True)
    quality = result.metadata["quality"]
    assert result.records == [entries[0]] and result.metadata["suppressed_count"] == 1
    assert quality.candidate_count == 2
    assert quality.avg_confidence == 0.5  # read before the suppression moved the loser's confidence
    assert ConfidenceField.get_confidence(entries[1], "confidence") == pytest.approx(0.4)
    assert quality.staleness_ratio == 1.0
    assert quality.score_distribution["max"] == pytest.approx(0.25, rel=1e-3)  # 2 ** -2, decayed at `now`
    current = assembler.assemble("alpha", agent_id="a", assess_quality=True).metadata["quality"]
    assert current.staleness_ratio == 0.0 and current.score_distribution["max"] == pytest.approx(1.0, rel=1e-3)
    assert current.avg_confidence == pytest.approx(0.45)  # (0.5 + 0.4) / 2: the last assembly's effect, not this one's
