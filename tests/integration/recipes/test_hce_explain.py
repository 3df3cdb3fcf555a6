"""RetrievedContext.explain(): the lists' contributions reproduce each text's fused relevance, the
utilities and utilities per token reproduce the knapsack's choice; left-out texts name their reason;
explaining costs no round trip; report() feeds the ObservationProtocol."""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from redmem.context._explain import LEFT_OUT_REASONS, Explanation
from redmem.context._result import ContextResult
from redmem.recipes.hce import HCEPipeline
from redmem.recipes.hce._pipeline import RetrievedContext
from redmem.store._errors import QueryException

TURNS = [
    ("I moved to Lisbon in March and started working at Acme.", "Congratulations on the new job!"),
    ("My sister Ana Sousa is a marine biologist.", "What an interesting job she has."),
    ("My dog Biscuit is allergic to chicken.", "Good to know for his food."),
    ("What should I cook tonight?", "Maybe a vegetable curry."),
    ("The weather is grey again.", "Autumn does that."),
    ("I watched a documentary about whales.", "Whales are fascinating animals."),
    ("Any tips for sleeping better?", "Keep a regular schedule and less screen time."),
    ("Ana visited Lisbon with Biscuit.", "A family trip!"),
]


def reproduces_the_knapsack(explanation: Explanation) -> None:
    """Contributions sum to the fused score, (fused / best) ** sharpness is the utility, and a
    greedy knapsack over the explained priorities and costs admits exactly the items shown."""
    for item in explanation.items:
        assert math.fsum(a.contribution for a in item.arms) == pytest.approx(item.fused, rel=1e-9)
        sharpness = next(b for b in item.boosts if b.name == "sharpness").value
        assert item.match == pytest.approx(item.fused / item.normaliser, rel=1e-9)
        assert item.score == pytest.approx(min(1.0, item.match) ** sharpness, rel=1e-9)
        assert item.priority == pytest.approx(item.score / max(item.cost, 1), rel=1e-12)
    plain = [i for i in explanation.items if not i.truncated]
    assert [i.priority for i in plain] == sorted((i.priority for i in plain), reverse=True)
    offered = [(i.priority, i.cost, i.record_id) for i in plain]
    offered += [(o.priority, o.cost, o.record_id) for o in explanation.left_out if o.reason == "budget"]
    room = explanation.max_tokens - sum(i.cost for i in explanation.items if i.truncated)
    admitted = []
    for _priority, cost, record_id in sorted(offered, key=lambda o: -o[0]):
        if cost <= room:
            admitted.append(record_id)
            room -= cost
    assert sorted(admitted) == sorted(i.record_id for i in plain)


@pytest.fixture
def pipe(any_db):
    pipeline = HCEPipeline(session_id="hce-why", max_focus=2, context_budget=80)
    for q, a in TURNS:
        pipeline.update(q, a)
    return pipeline


def test_a_context_explains_its_texts(pipe):
    found = pipe.retrieve_candidates("where does Ana live and what does Biscuit eat?")
    assert isinstance(found, ContextResult) and found.text == found.block and found.token_count > 0
    explanation = found.explain()
    assert explanation.recipe == "hce" and explanation.fusion == "convex"
    assert explanation.tenant == {"session_id": "hce-why"} and explanation.max_tokens == 80
    assert [i.record_id for i in explanation.items] == [
        c.metadata.get("interaction_id") or f"buffer:{c.metadata['position']}" for c in found.selected]
    assert found.items == explanation.items
    assert any({a.arm for a in i.arms} & {"tree", "keyword", "graph"} for i in explanation.items)
    assert {o.reason for o in explanation.left_out} <= set(LEFT_OUT_REASONS)
    assert "budget" in {o.reason for o in explanation.left_out}
    reproduces_the_knapsack(explanation)


def test_an_interaction_left_to_the_focus_buffer_is_named(pipe):
    explanation = pipe.retrieve_candidates("Ana visited Lisbon with Biscuit", for_prompt=True).explain()
    duplicates = [o for o in explanation.left_out if o.reason == "duplicate"]
    assert duplicates and "focus buffer" in duplicates[0].detail


def test_explaining_costs_no_round_trip(pipe, sent):
    found = pipe.retrieve_candidates("what does Biscuit eat?")
    sent.clear()
    found.explain().to_dict()
    assert sent == []


def test_report_feeds_the_observation_protocol(pipe):
    found = pipe.retrieve_candidates("where does Ana work?")
    reported = found.report("acted")
    ids = [c.metadata["interaction_id"] for c in found.selected if c.metadata.get("interaction_id")]
    assert ids and sorted(key.rsplit(":", 1)[-1] for key in reported) == sorted(ids)
    assert set(reported.values()) == {"acted"}


def test_a_context_not_made_by_a_retrieval_has_nothing_to_explain():
    with pytest.raises(QueryException, match="no trail"):
        RetrievedContext([], [], [], 0).explain()


SESSIONS = itertools.count()
WORDS = ["Ana", "Lisbon", "Acme", "Biscuit", "chicken", "whales", "curry", "sleep", "novel", "laptop"]


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(turns=st.lists(st.lists(st.sampled_from(WORDS), min_size=1, max_size=6).map(" ".join), min_size=1, max_size=10),
       budget=st.integers(10, 200), query=st.lists(st.sampled_from(WORDS), min_size=1, max_size=3).map(" ".join))
def test_the_numbers_reproduce_the_knapsack(any_db, turns, budget, query):
    pipeline = HCEPipeline(session_id=f"hce-h{next(SESSIONS)}", max_focus=2, context_budget=budget, oversize="skip")
    pipeline.update_many([(text, "noted") for text in turns])
    explanation = pipeline.retrieve_candidates(query).explain()
    reproduces_the_knapsack(explanation)
    named = [i.record_id for i in explanation.items] + [o.record_id for o in explanation.left_out]
    assert len(named) == len(set(named))
