"""HSCA snapshots as a ContextAssembler source: passages per session, the assembler's own pull over
a session, and the region-localised pull (exact positions, HSCA relevance, the assembler's budget)."""

from __future__ import annotations

import pytest

from redmem.model._base import Model
from redmem.model._fields import StringField
from redmem.model._indexed import KeyField
from redmem.recipes.context_assembler import ContextAssembler
from redmem.recipes.hsca import HSCAEngine, SnapshotPassage
from redmem.store._errors import QueryException, ValidationError

TURNS = [
    "Redis stores data in memory. Memory access makes Redis fast. Fast data access is why teams pick Redis.",
    "So how does Redis persist data to disk? Does the memory data survive a restart?",
    "Once upon a time a tortoise and a hare agreed to race. The hare ran ahead and slept under a tree. "
    "The tortoise kept walking slowly past the hare.",
    "The hare woke too late, and the tortoise had won the race. The tortoise was slow, but the hare was careless.",
    "The court ruled that the lease contract bound the tenant. The tenant appealed the court ruling on the lease. "
    "The landlord's contract with the tenant stood.",
    "The appeal court upheld the lease ruling, so the tenant must pay under the contract. "
    "Meanwhile the Redis server keeps its data in memory and persists it to disk.",
]


class HscaSourceNote(Model):
    agent_id = KeyField(partition_by="agent_id")
    content = StringField()


def session(agent: str = "agent-1", name: str = "chat", keep_text: bool = True) -> HSCAEngine:
    engine = HSCAEngine(agent_id=agent, session_id=name, keep_text=keep_text)
    for turn in TURNS:
        engine.ingest_turn(turn)
    engine.take_snapshot()  # the last turn joins a legal sentence and a Redis one: a cross-domain beat of its own
    # beat 4 is the bridge (:mod:`redmem.recipes.hsca._bridging`): that turn and the first Redis turn are close in meaning
    assert [s.conversation_position for s in engine.get_macro_context()] == [0, 1, 2, 3, 4]
    return engine


def test_every_snapshot_has_a_passage_in_its_session(db):
    engine = session()
    passages = SnapshotPassage.query.filter(agent_id="agent-1", session_id="chat").order_by("position").all()
    assert [p.snapshot_id for p in passages] == [s.snapshot_id for s in engine.get_macro_context()]
    assert passages[1].domain == "narrative" and "tortoise" in passages[1].content
    assert passages[0].content.splitlines() == TURNS[:2]


def test_the_assembler_pulls_from_one_session_only(db):
    session()
    session("agent-2")
    found = ContextAssembler(SnapshotPassage, max_items=2).assemble("tortoise race", agent_id="agent-1", session_id="chat")
    assert [r.position for r in found.records] == [1] and found.records[0].agent_id == "agent-1"
    assert "tortoise" in found.formatted
    with pytest.raises(QueryException):
        ContextAssembler(SnapshotPassage).assemble("tortoise", agent_id="agent-1")


def test_a_region_pull_keeps_to_its_positions_and_the_budget(db):
    engine = session()
    everywhere = engine.assemble("redis")
    assert [r.position for r in everywhere.records] == [0, 3, 4]  # "Redis was not mentioned" is beat 3, and in the bridge
    assert everywhere.metadata["retrieval_mode"] == "hsca_region"
    assert [r.position for r in engine.assemble("redis", region=(1, None)).records] == [3, 4]
    assert engine.assemble("redis", region=(1, 2)).records == []
    near_the_end = engine.assemble("redis", context_position=3)
    assert [r.position for r in near_the_end.records] == [3, 4, 0]
    assert near_the_end.hits[0].score == pytest.approx(near_the_end.metadata["relevance"][0])
    small = engine.assemble("redis", assembler=ContextAssembler(SnapshotPassage, max_tokens=70,
                                                                render_fields=["position", "content"]))
    assert small.metadata["token_count"] <= 70 and [r.position for r in small.records] == [0]
    assert small.formatted.count("position") == 1


def test_dropped_text_leaves_a_searchable_passage_of_terms(db):
    engine = session("agent-3", keep_text=False)
    passage = SnapshotPassage.query.filter(agent_id="agent-3", session_id="chat", position=1).first()
    assert "TURN" not in passage.content and "tortois" in passage.content.split()
    assert [r.position for r in engine.assemble("tortoise").records] == [1]


def test_clearing_the_session_removes_its_passages(db):
    engine = session()
    engine._beats.clear()
    assert SnapshotPassage.query.filter(agent_id="agent-1", session_id="chat").count() == 0


def test_bad_calls_are_refused(db):
    with pytest.raises(ValidationError):
        HSCAEngine().assemble("redis")
    with pytest.raises(ValidationError):
        session().assemble("redis", assembler=ContextAssembler(HscaSourceNote))
