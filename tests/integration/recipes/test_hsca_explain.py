"""HSCA's region assembly explains itself: each query term's weight and the distance damping
reproduce each snapshot's relevance and the order; the layer scores are shown; cuts are named;
explaining costs no round trip."""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from redmem.context._explain import Explanation
from redmem.context._result import ContextResult
from redmem.recipes.context_assembler import ContextAssembler
from redmem.recipes.hsca import HSCAEngine, SnapshotPassage

TURNS = [
    "Redis stores data in memory. Memory access makes Redis fast. Fast data access is why teams pick Redis.",
    "So how does Redis persist data to disk? Does the memory data survive a restart?",
    "Once upon a time a tortoise and a hare agreed to race. The hare ran ahead and slept under a tree. "
    "The tortoise kept walking slowly past the hare.",
    "The hare woke too late, and the tortoise had won the race. The tortoise was slow, but the hare was careless.",
    "The court ruled that the lease contract bound the tenant. The tenant appealed the court ruling on the lease. "
    "The landlord's contract with the tenant stood.",
    "The appeal court upheld the lease ruling, so the tenant must pay under the contract. Redis was not mentioned.",
]
LAYERS = ["locality", "layer1", "coherence", "domain", "nuance", "macro_weight"]


def session(agent: str) -> HSCAEngine:
    engine = HSCAEngine(agent_id=agent, session_id="chat")
    for turn in TURNS:
        engine.ingest_turn(turn)
    return engine


def reproduces_ranking(explanation: Explanation) -> None:
    for item in explanation.items:
        assert item.arms and all(a.arm.startswith("term:") for a in item.arms)
        assert math.fsum(a.contribution for a in item.arms) == pytest.approx(item.score, rel=1e-9)
        damping = next(b for b in item.boosts if b.name == "locality").value
        for arm in item.arms:
            assert arm.weight == pytest.approx(damping / len(item.arms), rel=1e-12)
        assert [b.name for b in item.boosts] == LAYERS
    scores = [i.score for i in explanation.items]
    assert scores == sorted(scores, reverse=True)
    beyond = [o.score for o in explanation.left_out if o.reason == "max_items"]
    assert all(s <= min(scores) for s in beyond) if scores else True


def test_a_region_assembly_explains_its_snapshots(db):
    engine = session("hx-1")
    result = engine.assemble("redis court", context_position=2)
    assert isinstance(result, ContextResult) and result.text == result.formatted
    explanation = result.explain()
    assert explanation.recipe == "hsca" and explanation.mode == "hsca_region"
    assert explanation.tenant == {"agent_id": "hx-1", "session_id": "chat"}
    assert [i.record_id for i in explanation.items] == [r.snapshot_id for r in result.records]
    assert [i.score for i in explanation.items] == [h.score for h in result.hits]
    assert len(explanation.items[0].arms) == 2  # one arm per distinct query term
    reproduces_ranking(explanation)


def test_max_items_and_budget_are_named(db):
    engine = session("hx-2")
    one = engine.assemble("redis court tortoise", assembler=ContextAssembler(SnapshotPassage, max_items=1))
    assert {o.reason for o in one.explain().left_out} == {"max_items"}
    tight = engine.assemble("redis court tortoise", assembler=ContextAssembler(
        SnapshotPassage, max_tokens=70, render_fields=["position", "content"], oversize="skip"))
    assert "budget" in {o.reason for o in tight.explain().left_out} or "oversize" in {
        o.reason for o in tight.explain().left_out}
    reproduces_ranking(tight.explain())


def test_explaining_costs_no_round_trip(db, sent):
    result = session("hx-3").assemble("tortoise hare", context_position=1)
    sent.clear()
    result.explain().to_dict()
    assert sent == []


AGENTS = itertools.count()


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(query=st.lists(st.sampled_from(["redis", "memory", "tortoise", "hare", "court", "lease", "tenant", "race"]),
                      min_size=1, max_size=4).map(" ".join),
       position=st.one_of(st.none(), st.integers(0, 3)), max_items=st.integers(1, 4))
def test_the_terms_reproduce_the_ranking(db, query, position, max_items):
    engine = session(f"hx-h{next(AGENTS)}")
    result = engine.assemble(query, context_position=position,
                             assembler=ContextAssembler(SnapshotPassage, max_items=max_items))
    explanation = result.explain()
    reproduces_ranking(explanation)
    assert [i.record_id for i in explanation.items] == [
        r.snapshot.snapshot_id for r in engine.relevant(query, position, max_items)]
