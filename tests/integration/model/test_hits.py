"""Search results as values: every search returns a HitList whose hits match the records' score
attributes (the alias the seed's examples read), in the same order; the assembler's result
carries the hits its trace reports."""

from __future__ import annotations

import copy
import pickle
import time
from dataclasses import FrozenInstanceError

import pytest

from conftest import configured_embeddings
from models import SEED_RANKING, RhythmicMemory
from redmem import (
    AutoKeyField,
    ContextAssembler,
    FloatField,
    Hit,
    HitList,
    KeyField,
    Model,
    SortedField,
    WriteFilterMixin,
)
from redmem.embeddings import HashingEmbeddings

TEXTS = ["invoice paid in march", "invoice overdue since april", "standup at ten", "paid the invoice twice"]


@pytest.fixture(autouse=True)
def hashing_embeddings():
    with configured_embeddings(HashingEmbeddings(64)):
        yield


class HitsTicket(WriteFilterMixin, Model):
    """A priority index (WriteFilterMixin) and a plain sorted signal, for top_by_priority and composite_score."""

    ticket_id = AutoKeyField()
    agent_id = KeyField()
    urgency = FloatField(default=0.9)
    rank = SortedField(partition_by="agent_id")

    def compute_filter_score(self):
        return self.urgency


def memories():
    return [RhythmicMemory.create(agent_id="a", topic="invoice paid", content=text, importance=1 + i, salience=0.5 + i / 10)
            for i, text in enumerate(TEXTS)]


def assert_hits_match(found, alias, signal=None):
    """``found`` is a HitList whose hits are its records, in order, scored as the alias says."""
    assert isinstance(found, HitList) and isinstance(found, list)
    assert [hit.record for hit in found.hits] == list(found)
    assert all(hit.record is record for hit, record in zip(found.hits, found))
    assert [hit.score for hit in found.hits] == [getattr(record, alias) for record in found]
    if signal is not None:
        assert [dict(hit.signals) for hit in found.hits] == [{signal: hit.score} for hit in found.hits]


# -- the values ----------------------------------------------------------------------------------
def test_a_hit_is_frozen_and_its_mappings_read_only():
    signals = {"bm25": 2.5}
    hit = Hit("record", 2.5, signals)
    signals["bm25"] = 0.0  # the hit holds a copy
    assert hit.signals == {"bm25": 2.5} and hit.ranks == {}
    with pytest.raises(FrozenInstanceError):
        hit.score = 1.0
    with pytest.raises(TypeError):
        hit.signals["bm25"] = 1.0
    assert hit == Hit("record", 2.5, {"bm25": 2.5})


def test_a_hit_list_is_the_list_of_its_records_and_keeps_its_hits():
    hits = [Hit("x", 2.0, {"s": 2.0}), Hit("y", 1.0, {"s": 1.0})]
    found = HitList(hits)
    assert found == ["x", "y"] and found.hits == tuple(hits)
    assert HitList() == [] and HitList().hits == ()
    found.append("z")  # a list like any other; hits stay the ranking as returned
    assert found.hits == tuple(hits)
    assert copy.copy(found).hits == tuple(hits) and pickle.loads(pickle.dumps(found)).hits == tuple(hits)


# -- every search --------------------------------------------------------------------------------
def test_keyword_search_hits(db):
    memories()
    found = RhythmicMemory.query.filter(agent_id="a").keyword_search("invoice paid")
    assert len(found) == 3
    assert_hits_match(found, "_bm25_score", "bm25")
    assert [hit.score for hit in found.hits] == sorted((hit.score for hit in found.hits), reverse=True)


def test_semantic_search_hits(db):
    memories()
    found = RhythmicMemory.query.filter(agent_id="a").semantic_search("invoice paid", limit=3)
    assert found
    assert_hits_match(found, "_vector_score", "vector")
    assert RhythmicMemory.query.filter(agent_id="a").semantic_search("invoice", limit=0).hits == ()


def test_top_by_decay_hits(db):
    memories()
    found = RhythmicMemory.query.filter(agent_id="a").top_by_decay(n=3)
    assert [m.content for m in found] == TEXTS[::-1][:3]  # importance 4, 3, 2: the freshest scores
    assert_hits_match(found, "_decay_score", "decay")
    assert RhythmicMemory.query.filter(agent_id="a").top_by_decay(n=0).hits == ()


def test_above_cyclic_threshold_hits(db):
    memories()
    found = RhythmicMemory.query.filter(agent_id="a").above_cyclic_threshold(0.0)
    assert len(found) == len(TEXTS)
    assert_hits_match(found, "_cyclic_score", "cyclic")
    assert RhythmicMemory.query.filter(agent_id="a").above_cyclic_threshold(0.0, limit=0).hits == ()


def test_composite_score_hits_carry_the_mapped_signals(db):
    for i in range(3):
        HitsTicket.create(agent_id="a", rank=i, urgency=0.7 + i / 10)
    found = HitsTicket.query.filter(agent_id="a").composite_score(indexes={"rank": 1.0, "priority": 0.5}, limit=2)
    assert len(found) == 2
    assert_hits_match(found, "_composite_score")
    assert [dict(hit.signals) for hit in found.hits] == [record._signals for record in found]
    assert set(found.hits[0].signals) == {"rank", "priority"}
    assert HitsTicket.query.filter(agent_id="a").composite_score(indexes={"rank": 1.0}, limit=0).hits == ()


def test_top_by_priority_hits(db):
    for urgency in (0.75, 0.95, 0.85):
        HitsTicket.create(agent_id="a", rank=1, urgency=urgency)
    found = HitsTicket.query.filter(agent_id="a").top_by_priority(n=2)
    assert [hit.score for hit in found.hits] == [0.95, 0.85]
    assert_hits_match(found, "_priority_score", "priority")


def test_fuse_hits_carry_the_rrf_score_and_the_ranks(db):
    memories()
    query = RhythmicMemory.query.filter(agent_id="a")
    keyword, vector = query.keyword_search("invoice paid"), query.semantic_search("invoice paid")
    fused = query.fuse(keyword=keyword, vector=vector)
    assert_hits_match(fused, "_rrf_score", "rrf")
    assert [dict(hit.ranks) for hit in fused.hits] == [record._rrf_ranks for record in fused]
    # a search's hits fuse as its records do
    again = query.fuse(keyword=keyword.hits, vector=vector.hits)
    assert [(hit.record.memory_id, hit.score) for hit in again.hits] == [
        (hit.record.memory_id, hit.score) for hit in fused.hits]


# -- the assembler -------------------------------------------------------------------------------
def test_assembly_hits_are_the_selected_records_with_the_traced_scores(db):
    memories()
    assembler = ContextAssembler(RhythmicMemory, **SEED_RANKING, max_items=3)
    now = time.time() + 60
    result = assembler.assemble("invoice paid", agent_id="a", emit_trace=True, now=now)
    assert result.records and [hit.record for hit in result.hits] == result.records
    trace = result.metadata["trace"]
    assert [(hit.score, dict(hit.signals)) for hit in result.hits] == [(t["score"], t["signals"]) for t in trace]
    assert "rrf" in result.hits[0].signals
    untraced = assembler.assemble("invoice paid", agent_id="a", now=now)
    assert [hit.score for hit in untraced.hits] == [hit.score for hit in result.hits]
    assert "trace" not in untraced.metadata
