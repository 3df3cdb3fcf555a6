"""FrameResult.explain(): the composite's terms reproduce each block's score and the frame's order;
guarantees, suppression, top_k and budget cuts are named; explaining costs no round trip."""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import redmem
from frames_support import Clock, WordEmbeddings
from redmem.context._explain import LEFT_OUT_REASONS, Explanation
from redmem.context._result import ContextResult
from redmem.recipes.frames import CachePolicy, FrameDefinition, FrameMemory, FrameResult, ScoringWeights
from redmem.recipes.frames._explain import effective_weights
from redmem.store._errors import QueryException

WORDS = ["deploy", "helm", "canary", "rollback", "freeze", "alert", "runbook", "pager"]


@pytest.fixture
def words(db):
    provider = WordEmbeddings()
    before = redmem.store.settings().embedding_provider
    redmem.configure(embedding_provider=provider)
    yield provider
    redmem.configure(embedding_provider=before)


def memory(agent: str, feedback_cap: float | None = 0.005) -> FrameMemory:
    mem = FrameMemory(agent_id=agent, clock=Clock(), wiring=None, feedback_cap=feedback_cap)
    mem.begin_session()
    return mem


def reproduces_ranking(explanation: Explanation) -> None:
    """The terms sum to each block's score; guaranteed blocks first, then the others by score."""
    for item in explanation.items:
        assert [a.arm for a in item.arms] == ["similarity", "confidence", "recency", "centrality", "reinforcement"]
        for arm in item.arms:
            assert arm.contribution == pytest.approx(arm.weight * arm.score, abs=1e-12)
            assert arm.weight == explanation.weights[arm.arm]
        assert math.fsum(a.contribution for a in item.arms) == pytest.approx(item.score, abs=1e-9)
        assert item.fused == item.score and item.normaliser == 1.0
    pinned = [i for i in explanation.items if i.source == "guaranteed"]
    assert explanation.items[: len(pinned)] == tuple(pinned)
    for group in (pinned, explanation.items[len(pinned):]):
        assert [i.score for i in group] == sorted((i.score for i in group), reverse=True)


def test_a_frame_explains_its_blocks_with_the_composite_terms(words):
    mem = memory("fx-1")
    for i in range(12):
        mem.learn(f"{WORDS[i % 8]} note {i} about {WORDS[(i * 3) % 8]}", tags=["ops"])
    result = mem.frame("attention", "helm canary rollback", top_k=4)
    assert isinstance(result, ContextResult) and result.text == result.text and result.token_count > 0
    explanation = result.explain()
    assert explanation.recipe == "frames" and explanation.mode == "frame:attention"
    assert explanation.fusion == "composite" and explanation.tenant == {"agent_id": "fx-1"}
    assert [i.record_id for i in explanation.items] == [b.id for b in result.blocks]
    assert [i.score for i in explanation.items] == [b.score for b in result.blocks]
    assert result.items == explanation.items
    reproduces_ranking(explanation)
    assert {o.reason for o in explanation.left_out} == {"max_items"}
    assert explanation.max_items == 4 and explanation.token_count == result.token_count


def test_damped_weights_are_the_ones_scored_with(words):
    weights = ScoringWeights(0.4, 0.2, 0.2, 0.1, 0.1)
    damped = effective_weights(weights, 0.005)
    assert damped["similarity"] == 0.4 and damped["confidence"] == 0.2
    assert damped["recency"] + damped["centrality"] + damped["reinforcement"] == pytest.approx(0.005)
    assert effective_weights(weights, None) == {"similarity": 0.4, "confidence": 0.2, "recency": 0.2,
                                                "centrality": 0.1, "reinforcement": 0.1}
    mem = memory("fx-raw", feedback_cap=None)
    for i in range(6):
        mem.learn(f"helm chart {i}", tags=["ops"])
    reproduces_ranking(mem.frame("attention", "helm chart", top_k=3).explain())


def test_guarantee_contradiction_and_budget_are_named(words):
    mem = memory("fx-2")
    goal = mem.learn("ship the helm canary release", tags=["task/goal"], category="goal")
    a = mem.learn("helm canary weights are ten percent", tags=["ops"])
    b = mem.learn("helm canary weights are fifty percent", tags=["ops"])
    mem.contradict(a, b)
    for i in range(6):
        mem.learn(f"helm canary detail {i} " + "padding words " * 20, tags=["ops"])
    mem.register_frame(FrameDefinition("fxtask", ScoringWeights(0.5, 0.2, 0.1, 0.1, 0.1),
                                       guarantees=("task/%",), token_budget=60))
    result = mem.frame("fxtask", "helm canary", top_k=6)
    explanation = result.explain()
    first = explanation.items[0]
    assert first.record_id == goal and first.source == "guaranteed"
    assert next(b for b in first.boosts if b.name == "guaranteed").value == 1.0
    reasons = {o.reason for o in explanation.left_out}
    assert "contradiction" in reasons and "budget" in reasons
    loser = next(o for o in explanation.left_out if o.reason == "contradiction")
    assert loser.record_id in {a, b} and ({a, b} - {loser.record_id}).pop() in loser.detail
    assert explanation.cut_counts()["contradiction"] == 1
    reproduces_ranking(explanation)


def test_explaining_costs_no_round_trip(words, sent):
    mem = memory("fx-3")
    for i in range(10):
        mem.learn(f"{WORDS[i % 8]} note {i}", tags=["ops"])
    result = mem.frame("attention", "helm note", top_k=3)
    sent.clear()
    result.explain().to_dict()
    assert sent == []


def test_a_cached_frame_keeps_its_explanation(words):
    mem = memory("fx-4")
    for i in range(5):
        mem.learn(f"helm note {i}", tags=["ops"])
    mem.register_frame(FrameDefinition("fxcached", ScoringWeights(0.5, 0.2, 0.1, 0.1, 0.1),
                                       cache=CachePolicy(ttl_seconds=60)))
    built = mem.frame("fxcached", "helm", top_k=3)
    again = mem.frame("fxcached", "helm", top_k=3)
    assert again.cached
    first, second = built.explain(), again.explain()
    assert second.items == first.items and second.left_out == first.left_out
    assert "served from the frame cache" in second.notes[-1]


def test_a_result_not_made_by_frame_has_nothing_to_explain():
    with pytest.raises(QueryException, match="no trail"):
        FrameResult(text="", blocks=[], frame_name="x").explain()


AGENTS = itertools.count()


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=st.lists(st.lists(st.sampled_from(WORDS), min_size=1, max_size=5).map(" ".join), min_size=1, max_size=14),
       top_k=st.integers(1, 6), budget=st.integers(5, 120), cap=st.sampled_from([None, 0.005, 0.3]),
       query=st.lists(st.sampled_from(WORDS), min_size=1, max_size=3).map(" ".join))
def test_every_candidate_is_explained_once_and_the_numbers_hold(words, texts, top_k, budget, cap, query):
    mem = memory(f"fx-h{next(AGENTS)}", feedback_cap=cap)
    for text in texts:
        mem.learn(text, tags=["ops"])
    result = mem.frame("attention", query, top_k=top_k, token_budget=budget)
    explanation = result.explain()
    reproduces_ranking(explanation)
    shown = [i.record_id for i in explanation.items]
    assert shown == [b.id for b in result.blocks]
    out = [o.record_id for o in explanation.left_out]
    assert len(set(shown) | set(out)) == len(shown) + len(out)
    assert {o.reason for o in explanation.left_out} <= set(LEFT_OUT_REASONS)
    assert sorted(out_id for out_id in out if out_id in {b.id for b in result.dropped}) == sorted(b.id for b in result.dropped)


def test_a_queryless_frame_explains_with_the_weights_it_used(words):
    mem = memory("fx-self")
    mem.learn("I never deceive the user.", tags=["self/constitutional"])
    mem.learn("I explain my reasoning first.", tags=["self/value"])
    mem.learn("Background jobs use Celery.")
    explanation = mem.frame("self").explain()
    assert explanation.weights["similarity"] == 0.0 and explanation.items
    assert all(i.arms[0].contribution == 0.0 for i in explanation.items)
    reproduces_ranking(explanation)
