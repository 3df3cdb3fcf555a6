"""ContextAssembler's push path, its post-effects on stored state, and tenant isolation on every path.

Cases that run the composite ranking are strict xfails while ``Query.composite_score`` is not
registered (see test_context_assembler.py); the condition is evaluated when each test runs.
"""

from __future__ import annotations

import itertools
import math
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import redmem
from conftest import configured_embeddings
from models import SEED_RANKING
from models import RhythmicMemory as Memory
from redmem import (
    AutoKeyField,
    ConfidenceField,
    CyclicDecayField,
    Entity,
    FloatField,
    KeyField,
    Model,
    RecallProposal,
    StringField,
)
from redmem.context._effects import SURFACING_REASON
from redmem.embeddings import HashingEmbeddings
from redmem.recipes.context_assembler import ContextAssembler


class AssemblerEffectsRoutine(Model):
    """A daily cycle of amplitude 1 peaking at midnight UTC, on a small base.

    Local: the push-path tests need this one cycle and base, unlike ``models.Card``'s default cycles.
    """

    routine_id = AutoKeyField()
    agent_id = KeyField()
    content = StringField()
    base = FloatField(default=0.1)
    rhythm = CyclicDecayField(base_score_field="base", cycles=[(86400, 1.0)], partition_by="agent_id")


FRESH = 0.01 ** -0.1  # the decay factor of a record younger than 864 s






@pytest.fixture(autouse=True)
def hashing_embeddings():
    with configured_embeddings(HashingEmbeddings(64)):
        yield


def memory(agent: str, content: str, topic: str = "deployment", **values) -> Memory:
    return Memory.create(agent_id=agent, topic=topic, content=content, **values)


def confidence(record) -> dict:
    return ConfidenceField.get_confidence_data(record, "confidence")


def ladder(count: int, word: str = "alpha") -> list[str]:
    """``count`` texts matching ``word`` with strictly falling BM25 (same length, fewer ``word``)."""
    return [" ".join([word] * (count + 1 - i) + ["pad"] * (i - 1)) for i in range(1, count + 1)]


# -- push path ----------------------------------------------------------------------------------
def test_records_above_the_surfacing_threshold_become_proactive(any_db):
    hot = memory("a", "hot", salience=1.0)     # 1.585
    warm = memory("a", "warm", salience=0.4)   # 0.634
    cold = memory("a", "cold", salience=0.2)   # 0.317
    result = ContextAssembler(Memory, **SEED_RANKING).assemble(agent_id="a", emit_trace=True)
    assert result.records == [hot, warm] and result.proactive == [hot, warm]
    assert [t["signals"]["cyclic"] for t in result.metadata["trace"]] == pytest.approx([FRESH, 0.4 * FRESH])
    assert result.metadata["push_count"] == 2 and result.metadata["pull_count"] == 0
    for record in (hot, warm):
        proposal = RecallProposal.for_record(record)
        assert (proposal.status, proposal.partition, proposal.reason) == ("pending", "a", SURFACING_REASON)
    assert RecallProposal.for_record(cold) is None
    stricter = ContextAssembler(Memory, **SEED_RANKING, surfacing_threshold=0.7).assemble(agent_id="a")
    assert stricter.proactive == [hot]


def test_the_push_scan_follows_the_cycle_at_now(any_db):
    routine = AssemblerEffectsRoutine.create(agent_id="a", content="standup")
    peak = (math.floor(time.time() / 86400) + 1) * 86400.0  # next midnight UTC: cos = 1
    at_peak = ContextAssembler(AssemblerEffectsRoutine, **SEED_RANKING).assemble(agent_id="a", now=peak)
    assert at_peak.proactive == [routine]
    assert RecallProposal.for_record(routine).surfaced_at == peak
    at_trough = ContextAssembler(AssemblerEffectsRoutine, **SEED_RANKING).assemble(agent_id="a", now=peak + 43200)  # cos = -1
    assert at_trough.records == [] and at_trough.proactive == []


def test_the_push_path_offers_twice_max_items(any_db):
    hot = [memory("a", f"hot {i}", salience=1.0 - i / 100) for i in range(7)]
    result = ContextAssembler(Memory, **SEED_RANKING, max_items=3).assemble(agent_id="a", emit_trace=True)
    assert result.metadata["total_candidates"] == 6  # 2 x max_items of the 7 above the threshold
    assert result.records == result.proactive == hot[:3]
    assert [t["source"] for t in result.metadata["trace"]] == ["push"] * 3


def test_only_selected_push_records_get_a_proposal(any_db):
    first = memory("a", "first", salience=1.0)
    second = memory("a", "second", salience=0.9)
    result = ContextAssembler(Memory, **SEED_RANKING, max_items=1).assemble(agent_id="a")
    assert result.proactive == [first]
    assert RecallProposal.for_record(first).status == "pending"
    assert RecallProposal.for_record(second) is None


def test_pull_only_records_get_no_proposal(any_db):
    pulled = memory("a", "deploy with blue green", salience=0.0)
    result = ContextAssembler(Memory, **SEED_RANKING).assemble({"topic": "deploy"}, agent_id="a")
    assert result.records == [pulled] and result.proactive == []
    assert RecallProposal.for_record(pulled) is None


# -- post-effects: access tracking --------------------------------------------------------------
def test_one_staged_read_per_selected_record_per_assembly(any_db):
    records = [
        memory("a", "deploy with blue green", salience=0.9),          # pull and push
        memory("a", "water the plants", topic="home", salience=1.0),  # push
        *(memory("a", f"deploy note {word}") for word in ["helm", "canary", "freeze", "alerts"]),
    ]
    assembler = ContextAssembler(Memory, **SEED_RANKING, max_items=5)  # the 5 pull hits fill it: no push-only record
    result = assembler.assemble({"topic": "deploy"}, agent_id="a", emit_trace=True)
    sources = {t["key"]: t["source"] for t in result.metadata["trace"]}
    assert sources[records[0].db_key.redis_key] == "both"
    chosen = {r.db_key for r in result.records}
    assert len(chosen) == 5 and records[1].db_key not in chosen
    for record in records:
        assert len(record.staged_accesses) == (1 if record.db_key in chosen else 0)
    assembler.assemble({"topic": "deploy"}, agent_id="a")
    assert len(records[0].staged_accesses) == 2  # one more per assembly, never two


# -- reporting outcomes on the result ----------------------------------------------------------
def test_report_one_outcome_for_every_record_of_the_context(any_db):
    pulled = memory("a", "deploy with blue green")
    pushed = memory("a", "water the plants", topic="home", salience=1.0)
    result = ContextAssembler(Memory, **SEED_RANKING).assemble({"topic": "deploy"}, agent_id="a")
    assert set(result.records) == {pulled, pushed} and result.proactive == [pushed]
    assert result.report("acted") == {pulled.db_key.redis_key: "acted", pushed.db_key.redis_key: "acted"}
    assert (pulled.access_count, pushed.access_count) == (1, 1)
    assert RecallProposal.for_record(pushed).status == "acted"
    assert confidence(pulled)["corroborations"] == 1


def test_report_per_record_and_refuse_a_record_outside_the_context(any_db):
    pulled = memory("a", "deploy with blue green")
    pushed = memory("a", "water the plants", topic="home", salience=1.0)
    outside = memory("b", "deploy on fridays")
    result = ContextAssembler(Memory, **SEED_RANKING).assemble({"topic": "deploy"}, agent_id="a")
    with pytest.raises(redmem.OutcomeError, match="names no record of the context"):
        result.report({pulled: "acted", outside: "acted"})
    assert len(pulled.staged_accesses) == 1 and confidence(pulled)["evidence_count"] == 0  # nothing written
    assert result.report({pulled: "used", pushed.memory_id: "dismissed"}) == {
        pulled.db_key.redis_key: "used", pushed.db_key.redis_key: "dismissed"}
    assert (pulled.access_count, pushed.access_count) == (1, 0)
    assert RecallProposal.for_record(pushed).status == "dismissed"


def test_a_report_is_one_round_trip_and_a_refused_one_none(db, sent):
    records = [memory("a", f"deploy note {word}", salience=0.9) for word in ["helm", "canary", "freeze"]]
    result = ContextAssembler(Memory, **SEED_RANKING).assemble({"topic": "deploy"}, agent_id="a")
    assert len(result.records) == 3
    sent.clear()
    with pytest.raises(redmem.OutcomeError):
        result.report({records[0]: "acted", "nope": "acted"})
    assert sent == []
    result.report({records[0]: "acted", records[1].db_key.redis_key: "used", records[2].memory_id: "dismissed"})
    assert len(sent) == 1


# -- post-effects: competitive suppression ------------------------------------------------------
def test_non_selected_pull_candidates_are_suppressed_and_selected_ones_untouched(any_db):
    hits = [memory("a", text) for text in ladder(5)]       # BM25 ranks 1..5
    push_top = memory("a", "water the plants", topic="home", salience=1.0)
    push_low = memory("a", "feed the cat", topic="home", salience=0.4)
    assembler = ContextAssembler(Memory, **SEED_RANKING, max_items=2, retrieval_mode="lexical")  # max_proactive 1
    result = assembler.assemble({"topic": "deployment", "q": "alpha"}, agent_id="a")
    assert result.records == hits[:2]  # the pull hits fill both slots: push_top only follows them
    assert result.metadata["suppressed_count"] == 2
    # pull candidates are the fused top 2 x max_items = 4 keyword hits
    for record in hits[2:4]:
        assert confidence(record) == {"confidence": pytest.approx(0.4), "evidence_count": 1,
                                      "corroborations": 0, "contradictions": 1}  # (0.5 + 0.3) / 2
    untouched = {"confidence": 0.5, "evidence_count": 0, "corroborations": 0, "contradictions": 0}
    for record in (*hits[:2], push_top, hits[4], push_low):  # selected, beyond the fused list, push only
        assert confidence(record) == untouched


def test_a_definitely_missing_query_suppresses_nothing(any_db):
    records = [memory("a", text) for text in ladder(4)]
    # lexical: the pre-check speaks for the keyword arm, which is all there is (hybrid would ask the vectors)
    assembler = ContextAssembler(Memory, **SEED_RANKING, max_items=1, retrieval_mode="lexical")
    result = assembler.assemble({"topic": "kubernetes"}, agent_id="a")
    assert result.records == [] and result.metadata["suppressed_count"] == 0
    assert all(confidence(r)["evidence_count"] == 0 for r in records)


# -- tenant isolation ----------------------------------------------------------------------------
def two_tenants() -> tuple[list[Memory], list[Memory]]:
    """Interleaved, near-identical memories of two agents; b's are hot and densely linked."""
    a, b = [], []
    for i in range(6):
        a.append(memory("agent-a", f"deploy checklist step {i} alpha", salience=0.6 if i == 0 else 0.0))
        b.append(memory("agent-b", f"deploy checklist step {i} bravo", salience=1.0))
    for left, right in itertools.combinations(b, 2):
        Memory.associations.link(left, right, initial_weight=0.9)
    Memory.associations.link(b[0], Entity("acme"), initial_weight=0.9)
    Memory.associations.link(a[0], Entity("acme"), initial_weight=0.9)
    return a, b


def assert_isolated(result, b: list[Memory]) -> None:
    assert result.records, "the test needs agent-a to get something"
    assert all(r.agent_id == "agent-a" for r in result.records + result.proactive)
    assert all("{agent-a}" in t["key"] for t in result.metadata["trace"])
    assert "bravo" not in result.formatted
    for record in b:  # and nothing of b's stored state moved
        assert record.staged_accesses == []
        assert confidence(record)["evidence_count"] == 0
        assert RecallProposal.for_record(record) is None


WEIGHTS = {"relevance": 0.6, "confidence": 0.3}


@pytest.mark.parametrize(("mode", "cues", "weights"), [
    ("auto", {"topic": "deploy checklist bravo"}, WEIGHTS),  # hybrid: keyword + vector + graph
    ("lexical", "deploy checklist bravo acme", WEIGHTS),
    ("semantic", "deploy checklist bravo", WEIGHTS),         # vector + graph
    ("auto", None, None),                                    # no query text, no weights: push path only
    pytest.param("auto", None, WEIGHTS),  # no query text: composite + push
    pytest.param("composite", "deploy checklist bravo", WEIGHTS),
], ids=["hybrid", "lexical", "semantic", "push-only", "no-text-composite", "composite"])
def test_no_record_of_another_agent_ever_appears(any_db, mode, cues, weights):
    _a, b = two_tenants()
    assembler = ContextAssembler(Memory, **SEED_RANKING, score_weights=weights, retrieval_mode=mode, max_items=20)
    result = assembler.assemble(cues, agent_id="agent-a", emit_trace=True)
    assert result.metadata["retrieval_mode"] == ("composite" if cues is None else assembler.mode)
    assert_isolated(result, b)


def test_graph_expansion_through_a_shared_entity_name_stays_in_the_partition(any_db):
    a, b = two_tenants()
    a_friend = memory("agent-a", "unrelated gamma note")
    for record in a[1:] + [a_friend]:
        Memory.associations.link(record, Entity("acme"), initial_weight=0.9)
    result = ContextAssembler(Memory, **SEED_RANKING, retrieval_mode="lexical").assemble(
        {"topic": "deployment", "q": "alpha"}, agent_id="agent-a", emit_trace=True)
    assert a_friend in result.records  # two hops: seed -> acme -> friend
    assert_isolated(result, b)


AGENTS = itertools.count()


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    words=st.lists(st.sampled_from(["deploy", "helm", "rollback", "canary", "freeze", "alert"]),
                   min_size=2, max_size=12),
    mode=st.sampled_from(["auto", "lexical", "semantic"]),
    salience=st.sampled_from([0.0, 1.0]),
)
def test_isolation_holds_for_any_interleaving(any_db, words, mode, salience):
    run = next(AGENTS)
    mine, theirs = f"mine-{run}", f"theirs-{run}"
    for i, word in enumerate(words):  # the same texts, alternating owners
        memory(mine if i % 2 else theirs, f"{word} runbook {i % 3}", salience=salience)
    query = " ".join(dict.fromkeys(words))
    result = ContextAssembler(Memory, **SEED_RANKING, retrieval_mode=mode, max_items=20).assemble(
        {"topic": "deployment", "q": query}, agent_id=mine, emit_trace=True)
    assert all(r.agent_id == mine for r in result.records)
    assert all(("{" + mine + "}") in t["key"] for t in result.metadata["trace"])
